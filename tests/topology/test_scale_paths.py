"""What makes million-rank searches fit: chunked evaluation, lazily built permutation
candidates, evaluation in forked workers, one-pass CSV reading. Each gives the same figures
as the plain path or an independent reference."""

import re

import numpy as np
import pytest
from reference_routing import torus_dor_reference

from petacomm.cli import main
from petacomm.topology import metrics
from petacomm.topology.evaluation_pool import evaluate_many
from petacomm.topology.mapping import PermutationCandidate, permutation_mapping
from petacomm.topology.measured import load_matrix_file
from petacomm.topology.network import parse_network
from petacomm.topology.pattern import CommPattern, Phase
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.ranking import candidate_mappings, rank_mappings
from petacomm.topology.routing import parse_routing


def test_chunked_evaluation_matches_message_by_message_routing(monkeypatch):
    # Messages of two sizes in two phases (one repeated): chunks of 7 messages, a size
    # test per chunk, repeat counts; link loads against a walk of every message.
    net = parse_network("torus:4x3:t=2")
    rng = np.random.default_rng(0)
    phases = []
    for name, repeat in (("a", 1), ("b", 3)):
        src, dst = rng.integers(0, 24, 50), rng.integers(0, 24, 50)
        size = np.where(rng.random(50) < 0.5, 1000.0, 64.0) if name == "a" else 512.0
        phases.append(Phase(name, src, dst, size, repeat=repeat))
    pattern = CommPattern(24, phases)
    mapping = permutation_mapping("XTY", net, 24)
    monkeypatch.setattr(metrics, "_CHUNK_MESSAGES", 7)
    routing = parse_routing("dor", net)
    got = metrics.evaluate_mapping(net, routing, pattern, mapping, keep_loads=True)
    ref_bytes, ref_flows = np.zeros(net.num_links), np.zeros(net.num_links)
    for ph in phases:
        sn, dn = mapping.node[ph.src], mapping.node[ph.dst]
        inter = sn != dn
        w = np.stack([ph.nbytes[inter], np.ones(int(inter.sum()))]) * ph.repeat
        loads = torus_dor_reference(net, sn[inter], dn[inter], w, range(2))
        ref_bytes += loads[0]
        ref_flows += loads[1]
    assert np.allclose(got.link_bytes, ref_bytes) and np.allclose(got.link_flows, ref_flows)
    assert got.messages == 50 * 1 + 50 * 3 - sum(
        int((ph.src == ph.dst).sum()) * ph.repeat for ph in phases
    )


def test_permutation_candidates_build_their_arrays_on_demand():
    net = parse_network("torus:4x2x2:t=2")
    lazy = PermutationCandidate("ZTXY", net, 30)
    plain = permutation_mapping("ZTXY", net, 30)
    assert lazy.name == "ZTXY" and lazy.nranks == 30
    assert np.array_equal(lazy.node, plain.node) and np.array_equal(lazy.core, plain.core)
    lazy.release()
    assert lazy._node is None and np.array_equal(lazy.node, plain.node)
    with pytest.raises(ValueError, match="expected each of TXYZ exactly once"):
        PermutationCandidate("TXXY", net, 4)


def test_workers_give_the_same_ranking_as_one_process():
    net = parse_network("torus:4x4:t=2")
    pattern = parse_pattern("grid2d 8x4 periodic box 4KiB")
    routing = parse_routing("adaptive", net)
    cost = metrics.cost_parameters_from_model()
    mappings = candidate_mappings("permutations,block,cyclic", net, pattern)
    one = evaluate_many(net, routing, pattern, mappings, cost, jobs=1)
    two = evaluate_many(net, routing, pattern, mappings, cost, jobs=2)
    assert [m.as_dict() for m in one] == [m.as_dict() for m in two]
    ranked = rank_mappings(net, routing, pattern, mappings, cost, jobs=2)
    assert [r.mapping.name for r in ranked] == [
        r.mapping.name for r in rank_mappings(net, routing, pattern, mappings, cost, jobs=1)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "# written by hand\n# second comment\nsrc,dst,bytes\n0,1,10\n1,0,10\n2,3,5.5\n",
        "rank,peer,nbytes\n0,1,10\n\n1,0,10\n# late comment\n2,3,5.5\n",
        "0,10,0,0\n10,0,0,0\n0,0,0,5.5\n0,0,0,0\n",
    ],
)
def test_one_pass_csv_reader_agrees_with_the_careful_one(tmp_path, text):
    path = tmp_path / "m.csv"
    path.write_text(text)
    fast = load_matrix_file(path)
    # A quote in a comment makes the fast path step aside: the careful reader's result.
    careful_path = tmp_path / "careful.csv"
    careful_path.write_text('# "quoted"\n' + text)
    careful = load_matrix_file(careful_path)
    for a, b in zip(fast.edges(), careful.edges(), strict=True):
        assert np.array_equal(a, b)
    assert fast.nranks == careful.nranks


def _loaded(path):
    """(nranks, edges) of the matrix file, or its error message."""
    try:
        pattern = load_matrix_file(path)
    except ValueError as err:
        return str(err).removeprefix(f"{path}: ")
    return pattern.nranks, [a.tolist() for a in pattern.edges()]


def _mutated_csv(rng) -> str:
    """A small CSV of (src, dst, bytes) rows, or a square matrix, with what people and
    programs put in them: spaces, tabs, CRLF or CR line ends, blank lines, comment lines, a
    missing trailing line break, and now and then a cell too many, too few, empty, holding
    two numbers, or a form feed, vertical tab, CR or Unicode line separator (which numpy
    and ``str.splitlines`` take for spaces or line ends, csv for text)."""
    dense = rng.random() < 0.3
    n = int(rng.integers(2, 5))
    rows = (
        [[str(int(v)) for v in rng.integers(0, 9, n)] for _ in range(n)]
        if dense
        else [["src", "dst", "bytes"]]
        + [[str(int(rng.integers(0, n))), str(int(rng.integers(0, n))), "8"] for _ in range(n)]
    )
    for _ in range(int(rng.integers(0, 3))):
        row = rows[int(rng.integers(1 if not dense else 0, len(rows)))]
        kind = int(rng.integers(0, 6))
        if kind == 5:
            cell = int(rng.integers(0, len(row)))
            row[cell] += str(rng.choice(["\x0b", "\x0c", "\r", "\u2028", "\x0c4"]))
        elif kind == 0:
            row.append("3")
        elif kind == 1 and len(row) > 1:
            row.pop()
        elif kind == 2:
            row[int(rng.integers(0, len(row)))] = ""
        elif kind == 3:
            row[int(rng.integers(0, len(row)))] = "1 2"
        else:
            row[int(rng.integers(0, len(row)))] = " \t7 "
    lines = [",".join(r) for r in rows]
    if rng.random() < 0.3:
        lines.insert(int(rng.integers(1, len(lines) + 1)), " " * int(rng.integers(0, 3)))
    if rng.random() < 0.2:
        lines.insert(int(rng.integers(1, len(lines) + 1)), "# a comment")
    end = str(rng.choice(["\n", "\r\n", "\r"], p=[0.6, 0.25, 0.15]))
    return end.join(lines) + (end if rng.random() < 0.7 else "")


def test_one_pass_csv_reader_reads_or_refuses_what_the_careful_one_does(tmp_path):
    # The one-pass reader once took ``0,1,5,2,3`` then ``7`` as two rows of three, and
    # ``1 2,,3`` as one row: it counted commas and lines only. Now whatever it reads, it
    # reads as the careful reader does, and what that refuses, it leaves to it.
    rng = np.random.default_rng(7)
    fast_path, careful_path = tmp_path / "m.csv", tmp_path / "careful.csv"
    refused = 0
    for _ in range(400):
        text = _mutated_csv(rng)
        fast_path.write_text(text, newline="")
        careful_path.write_text('# "quoted"\n' + text, newline="")
        fast, careful = _loaded(fast_path), _loaded(careful_path)
        if isinstance(careful, str):  # its line numbers count the added comment line
            refused += 1
            assert isinstance(fast, str), (text, fast, careful)
        else:
            assert fast == careful, text
    assert 50 < refused < 350  # both kinds of text were tried


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("src,dst,bytes\n0,1,5,2,3\n7\n", "line 2: expected 3 values like the header, got 5"),
        ("src,dst,bytes\n0,1,5\n1 2,,3\n", "line 3, column 1: expected a number, got '1 2'"),
        ("src,dst,bytes\n0,1,\n1,0,5\n", "line 2, column 3: expected a number, got ''"),
        ("0,1\n1,0,0\n0\n", "line 2: expected 2 values (a square matrix), got 3"),
    ],
)
def test_one_pass_csv_reader_leaves_misshapen_rows_to_the_careful_one(tmp_path, text, error):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{path}: {error}")):
        load_matrix_file(path)


def test_csv_errors_still_name_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("src,dst,bytes\n0,1,10\n1,0,ten\n")
    with pytest.raises(ValueError, match="line 3, column 3: expected a number, got 'ten'"):
        load_matrix_file(path)


def test_jobs_option_is_checked(capsys):
    args = ["map", "--network", "torus:4", "--pattern", "ranks 4; ring 1", "--jobs", "0"]
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    assert "argument --jobs: must be a positive integer, got '0'" in capsys.readouterr().err


def _signal_dispositions():
    import signal

    return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, signal.getsignal(
        signal.SIGINT
    ) is signal.SIG_IGN


def test_evaluation_workers_leave_signals_to_the_command(monkeypatch):
    # The command turns SIGTERM into KeyboardInterrupt (launch.stop_on_sigterm); workers that
    # inherited it printed tracebacks when the pool terminated them, idle, at its end.
    import multiprocessing
    import signal

    from petacomm.launch import stop_on_sigterm

    real = multiprocessing.get_context
    seen = []

    class Recording:
        def __init__(self, context):
            self.context = context

        def Pool(self, workers, initializer=None):  # noqa: N802 (multiprocessing's name)
            seen.append(initializer)
            return self.context.Pool(workers, initializer=initializer)

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Recording(real(method)))
    net = parse_network("torus:4x4:t=2")
    pattern = parse_pattern("grid2d 8x4 periodic box 4KiB")
    mappings = candidate_mappings("permutations", net, pattern)
    before = signal.getsignal(signal.SIGTERM)
    stop_on_sigterm()
    try:
        evaluate_many(net, parse_routing("adaptive", net), pattern, mappings, jobs=2)
        (initializer,) = seen
        with real("fork").Pool(1, initializer=initializer) as pool:
            assert pool.apply(_signal_dispositions) == (True, True)
    finally:
        signal.signal(signal.SIGTERM, before)
