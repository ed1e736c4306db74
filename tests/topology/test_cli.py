"""``petacomm map``: the ranked table, JSON, launcher files and one-line errors."""

import argparse
import json
import os
import stat

import pytest

from cli_harness import python_output
from petacomm.cli import build_parser, main

WORKED = [
    "map",
    "--network",
    "torus:8x16x32",
    "--cores-per-node",
    "4",
    "--pattern",
    "grid2d 128x128 box 1MiB",
    "--candidates",
    "permutations",
]


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def test_worked_example_json_ranks_all_permutations(capsys):
    code, out, err = run(capsys, *WORKED, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "petacomm.map/1" and doc["network"] == "torus:8x16x32:t=4"
    ranking = doc["ranking"]
    assert len(ranking) == 24 and doc["candidates_evaluated"] == 24
    names = [r["mapping"] for r in ranking]
    assert names.index("TZXY") < names.index("TXYZ")
    # Sorted up to rounding: equal mappings may differ in the last bits of fractional sums.
    times = [float(f"{r['predicted_time_s']:.9g}") for r in ranking]
    assert times == sorted(times)
    # Ties on time fall through to max, then average contention.
    for a, b in zip(ranking, ranking[1:], strict=False):
        if f"{a['predicted_time_s']:.9g}" == f"{b['predicted_time_s']:.9g}":
            key_a = (round(a["max_contention_flows"], 6), round(a["avg_contention_flows"], 6))
            key_b = (round(b["max_contention_flows"], 6), round(b["avg_contention_flows"], 6))
            assert key_a <= key_b
    assert ranking[0]["ratio_to_best"] == 1.0 and ranking[-1]["ratio_to_best"] > 1.0
    assert {
        "max_contention_flows",
        "avg_contention_flows",
        "hop_bytes",
        "max_dilation_hops",
        "intra_node_bytes",
        "inter_node_bytes",
        "max_link_bytes",
    } <= set(ranking[0])
    code, out, _ = run(capsys, *WORKED, "--json", "--top", "5")
    assert len(json.loads(out)["ranking"]) == 5


def test_table_has_units_and_writes_the_best(capsys, tmp_path):
    target = tmp_path / "rankfile"
    code, out, err = run(
        capsys, *WORKED, "--top", "3", "--output", str(target), "--format", "rankfile"
    )
    assert code == 0, err
    units = out.splitlines()[3]
    for unit in ("(flows)", "(MiB)", "(hops)", "(ms)", "(MiB*hop)"):
        assert unit in units
    assert "24 candidates evaluated" in out and "wrote" in out
    best = out.splitlines()[4].split()[-1]
    lines = target.read_text().splitlines()
    assert lines[0] == f"# petacomm rankfile v1: mapping {best}" and len(lines) == 16385


@pytest.mark.parametrize("fmt", ["slurm", "cray", "bgp", "csv"])
def test_every_format_from_the_cli(capsys, tmp_path, fmt):
    target = tmp_path / f"map.{fmt}"
    code, _, err = run(
        capsys,
        "map",
        "--network",
        "torus:2x2x2:t=2",
        "--pattern",
        "grid3d 2x2x4 star 1KiB",
        "--candidates",
        "TXYZ,XYZT",
        "--choose",
        "xyzt",
        "--output",
        str(target),
        "--format",
        fmt,
    )
    assert code == 0, err
    text = target.read_text()
    # Cray lists one node per line; the others one rank per line (csv: plus header lines).
    expected = {"slurm": 16, "cray": 9, "bgp": 16, "csv": 18}[fmt]
    assert text.count("\n") == expected


def test_other_networks_and_inputs(capsys, tmp_path):
    code, out, err = run(
        capsys,
        "map",
        "--network",
        "fattree:2;4,4;1,2;1,2",
        "--node",
        "package:2 core:2",
        "--pattern",
        "grid2d 8x8 periodic star 64KiB",
        "--routing",
        "ecmp",
        "--time-budget",
        "2",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert {r["mapping"].split(" ")[0] for r in doc["ranking"]} == {
        "block",
        "cyclic",
        "greedy+swaps",
        "bisection+swaps",
        "multilevel",
    }
    assert "intra_node_bytes_by_level" in doc["ranking"][0]
    matrix = tmp_path / "m.csv"
    matrix.write_text("src,dst,bytes\n0,5,1000\n5,0,1000\n1,2,10\n")
    code, out, err = run(
        capsys,
        "map",
        "--network",
        "dragonfly:3,2,1,1",
        "--matrix",
        str(matrix),
        "--routing",
        "valiant",
        "--candidates",
        "block,cyclic",
        "--rank-by",
        "max-link-bytes",
    )
    assert code == 0, err
    assert "routing valiant" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--network", "tours:8x16x32", "--pattern", "ring 1"],
            "--network: network 'tours:8x16x32': unknown network kind 'tours' (expected torus, "
            "mesh, fattree, dragonfly)",
        ),
        (["--network", "torus:8x0x4", "--pattern", "ring 1"], "expected a positive integer"),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 128x128 box 1MiB"],
            "column 8: expected at most 16 ranks (torus:4x4 offers 16 nodes x 1 cores; use "
            "--cores-per-node or a larger network), got '128x128'",
        ),
        (  # refused where it is written, before the graph is built (that took minutes)
            ["--network", "torus:4x4", "--pattern", "ranks 100000; graph cmb"],
            "column 7: expected at most 16 ranks (torus:4x4 offers 16 nodes x 1 cores;",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1MiX"],
            "--pattern: pattern line 1, column 16: expected a message size",
        ),
        (
            [
                "--network",
                "torus:4x4",
                "--pattern",
                "grid2d 4x4 box 1",
                "--output",
                "x",
                "--format",
                "lsf",
            ],
            "--format: unknown format 'lsf'",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--output", "x"],
            "--format: required with --output",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--routing", "ecmp"],
            "--routing: routing 'ecmp' does not apply to a torus network",
        ),
        (["--network", "torus:4x4"], "give exactly one of --pattern"),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--candidates", "TXYZ"],
            "--candidates: candidates: unknown candidate 'TXYZ'",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--cores-per-node", "0"],
            "--cores-per-node: must be a positive integer, got '0'",
        ),
        (
            [
                "--network",
                "torus:2x2:t=2",
                "--pattern",
                "grid2d 2x4 box 1",
                "--output",
                "x",
                "--format",
                "bgq",
            ],
            "--output: bgq map file: needs a 5-D torus",
        ),
        (
            [
                "--network",
                "torus:4x4",
                "--pattern",
                "grid2d 4x4 box 1",
                "--model",
                "/nonexistent/model.json",
            ],
            "machine model: /nonexistent/model.json not found",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--link-latency", "1e-6"],
            "--link-latency: applies to --time-model flows only",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--time-model", "flows"]
            + ["--link-latency", "-1"],
            "--link-latency: expected seconds >= 0",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--time-model", "flows"]
            + ["--link-latency", "1e300"],  # ran without end
            "--link-latency: expected seconds >= 0 and <= 1 (e.g. 5e-6), got '1e300'",
        ),
        (
            ["--network", "torus:4x4", "--pattern", "grid2d 4x4 box 1", "--time-model", "flows"]
            + ["--routing", "adaptive"],
            "--time-model flows: routing 'adaptive' gives link loads only",
        ),
        (
            ["--network", "torus:8x8x8:t=4", "--pattern", "ranks 2048 alltoall 8B"]
            + ["--routing", "dor", "--time-model", "flows"],
            "--time-model flows: the flow model takes at most 100,000 messages in flight at "
            "once, phase 'main' has 4,192,256 (use --time-model links)",
        ),
        (
            # After a barrier, an all-to-all without one: every block released together.
            ["--network", "torus:4x8x8:t=4", "--routing", "dor", "--time-model", "flows"]
            + [
                "--pattern",
                "ranks 1024; phase a untimed; barrier; phase b nobarrier; alltoall 8B",
            ],  # fmt: skip
            "--time-model flows: the flow model takes at most 100,000 messages in flight at "
            "once, phase 'b' has 1,047,552 (use --time-model links)",
        ),
        (
            # Three ordered all-to-alls of 1024 ranks in a row: 3 x 1,047,552 messages priced
            # as one run (1,024 in flight at a time; two would be taken).
            ["--network", "torus:4x8x8:t=4", "--routing", "dor", "--time-model", "flows"]
            + [
                "--pattern",
                "ranks 1024; phase a; alltoall 8B xor; phase b; alltoall 8B xor; "
                "phase c; alltoall 8B xor",
            ],  # fmt: skip
            "--time-model flows: the flow model takes at most 2,097,152 messages in a run of "
            "ordered phases, the run ending at phase 'c' has 3,142,656 (use --time-model links)",
        ),
    ],
)
def test_invalid_input_gives_one_error_line(capsys, argv, message):
    code, out, err = run(capsys, "map", *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("petacomm map: error: "), err
    assert message in lines[0]


@pytest.mark.parametrize("text", ["ranks 16; ring 1KiB\n", '{"pattern": "ranks 16; ring 1KiB"}'])
def test_a_pattern_file_may_start_with_a_byte_order_mark(capsys, tmp_path, text):
    # Refused at line 1, column 1 ('\ufeffranks'), where --matrix's CSV reader skips it.
    path = tmp_path / "pattern.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    code, out, err = run(capsys, "map", "--network", "torus:4x4", "--pattern-file", str(path))
    assert code == 0, err
    assert "ranks 16" in out


def test_flow_time_model_ranks_by_the_flow_times(capsys):
    # 16 ranks of a 4x4 grid, 1 MB faces, on a 4-node ring with 4 cores per node: under the
    # XYT-style mappings whole grid rows share a node. Worked by hand for TXY (node = row):
    # each node sends its row's 4 faces to the next node and 4 to the previous one; the two
    # directions of a link are separate, so 4 MB cross each link direction in one hop:
    # 2 us + 4 MB / 1 GB/s = 4.002 ms.
    argv = ["map", "--network", "torus:4:t=4", "--pattern", "grid2d 4x4 periodic star 1MB"]
    argv += ["--routing", "dor", "--time-model", "flows", "--link-bandwidth", "1GB"]
    code, out, err = run(capsys, *argv, "--link-latency", "2e-6", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["cost"]["time_model"] == "flows"
    assert doc["cost"]["flow_links"]["latency"] == 2e-6
    by_name = {r["mapping"]: r["predicted_time_s"] for r in doc["ranking"]}
    assert by_name["TX"] == pytest.approx(2e-6 + 4e6 / 1e9)
    times = [r["predicted_time_s"] for r in doc["ranking"]]
    assert times == sorted(times)


def test_every_option_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    map_parser = sub.choices["map"]
    for action in map_parser._actions:
        assert action.help, action.option_strings


def test_benchmark_mode_on_a_small_case(capsys):
    code, out, err = run(
        capsys,
        "map",
        "--benchmark",
        "--network",
        "torus:4x4x4",
        "--cores-per-node",
        "2",
        "--pattern",
        "grid3d 8x4x4 periodic box 1MiB",
    )
    assert code == 0, err
    assert "evaluate one mapping:" in out and "(block," in out and " s " in out
    assert "(24 candidates: permutations;" in out


SMALL_BENCH = [
    "--network",
    "torus:4x4",
    "--cores-per-node",
    "2",
    "--pattern",
    "grid2d 4x8 box 1MiB",
]


def test_bench_map_honours_its_options_and_its_best_is_the_minimum(capsys, tmp_path):
    from petacomm.topology.mapping import permutation_mapping
    from petacomm.topology.metrics import CostParameters, evaluate_mapping
    from petacomm.topology.network import parse_network
    from petacomm.topology.pattern_language import parse_pattern
    from petacomm.topology.routing import parse_routing

    out_file = tmp_path / "bench.json"
    code, out, err = run(
        capsys,
        "bench",
        "map",
        *SMALL_BENCH,
        "--candidates",
        "TXY,XYT,YXT",
        "--top",
        "2",
        "--json",
        str(out_file),
        "--link-bandwidth",
        "1GB",
    )
    assert code == 0, err
    doc = json.loads(out_file.read_text())
    assert doc["schema"] == "petacomm.bench-map/1" and doc["candidates"] == 3
    times = {r["mapping"]: r["predicted_time_s"] for r in doc["ranking"]}
    assert set(times) == {"TXY", "XYT", "YXT"}
    # The figures are the engine's own for these mappings, and the headline is their minimum.
    net = parse_network("torus:4x4:t=2")
    pattern = parse_pattern("grid2d 4x8 box 1MiB")
    cost = CostParameters(1.5e-6, 1e-10, 1e-9)  # built-in model, 1 GB/s links
    for name in ("TXY", "YXT"):
        m = evaluate_mapping(
            net, parse_routing(None, net), pattern, permutation_mapping(name, net, 32), cost
        )
        assert times[name] == pytest.approx(m.predicted_time_s, rel=1e-9)
    best = min(times, key=times.get)
    assert doc["best"] == best
    assert f"best by time: {best} ({times[best] * 1e3:.3f} ms)" in out
    table = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(table) == 2  # --top 2
    assert all(len(line) <= 100 for line in out.splitlines() if not line.startswith("case"))


def test_map_benchmark_prints_json_when_asked(capsys):
    code, out, err = run(
        capsys, "map", "--benchmark", *SMALL_BENCH, "--candidates", "TXY", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["candidates"] == 1 and doc["best"] == "TXY" and doc["search_s"] > 0


def test_permutations_are_sampled_beyond_the_bound_and_the_output_says_so(capsys):
    # A 7-D torus has 8! = 40,320 permutation strings: the default evaluates 120 of them,
    # the two launcher defaults first, and says so.
    argv = ["map", "--network", "torus:2x2x2x2x2x2x2", "--pattern", "ranks 8; ring 1KiB"]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["candidates_evaluated"] == 120
    names = {r["mapping"] for r in doc["ranking"]}
    assert {"TABCDEFG", "ABCDEFGT"} <= names
    assert doc["notes"] == [
        "permutations: 120 of the 40,320 permutation strings evaluated (TABCDEFG, ABCDEFGT "
        "and a sample drawn with --seed; --max-candidates sets how many)"
    ]
    code, out, _ = run(capsys, *argv, "--max-candidates", "5", "--seed", "3", "--json")
    again = json.loads(out)
    assert again["candidates_evaluated"] == 5 and "5 of the 40,320" in again["notes"][0]
    # A 3-D torus: all 24 fit, no note.
    code, out, _ = run(capsys, "map", "--network", "torus:2x2x2", "--pattern", "ranks 8; ring 1")
    assert "24 candidates evaluated" in out and "note:" not in out


def test_launcher_file_written_through_a_symlink_with_the_umask(capsys, tmp_path):
    target = tmp_path / "real.rankfile"
    link = tmp_path / "link.rankfile"
    link.symlink_to(target)
    previous = os.umask(0o027)
    try:
        code, _, err = run(
            capsys, *WORKED[:7], "--candidates", "TZXY", "--output", str(link), "--format", "csv"
        )
    finally:
        os.umask(previous)
    assert code == 0, err
    assert link.is_symlink() and target.read_text().startswith("# petacomm mapping csv v1")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_light_option_lists_equal_the_library_ones():
    # The command keeps these lists itself so that its --help loads no numpy.
    from petacomm.topology import arguments, cli, launcher_files, ranking

    assert cli.FORMATS == launcher_files.FORMATS
    assert tuple(ranking.RANK_KEYS) == arguments.RANK_KEYS


def test_map_help_imports_no_numpy_and_lists_every_network_kind():
    # The help lists the registries of network.py and routing.py, which name numpy lazily.

    code = (
        "import sys\n"
        "from petacomm.cli import main\n"
        "try:\n    main(['map', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('numpy loaded:', 'numpy' in sys.modules)\n"
    )
    out = python_output(code)
    assert out.rstrip().endswith("numpy loaded: False")
    text = " ".join(out.split())  # argparse wraps the help
    for example in (
        "torus:8x16x32",
        "fattree:2;4,4;1,2;1,2",
        "dragonfly:9,4,2,2",
        "dmodk (fattree)",
    ):
        assert example in text


def test_lazy_module_imports_on_first_use():
    from petacomm.lazy_module import LazyModule

    lazy = LazyModule("fractions")
    assert "not imported yet" in repr(lazy)
    assert lazy.Fraction(1, 3) + lazy.Fraction(1, 6) == lazy.Fraction(1, 2)
    assert "imported" in repr(lazy) and "not" not in repr(lazy)


def test_deferred_numpy_subpackages_load_on_first_use():
    # scipy's import looks up every numpy attribute; deferred, f2py and numpy.testing are
    # bound but not run, and each still works when used.

    code = (
        "import sys\n"
        "from petacomm.lazy_module import defer_unused_numpy_subpackages\n"
        "defer_unused_numpy_subpackages()\n"
        "defer_unused_numpy_subpackages()\n"
        "import scipy.sparse, numpy as np\n"
        "print('finders', sum(type(f).__name__ == '_DeferredModules' for f in sys.meta_path))\n"
        "run = ('numpy.f2py.crackfortran', 'numpy.testing._private.utils',\n"
        "       'numpy.polynomial.polynomial')\n"
        "print('run after scipy', sorted(m for m in run if m in sys.modules))\n"
        "from numpy.testing import assert_array_equal\n"
        "assert_array_equal(np.arange(3), [0, 1, 2])\n"
        "import numpy.f2py\n"
        "print('f2py', callable(numpy.f2py.run_main), 'numpy.f2py.crackfortran' in sys.modules)\n"
        "print('ma', np.ma.masked_array([1, 2, 4], mask=[0, 1, 0]).sum())\n"
        "print('poly', np.polynomial.Polynomial([1, 2])(3))\n"
    )
    assert python_output(code).split("\n")[:-1] == [
        "finders 1",
        "run after scipy []",
        "f2py True True",
        "ma 5",
        "poly 7.0",
    ]


def test_map_command_imports_no_more_than_it_uses(tmp_path):
    # The command's own process: an optimiser candidate imports scipy.sparse, and with it
    # numpy.f2py's 137 regular expressions unless the command deferred it; evaluating in
    # this process needs no multiprocessing.
    import subprocess
    import sys

    from mpi_harness import mpi_test_env

    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "petacomm.cli", "map", "--network",
         "torus:2x2x2", "--pattern", "ring 1KiB", "--candidates", "greedy", "-q"],
        capture_output=True, text=True, env=mpi_test_env(None), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "scipy.sparse" in imported
    assert "numpy.f2py.crackfortran" not in imported  # bound by scipy 1.17's look-up, not run
    assert "multiprocessing" not in imported


def test_deferred_numpy_subpackages_run_once_for_threads_using_them_together():
    # Two threads using a deferred module for the first time at once: the second waits for
    # the whole module (with Python 3.11's LazyLoader it found np.ma without masked_array).
    code = (
        "import threading\n"
        "from petacomm.lazy_module import defer_unused_numpy_subpackages\n"
        "defer_unused_numpy_subpackages()\n"
        "import numpy.ma, numpy.polynomial\n"
        "errors = []\n"
        "for module, names in ((numpy.ma, ('masked_array', 'MaskedArray')),\n"
        "                      (numpy.polynomial, ('Polynomial', 'Chebyshev'))):\n"
        "    barrier = threading.Barrier(2)\n"
        "    def use(name, module=module, barrier=barrier):\n"
        "        barrier.wait()\n"
        "        try:\n"
        "            getattr(module, name)\n"
        "        except AttributeError as err:\n"
        "            errors.append(str(err))\n"
        "    threads = [threading.Thread(target=use, args=(name,)) for name in names]\n"
        "    for t in threads:\n"
        "        t.start()\n"
        "    for t in threads:\n"
        "        t.join()\n"
        "print(type(numpy.ma).__name__, type(numpy.polynomial).__name__, errors)\n"
    )
    assert python_output(code).strip() == "module module []"
