"""petacomm-graph: a traffic matrix exchanged as one phase at 1, 2, 3, 4, 7 and 8 ranks (the
app checks every byte of every received message and fails otherwise); its counts against a
plain reading of the same file (repeated pairs summed, rows from a rank to itself skipped);
bad input refused on every rank, naming the option and the line, with an earlier JSON kept."""

from __future__ import annotations

import json
import random

import pytest
from sweep_apps_harness import expect_app_error, run_app

GRAPH = "petacomm-graph"
WARMUP, ITERATIONS = 1, 3


def write_matrix(path, ranks: int, seed: int) -> list[tuple[int, int, float]]:
    """A random matrix with what the reader must handle: a comment, the header, a repeated
    pair, a row from a rank to itself, a zero-byte message, fractional bytes."""
    rng = random.Random(seed)
    rows = []
    for _ in range(3 * ranks):
        rows.append((rng.randrange(ranks), rng.randrange(ranks), rng.choice([1, 100, 4096, 70000])))
    rows += [(0, ranks - 1, 10.4), (0, ranks - 1, 5), (ranks - 1, ranks - 1, 8), (0, ranks // 2, 0)]
    lines = ["# a test matrix", "src,dst,bytes", *(f"{s}, {d},{b}" for s, d, b in rows), ""]
    path.write_text("\n".join(lines))
    return rows


def plain_counts(rows) -> tuple[int, int, int]:
    """Messages (distinct pairs between two ranks), bytes and self rows, counted plainly."""
    pairs = {(s, d) for s, d, _ in rows if s != d}
    total = sum(round(b) for s, d, b in rows if s != d)
    return len(pairs), total, sum(1 for s, d, _ in rows if s == d)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 7, 8])
def test_every_message_arrives_and_is_counted(ranks, tmp_path):
    matrix = tmp_path / "m.csv"
    rows = write_matrix(matrix, ranks, seed=ranks)
    out = tmp_path / "graph.json"
    done = run_app(GRAPH, ranks, "--matrix", matrix, "-x", WARMUP, "-i", ITERATIONS, "--json", out)
    doc = json.loads(out.read_text())
    messages, total, selfs = plain_counts(rows)
    assert doc["ranks"] == ranks and doc["matrix_ranks"] == ranks
    assert doc["messages_per_exchange"] == messages
    assert doc["bytes_per_exchange"] == total
    assert doc["self_rows_skipped"] == selfs
    assert doc["verified"] is True
    assert doc["messages_verified"] == messages * (WARMUP + ITERATIONS)
    assert 0 <= doc["min_us"] <= doc["avg_us"] <= doc["max_us"]
    # Open MPI's clock is not global: no span from the last start.
    assert doc["clock_is_global"] is False and doc["span_us"] is None
    assert f"{messages} messages, {total} B per exchange" in done.stdout


@pytest.mark.mpi
@pytest.mark.parametrize(
    "text, message",
    [
        ("0,1\n", "line 1: expected SRC,DST,BYTES"),
        ("src,dst,bytes\n0,x,8\n", "line 2: DST: expected a rank >= 0, got 'x'"),
        ("0,-1,8\n", "line 1: DST: expected a rank >= 0"),
        ("# two ranks only\n0,3,8\n", "line 2: DST 3 is not a rank of this run of 2 ranks"),
        ("0,1,-5\n", "line 1: BYTES: expected a number >= 0, got '-5'"),
        ("0,1,nan\n", "BYTES: expected a number >= 0"),
        ("0,1,8\nsrc,dst,bytes\n", "line 2: SRC: expected a rank"),
        ("0,1,3000000000\n", "exceed one MPI message's int count"),
        # Rounded to a long long, 1e19 wrapped to a negative sum that passed the check.
        ("0,1,1e19\n1,0,5\n", "line 1: BYTES: 1e19 bytes exceed one MPI message's int count"),
        ("# nothing\n\n", "holds no SRC,DST,BYTES row"),
    ],
)
def test_bad_matrices_are_refused_naming_the_line(text, message, tmp_path):
    matrix = tmp_path / "bad.csv"
    matrix.write_text(text)
    out = tmp_path / "graph.json"
    out.write_text("earlier results")
    done = run_app(GRAPH, 2, "--matrix", matrix, "--json", out, check=False)
    expect_app_error(done, GRAPH, "--matrix", message)
    assert out.read_text() == "earlier results"


@pytest.mark.mpi
@pytest.mark.parametrize(
    "args, texts",
    [
        ([], ("--matrix: required",)),
        (["--matrix", "/nonexistent/m.csv"], ("--matrix: cannot read", "/nonexistent/m.csv")),
        (["--matrix", "M", "-i", "0"], ("-i",)),
        (["--matrix", "M", "--json", "/nonexistent/dir/out.json"], ("--json",)),
    ],
)
def test_bad_options_are_refused_on_every_rank(args, texts, tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("0,1,8\n")
    args = [str(matrix) if a == "M" else a for a in args]
    done = run_app(GRAPH, 3, *args, check=False)
    expect_app_error(done, GRAPH, *texts)
