"""``petacomm simulate`` end to end: SMPI runs whose simulated times are checked against an
alpha-beta computation by hand, and the command's refusals of bad input.

The hand computations use the star of ``fattree:1;4;1;1`` (four nodes on one switch, one
rank per node), under the exact network model: a message of n bytes between two nodes
crosses two links and takes 2 L + n / B, and messages of one round use disjoint link
directions. The transpose's execution is one MPI_Allreduce of three uint64 (every
collective call's argument agreement; pinned to recursive doubling) and then the
strategy's exchange rounds of one block each.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from cli_harness import expect_clean_error, run_cli
from petacomm.errors import PetacommError
from prerequisites import require_program

LATENCY_S = 10e-6
BANDWIDTH_B_S = 1e9
N = 768  # a 768 x 768 float64 array: every rank count below divides it
PLATFORM = [
    "--network",
    "fattree:1;4;1;1",
    "--cores-per-node",
    "1",
    "--link-bandwidth",
    f"{BANDWIDTH_B_S:.0f}B",
    "--link-latency",
    f"{LATENCY_S}",
    "--smpi-option",
    "smpi/allreduce:rdb",
    "--smpi-option",
    "smpi/alltoall:pair",
    "--smpi-option",
    "smpi/barrier:ompi_basic_linear",
]


def message_s(nbytes: float) -> float:
    return 2 * LATENCY_S + nbytes / BANDWIDTH_B_S


def expected_transpose_s(ranks: int) -> float:
    """The time from the last rank's start to the last rank's end (the drivers' measure),
    worked out by hand per rank count. The barrier before each timed execution is linear:
    rank 0 hears from every rank, then releases ranks 1..p-1 together, one message (M) after
    it left itself. The execution is an allreduce of 24 B by recursive doubling, then p - 1
    block rounds (p on odd p, each rank sitting one out); X = one block message.

    * 2 ranks: rank 0's allreduce message waits at rank 1; rank 1's reaches rank 0 after M:
      M + X.
    * 4 ranks: rounds with partners r^1 (done at M, as for 2 ranks), then r^2: 2M + 3X.
    * 3 ranks: recursive doubling folds one rank into a partner, exchanges between two and
      unfolds (three messages in a row, some hidden behind the round-robin's byes; which
      rank folds is SMPI's choice): between M + 3X and 3M + 3X. Returns the range.
    """
    if ranks == 1:
        return 0.0, 0.0
    block = (N // ranks) ** 2 * 8
    if ranks == 3:
        return message_s(24) + 3 * message_s(block), 3 * message_s(24) + 3 * message_s(block)
    agreement = {2: 1, 4: 2}[ranks] * message_s(24)
    exact = agreement + (ranks - 1) * message_s(block)
    return exact, exact


@pytest.fixture(scope="module", autouse=True)
def smpi():
    require_program("smpirun", "SimGrid SMPI: apt-get install libsimgrid-dev simgrid")


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_transpose_times_match_alpha_beta(tmp_path, ranks):
    variants = "pairwise,xor,alltoall" if ranks == 4 else "pairwise"
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate",
        "transpose",
        *PLATFORM,
        "--ranks",
        str(ranks),
        "--size",
        f"{N}x{N}",
        "--variants",
        variants,
        "--reps",
        "1",
        "--json",
        out,
        "--warn-after",
        "1e-9",
        timeout=600,
    )
    assert done.returncode == 0, done.describe()
    # The estimate is announced before the first simulation starts.
    assert 0 <= done.stderr.find("warning: ") < done.stderr.find("run 1/"), done.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "petacomm.simulate/1" and doc["complete"] is True
    assert doc["platform"]["network"] == "fattree:1;4;1;1"
    assert doc["platform"]["link_latency_s"] == LATENCY_S
    records = doc["runs"]
    assert [r["variant"] for r in records] == variants.split(",")
    low, high = expected_transpose_s(ranks)
    for r in records:
        assert (r["family"], r["mapping"], r["ranks"]) == ("transpose", "block", ranks)
        assert r["chosen"] == r["variant"] and r["wall_time_s"] > 0 and r["cpu_time_s"] > 0
        # SMPI adds a few ns per call; a lost block round costs >= 25 %, a unit slip 1000x.
        assert low * 0.995 - 1e-7 <= r["simulated_time_s"] <= high * 1.005 + 1e-7, r
    # The table says the same, with units.
    row = next(line for line in done.stdout.splitlines() if " pairwise " in line)
    shown = float(row.split(" ms")[0].split()[-1]) * 1e-3
    assert low * 0.995 - 1e-6 <= shown <= high * 1.005 + 1e-6, row


@pytest.mark.mpi
def test_mapping_moves_ranks_between_hosts(tmp_path):
    # Two ranks per node on a 2-node star: block keeps a pair on one node (loopback, no
    # network) while cyclic puts the pair on two nodes. 2 ranks: one exchange round.
    out = tmp_path / "runs.json"
    argv = [*PLATFORM, "--ranks", "2", "--size", f"{N}x{N}", "--variants", "pairwise"]
    argv[argv.index("fattree:1;4;1;1")] = "fattree:1;2;1;1"
    argv[argv.index("--cores-per-node") + 1] = "2"
    done = run_cli(
        "simulate",
        "transpose",
        *argv,
        "--loopback-bandwidth",
        "4GB",
        "--loopback-latency",
        "1e-6",
        "--mapping",
        "block,cyclic",
        "--reps",
        "1",
        "--json",
        out,
        timeout=600,
    )
    assert done.returncode == 0, done.describe()
    by_mapping = {r["mapping"]: r["simulated_time_s"] for r in json.loads(out.read_text())["runs"]}
    block = (N // 2) ** 2 * 8
    # 2 ranks: one allreduce message of 24 B, then one block message (see above); inside a
    # node each crosses the loopback link once.
    loopback = (1e-6 + 24 / 4e9) + (1e-6 + block / 4e9)
    assert by_mapping["block"] == pytest.approx(loopback, rel=0.005)
    assert by_mapping["cyclic"] == pytest.approx(message_s(24) + message_s(block), rel=0.005)


@pytest.mark.mpi
def test_a_relative_keep_directory_holds_the_files(tmp_path):
    # smpirun runs in another directory: a relative --keep named no platform file there
    # ("the file 'kept/platform.xml' does not exist"), whatever the run.
    done = run_cli(
        "simulate", "halo", "-q", "--ranks", "4", "--keep", "kept", cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.describe()
    assert (tmp_path / "kept" / "platform.xml").is_file()


@pytest.mark.mpi
def test_flow_model_predicts_the_simulated_halo(tmp_path):
    # A 3-D box halo (26 neighbours, 256 KiB faces) of 32 ranks on a 4x4 torus, 2 per node:
    # routes of 1-4 hops share links, loopback faces stay inside a node. SimGrid is the
    # reference; the link-load model is off by up to 1.0 % here (busiest link only).
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate",
        "halo",
        "--network",
        "torus:4x4",
        "--cores-per-node",
        "2",
        "--ranks",
        "32",
        "--size",
        "3:box:256KiB",
        "--mapping",
        "permutations",
        "--predict",
        "--reps",
        "2",
        "--json",
        out,
        timeout=600,
    )
    assert done.returncode == 0, done.describe()
    doc = json.loads(out.read_text())
    assert doc["agreement"]["time_model"] == "max-min flows"
    times = {r["mapping"]: r["simulated_time_s"] for r in doc["runs"]}
    assert len(times) == 6 and max(times.values()) > 2 * min(times.values())
    for r in doc["runs"]:
        assert r["predicted_time_s"] == pytest.approx(r["simulated_time_s"], rel=0.002), r
    (group,) = doc["agreement"]["groups"]
    assert group["spearman"] == pytest.approx(1.0) and group["top_choice_gap"] == 0


@pytest.mark.mpi
def test_mapmaker_iterations_reduce_right_under_smpi(tmp_path):
    # nside 8: 768 pixels, all observed by 20,000 samples x 4 detectors. The map-maker counts
    # a pixel at the rank its plan's MIN reduction of rank numbers names: a wrong reduction
    # loses pixels (SMPI 3.32's first persistent send of a derived datatype sent zeros, and
    # owner/directory counted 555 of 768 at 3 ranks). The dense allreduce moves
    # 2 (p - 1) / p of the 768 x 3 float64 map per execution (reduce-scatter + allgather).
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate",
        "mapmaker",
        "--network",
        "torus:2x2",
        "--ranks",
        "1,3,4",
        "--size",
        "8:20000",
        "--variants",
        "dense-allreduce,owner,directory",
        "--reps",
        "2",
        "--json",
        out,
        timeout=600,
    )
    assert done.returncode == 0, done.describe()
    runs = json.loads(out.read_text())["runs"]
    assert [(r["ranks"], r["variant"]) for r in runs] == [
        (p, v) for p in (1, 3, 4) for v in ("dense-allreduce", "owner", "directory")
    ]
    for r in runs:
        assert r["chosen"] == r["variant"] and r["pixels_observed"] == 768, r
        if r["variant"] == "dense-allreduce":
            p = r["ranks"]
            assert r["bytes_per_execute_max"] == 2 * (p - 1) * 768 * 3 * 8 // p, r
        assert (r["simulated_time_s"] > 1e-7) == (r["ranks"] > 1), r


@pytest.mark.mpi
def test_send_windows_end_under_smpi(tmp_path):
    # SMPI 3.32's MPI_Ibarrier lets ranks leave before all have entered: with windowed
    # sends, NBX discovery then lost a partner and the 8-rank owner:w2 run never ended (the
    # dissemination barrier under PETACOMM_SMPI fixed it; at the preset's default size
    # Debian's SimGrid hangs too). A hang shows as the timeout.
    out = tmp_path / "runs.json"
    variants = "owner,owner:w2,directory:w1,range:w1,auto:w3"
    done = run_cli(
        "simulate",
        "sparse-reduce",
        "--ranks",
        "3,8",
        "--variants",
        variants,
        "--timeout",
        "120",
        "--json",
        out,
        timeout=900,
    )
    assert done.returncode == 0, done.describe()
    runs = json.loads(out.read_text())["runs"]
    assert [(r["ranks"], r["variant"]) for r in runs] == [
        (p, v) for p in (3, 8) for v in variants.split(",")
    ]
    for r in runs:
        if r["variant"] != "auto:w3":
            assert r["chosen"] == r["variant"].split(":")[0], r
        assert r["simulated_time_s"] > 0, r


def test_mapmaker_size_is_checked():
    from petacomm.sim.presets import PRESETS

    mapmaker = PRESETS["mapmaker"]
    assert mapmaker.parse_size("32:200000") == {"nside": 32, "samples": 200000}
    for bad in ("32", "33:1000", "0:5", "32:x", "32:-1"):
        with pytest.raises(ValueError, match="NSIDE"):
            mapmaker.parse_size(bad)


# ---- refusals ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, names",
    [
        (["--ranks", "0"], ("--ranks", "'0'")),
        (["--ranks", "8,x"], ("--ranks", "'x'")),
        (["--ranks", "99999"], ("--ranks", "99999", "slots")),
        (["--network", "mesh:4x4"], ("--network", "wraps around")),
        (["--network", "torus:4xq"], ("--network", "torus:4xq")),
        (["--size", "12"], ("--size", "'12'")),
        (["--mapping", "TXQ"], ("--mapping", "TXQ")),
        (["--link-bandwidth", "-5"], ("--link-bandwidth",)),
        (["--link-latency", "abc"], ("--link-latency", "abc")),
        # 1e300 s reached SimGrid and the predictions; no link takes a second.
        (["--link-latency", "1e300"], ("--link-latency", "1e300", "<= 1")),
        (["--loopback-latency", "2"], ("--loopback-latency", "'2'", "<= 1")),
        (["--smpi-option", "nocolon"], ("--smpi-option", "nocolon")),
        (["--mapping", "block", "--rankfile", "x"], ("--rankfile",)),
        (["--variants", "xor,,alltoall"], ("--variants",)),
        (["--variants", "xor,xor"], ("--variants", "xor is listed twice")),  # ran twice
        # An empty value is refused, not taken for the default.
        (["--size", ""], ("--size", "''")),
        (["--ranks", ""], ("--ranks", "''")),
        (["--variants", ""], ("--variants", "''")),
        # the program failed once simulated: "expected one 'TRANSPOSESMPI' result line, got 0"
        (["--variants", "xor,ring"], ("--variants", "does not take 'ring'", "pairwise")),
        # reached the program, whose atoi read garbage; and a 10^22-element array was simulated
        (["--reps", "1000000"], ("--reps", "at most 999999")),  # the map-maker adds a warm-up
        (["--size", "99999999999x99999999999"], ("--size", "GiB, more than this machine's")),
        (["--size", "64xq"], ("--size", "expected N0xN1, got '64xq'")),
        # subprocess's wait overflowed after the simulation: an OverflowError traceback
        (["--timeout", "1e308"], ("--timeout", "1e308", "<= 1e+09")),
        # mkdir's FileExistsError traceback (after the build); an empty name was ignored
        (["--keep", "/proc/version"], ("--keep", "not a directory")),
        (["--keep", ""], ("--keep", "empty")),
        # subnormal: SimGrid aborted (exit code 134); an empty value was the machine's
        (["--link-bandwidth", "1e-320"], ("--link-bandwidth", "1e-320", "> 0")),
        (["--loopback-latency", "1e-320"], ("--loopback-latency", "1e-320")),
        (["--link-bandwidth", ""], ("--link-bandwidth", "''")),
        (["--loopback-latency", ""], ("--loopback-latency", "''")),
    ],
)
def test_bad_arguments_are_named(args, names):
    expect_clean_error("simulate", "transpose", *args, names=names)


@pytest.mark.parametrize(
    ("preset", "variant", "expected"),
    [
        ("sparse-reduce", "owner:w2x", "NAME:wN"),
        ("sparse-reduce", "ring:w2", "'ring:w2'"),
        ("mapmaker", "owner:w2", "'owner:w2'"),  # the map-maker takes no send window
        ("halo", "nosuch", "sendrecv, nonblocking, persistent)"),
        # not under SMPI: SimGrid 3.32 lacks the neighbourhood collectives (the run aborted),
        # and the SMPI builds have no node family (the programs refused "node")
        ("halo", "neighbor-graph", "does not take 'neighbor-graph'"),
        ("halo", "node", "does not take 'node'"),
        ("sweep3d", "node", "blocking, nonblocking)"),
        ("graph", "blocking", "nonblocking"),
        # the transpose driver gives no mask, which partial needs
        ("transpose", "partial", "does not take 'partial'"),
    ],
)
def test_a_variant_the_program_does_not_take_is_refused(preset, variant, expected):
    """Each failed only once simulated, after the build (the halo, sweep3d and map-maker
    programs' usage text and SMPI's command line; for the others, no result line). The
    command's refusal before the build: test_bad_arguments_are_named ('xor,ring')."""
    from petacomm.sim.presets import PRESETS, check_variant

    with pytest.raises(PetacommError, match=re.escape(expected)) as refused:
        check_variant(PRESETS[preset], variant)
    assert str(refused.value).startswith("--variants: ")
    # only the sparse reduction's program takes a send window
    assert ("NAME:wN" in str(refused.value)) == (preset == "sparse-reduce")


@pytest.mark.parametrize(
    ("preset", "size", "expected"),
    [
        # petacomm-mapmaker's bounds, found only once simulated
        ("mapmaker", "2097152:1000", "NSIDE: at most 1048576"),
        ("mapmaker", f"32:{2**40 + 1}", "SAMPLES: at most 1099511627776"),
        ("sparse-reduce", "2097152:1000", "NSIDE: at most 1048576"),
    ],
)
def test_a_size_the_program_cannot_take_is_refused(preset, size, expected):
    from petacomm.sim.presets import PRESETS

    with pytest.raises(ValueError, match=expected):
        PRESETS[preset].parse_size(size)


def test_a_size_too_large_for_a_rank_count_is_refused_before_any_build():
    # the key generator's bound, found only while writing the keys, after the build: a
    # traceback
    expect_clean_error(
        "simulate", "sparse-reduce", "--ranks", "64", "--size", "64:99999999999999",
        names=("--size", "total_samples: at most 68719476736"),
    )  # fmt: skip


def test_every_presets_own_variants_are_taken():
    from petacomm.sim.presets import PRESETS, check_variant

    for preset in PRESETS.values():
        for variant in preset.variants:
            check_variant(preset, variant)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (1e19, "1e+19 bytes from rank 0 to 1 exceed one MPI message's int count"),
        (3e9, "3e+09 bytes from rank 0 to 1 exceed one MPI message's int count"),
        (0.0, "on 8 ranks: no bytes between two ranks"),
    ],
)
def test_graph_matrix_petacomm_graph_cannot_send_is_refused_before_simgrid(
    tmp_path, entry, message
):
    # 1e19 B per message was rounded to a long long, wrapped, and simulated as 0 B.
    matrix = tmp_path / "m.npy"
    np.save(matrix, np.roll(np.eye(8), 1, axis=1) * entry)
    expect_clean_error(
        "simulate", "graph", "--network", "torus:2x2:t=2", "--ranks", "8", "--size", matrix,
        names=("--size", message), inputs=[matrix],
    )  # fmt: skip


def test_bad_rankfile_is_named(tmp_path):
    rankfile = tmp_path / "map.rankfile"
    rankfile.write_text("rank 0=node0 slot=0\nrank 0=node1 slot=0\n")
    expect_clean_error(
        "simulate",
        "transpose",
        "--rankfile",
        rankfile,
        names=("--rankfile", "rank 0 placed twice"),
        inputs=[rankfile],
    )


def test_missing_smpi_says_what_to_install(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    done = expect_clean_error(
        "simulate", "transpose", "--ranks", "4", env={"PATH": str(empty)}, names="SimGrid SMPI"
    )
    assert "apt-get install libsimgrid-dev" in done.stderr
    assert "smpirun" in done.stderr


def test_simgrid_prefix_without_smpi_is_named(tmp_path):
    (tmp_path / "bin").mkdir()
    done = expect_clean_error(
        "simulate", "transpose", "--ranks", "2", "--simgrid", tmp_path, names=("--simgrid",)
    )
    assert "smpirun" in done.stderr and "build-simgrid.sh" in done.stderr


@pytest.mark.mpi
def test_simgrid_prefix_runs_its_own_smpirun(tmp_path):
    # A SimGrid "installed" in a prefix: the system's compilers, and an smpirun that leaves
    # a mark and hands over to the system's. The simulation must go through the prefix's
    # smpirun, with the prefix's lib/ on the library path, and time as on PATH.
    import os
    import shutil

    prefix = tmp_path / "simgrid"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    for name in ("smpicc", "smpicxx"):
        (prefix / "bin" / name).symlink_to(shutil.which(name))
    mark = tmp_path / "mark"
    smpirun = prefix / "bin" / "smpirun"
    smpirun.write_text(
        f'#!/bin/sh\necho "$LD_LIBRARY_PATH" > {mark}\nexec {shutil.which("smpirun")} "$@"\n'
    )
    smpirun.chmod(0o755)
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate",
        "transpose",
        *PLATFORM,
        "--ranks",
        "3",
        "--size",
        f"{N}x{N}",
        "--variants",
        "pairwise",
        "--simgrid",
        prefix,
        "--json",
        out,
        timeout=600,
    )
    assert done.returncode == 0, done.describe()
    doc = json.loads(out.read_text())
    assert doc["platform"]["smpirun"] == str(smpirun.resolve())
    assert str(prefix.resolve() / "lib") in mark.read_text().strip().split(os.pathsep)
    low, high = expected_transpose_s(3)
    assert low * 0.995 - 1e-7 <= doc["runs"][0]["simulated_time_s"] <= high * 1.005 + 1e-7


@pytest.mark.parametrize(
    "preset_name, variant, size, simgrid, ranks, measured_s",
    # Wall seconds of `petacomm simulate PRESET --variants VARIANT --ranks N [--size SIZE]`
    # measured on the 2-core development machine (docs/simulate.md and petacomm.sim.cli).
    [
        ("sparse-reduce", "owner", None, "system", 128, 33.1),
        ("sparse-reduce", "owner", None, "system", 256, 536.5),
        ("sparse-reduce", "owner", None, "activity sets", 128, 10.8),
        ("sparse-reduce", "owner", None, "activity sets", 256, 58.6),
        ("sparse-reduce", "owner", None, "activity sets", 64, 1.2),
        ("sparse-reduce", "owner", None, "activity sets", 512, 192.9),
        ("sparse-reduce", "directory", None, "activity sets", 32, 0.38),
        ("sparse-reduce", "directory", None, "activity sets", 64, 2.4),
        ("sparse-reduce", "directory", None, "activity sets", 128, 180.4),
        ("sparse-reduce", "auto", "512:4194304", "activity sets", 32, 1.5),
        ("sparse-reduce", "auto", "512:4194304", "activity sets", 64, 5.1),
        ("sparse-reduce", "auto", "512:4194304", "activity sets", 128, 240.1),
        ("sparse-reduce", "owner", "512:4194304", "activity sets", 64, 4.9),
        ("sparse-reduce", "directory", "512:4194304", "activity sets", 64, 3.4),
        ("sparse-reduce", "auto:w8", "512:4194304", "activity sets", 64, 2.8),
        ("sparse-reduce", "auto:w32", "512:4194304", "activity sets", 64, 3.9),
        ("sparse-reduce", "directory:w8", "512:4194304", "activity sets", 64, 2.6),
        ("sparse-reduce", "auto:w16", "512:4194304", "activity sets", 128, 12.0),
        ("sparse-reduce", "auto:w32", "512:4194304", "activity sets", 128, 33.7),
        ("sparse-reduce", "auto:w16", "512:4194304", "activity sets", 256, 95.4),
        ("sparse-reduce", "auto:w16", "512:4194304", "activity sets", 1024, 438.8),
        ("sparse-reduce", "auto:w4", "512:4194304", "activity sets", 1024, 458.5),
        ("sparse-reduce", "auto:w16", "512:4194304", "activity sets", 4096, 2111.5),
        ("sparse-reduce", "allgather", "512:4194304", "activity sets", 32, 4.9),
        ("sparse-reduce", "allgather", "512:4194304", "activity sets", 64, 15.8),
        ("sparse-reduce", "allgather", "512:4194304", "activity sets", 128, 130.3),
        ("sparse-reduce", "butterfly", "512:4194304", "activity sets", 256, 3.3),
        ("sparse-reduce", "butterfly", "512:4194304", "activity sets", 1024, 7.7),
        ("sparse-reduce", "butterfly", "512:4194304", "activity sets", 4096, 25.4),
        ("transpose", "alltoall", "8192x8192", "system", 64, 10.7),
        ("transpose", "alltoall", "8192x8192", "system", 128, 52.8),
        ("transpose", "alltoall", "8192x8192", "system", 256, 1133.4),
        ("transpose", "pairwise", "8192x8192", "system", 128, 6.8),
        ("transpose", "xor", "8192x8192", "system", 256, 9.7),
        ("transpose", "xor", "8192x8192", "system", 1024, 70.1),
        ("sweep3d", "nonblocking", "16x16x64:8", "system", 256, 3.0),
        ("sweep3d", "nonblocking", "16x16x64:8", "system", 1024, 15.1),
        ("sweep3d", "nonblocking", "16x16x64:8", "system", 4096, 102.9),
        ("graph", "nonblocking", "delaunay", "activity sets", 256, 0.4),
        ("graph", "nonblocking", "delaunay", "activity sets", 1024, 7.3),
        ("graph", "nonblocking", "rgg", "activity sets", 256, 1.1),
        ("graph", "nonblocking", "rgg", "activity sets", 1024, 26.0),
    ],
)
def test_estimate_follows_measured_simulations(
    preset_name, variant, size, simgrid, ranks, measured_s
):
    from petacomm.sim.cli import estimated_seconds
    from petacomm.sim.presets import PRESETS

    preset = PRESETS[preset_name]
    sizes = preset.parse_size(size or preset.size)
    estimate = estimated_seconds(preset, ranks, sizes, variant, 1, simgrid)
    # A warning threshold, not a prediction: within 3x of what was seen (a linear estimate
    # said 4 s for the 537 s run; the sparse growth said 10 s for directory's 180 s).
    assert measured_s / 3 <= estimate <= measured_s * 3, estimate


def test_sparse_variant_names_a_send_window():
    from petacomm.sim.presets import PRESETS, _sparse_variant

    assert _sparse_variant("auto") == ("auto", 0)
    assert _sparse_variant("directory:w16") == ("directory", 16)
    # '²' passes str.isdigit() and int() refused it with a traceback; '٤' is no ASCII digit.
    for bad in (
        "auto:w0",
        "auto:w",
        "auto:wide",
        "owner:w-3",
        "owner:w2147483648",
        "auto:w²",
        "auto:w٤",
    ):
        with pytest.raises(PetacommError, match="NAME:wN"):
            _sparse_variant(bad)
    preset = PRESETS["sparse-reduce"]
    # A window of w sends keeps w of a rank's partners in flight: fewer overlapping flows,
    # as many messages.
    size = preset.parse_size("512:4194304")
    assert preset.work(128, size, "auto:w16", 1) == preset.work(128, size, "auto", 1)
    assert preset.overlap(128, size, "auto:w16") == pytest.approx(
        preset.overlap(128, size, "auto") * 16 / 127
    )
    assert preset.overlap(128, size, "butterfly:w16") == 0.0


def test_sparse_variant_window_reaches_the_program(tmp_path):
    from petacomm.sim.presets import _sparse_prepare

    size = {"nside": 8, "total_samples": 4000}
    command = _sparse_prepare(tmp_path, 3, size, "owner:w2", 1)
    assert command[0] == "petacomm-xchg-setup-bench" and command[3:] == ["owner", "p2p", "2"]
    assert _sparse_prepare(tmp_path, 3, size, "owner", 1)[3:] == ["owner"]


def test_help_lists_presets_and_units():
    done = run_cli("simulate", "--help")
    assert done.returncode == 0
    for text in ("sparse-reduce", "transpose", "--ranks", "--mapping", "--rankfile", "seconds"):
        assert text in done.stdout


def test_halo_results_are_read_from_the_apps_json(tmp_path):
    from petacomm.sim.presets import PRESETS

    halo = PRESETS["halo"]
    assert halo.parse_size("3:box:1KiB") == {"dims": 3, "stencil": "box", "bytes": 1024}
    for bad in ("2:star", "4:star:8", "2:ring:8", "2:star:0"):
        with pytest.raises(ValueError, match="DIMS:STENCIL:BYTES|whole number"):
            halo.parse_size(bad)
    # 1e308 bytes overflowed the time estimate: an OverflowError traceback
    # ... and a face above petacomm-halo's 64 MiB failed only once simulated
    for huge in ("2:star:1e308", "2:star:2GiB", "2:star:65MiB"):
        with pytest.raises(ValueError, match="at most 64 MiB per face"):
            halo.parse_size(huge)
    argv = halo.prepare(tmp_path, 8, {"dims": 2, "stencil": "star", "bytes": 64}, "sendrecv", 2)
    assert argv[:2] == ["petacomm-halo", "--dims"] and argv[argv.index("-i") + 1] == "2"
    # One configuration, one size, one variant, as petacomm-halo writes it (docs/halo.md).
    (tmp_path / "halo.json").write_text(
        json.dumps(
            {
                "configurations": [
                    {
                        "messages_per_exchange": 32,
                        "results": [
                            {
                                "variant": "sendrecv",
                                "bytes": 64,
                                "pattern": "grid2d 4x2 star 64",
                                "avg_us": 12.5,
                                "min_us": 10.0,
                                "max_us": 20.0,
                                "span_us": 15.0,
                                "start_spread_us": 6.0,
                            }
                        ],
                    }
                ]
            }
        )
    )
    row = halo.parse("", tmp_path)
    # From the last rank's start to the last rank's end; the slowest rank's own time beside.
    assert row["simulated_time_s"] == pytest.approx(15e-6)
    assert row["slowest_rank_time_s"] == pytest.approx(20e-6)
    assert row["average_time_s"] == pytest.approx(12.5e-6)
    assert row["start_spread_s"] == pytest.approx(6e-6)
    assert row["pattern"] == "grid2d 4x2 star 64" and row["messages_per_exchange"] == 32
    (tmp_path / "halo.json").write_text("{}")
    with pytest.raises(PetacommError, match="halo.json"):
        halo.parse("", tmp_path)
    # A run without a global clock (a real machine's) cannot stand for a simulated one.
    (tmp_path / "halo.json").write_text(
        json.dumps(
            {
                "configurations": [
                    {
                        "messages_per_exchange": 32,
                        "results": [
                            {"variant": "sendrecv", "bytes": 64, "pattern": "grid2d 4x2 star 64"}
                            | {"avg_us": 1.0, "max_us": 2.0, "span_us": None}
                        ],
                    }
                ]
            }
        )
    )
    with pytest.raises(PetacommError, match="global clock"):
        halo.parse("", tmp_path)
    # 8 ranks x 4 faces x (2 timed + 1 warm-up) exchanges of 64 B.
    assert halo.work(8, {"dims": 2, "stencil": "star", "bytes": 64}, "x", 2) == (96, 96 * 64)


# ---- irregular graphs: petacomm-graph -----------------------------------------------------
@pytest.mark.mpi
def test_graph_times_one_message_by_hand(tmp_path):
    # One message of 1 MB from rank 1 to rank 0 across PLATFORM's fat tree (up and down:
    # message_s). Its linear barrier releases rank 0 first and rank 1 one empty message
    # later, so rank 0's own time counts that wait; the span from the last start does not.
    matrix = tmp_path / "one.csv"
    matrix.write_text("# written by hand\nsrc,dst,bytes\n1,0,1000000\n")
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate", "graph", *PLATFORM, "--ranks", "2,3", "--size", matrix, "--json", out,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    runs = json.loads(out.read_text())["runs"]
    assert [r["ranks"] for r in runs] == [2, 3]
    for r in runs:
        assert r["simulated_time_s"] == pytest.approx(message_s(1e6), rel=1e-4)
        assert r["slowest_rank_time_s"] == pytest.approx(message_s(0) + message_s(1e6), rel=1e-4)
        # Plus SMPI's own costs of the barrier's calls (32 ns).
        assert r["start_spread_s"] == pytest.approx(message_s(0), abs=1e-7)
        assert r["messages_per_exchange"] == 1 and r["bytes"] == 1_000_000
        assert r["pattern"] == f'ranks {r["ranks"]}; matrix "{matrix.resolve()}"'


@pytest.mark.mpi
def test_flow_model_predicts_a_simulated_irregular_graph(tmp_path):
    # The random geometric graph of 32 ranks (1 MiB per message, ~12 partners) on a 2x2x2
    # torus, 4 ranks per node, under all 24 permutation mappings: SimGrid is the reference.
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate", "graph", "--network", "torus:2x2x2", "--ranks", "32", "--size", "rgg",
        "--mapping", "permutations", "--predict", "--json", out, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    doc = json.loads(out.read_text())
    assert doc["agreement"]["time_model"] == "max-min flows"
    times = [r["simulated_time_s"] for r in doc["runs"]]
    assert len(times) == 24 and max(times) > 1.4 * min(times)
    for r in doc["runs"]:
        assert r["predicted_time_s"] == pytest.approx(r["simulated_time_s"], rel=0.005), r
    (group,) = doc["agreement"]["groups"]
    assert group["spearman"] >= 0.95 and group["top_choice_gap"] < 0.005


@pytest.mark.mpi
@pytest.mark.parametrize(
    "variant, ranks, network, size, blocks",
    [
        # MPI_Alltoall of 128 B blocks: SMPI's selector runs Bruck's rounds (5 at 32 ranks).
        ("alltoall", 32, ["torus:4x2x2"], "128x128", "128B bruck"),
        # petacomm's pairwise rounds of 128 KiB blocks (not eager: each holds its sender).
        ("pairwise", 16, ["torus:2x2x2", "--cores-per-node", "2"], "2048x2048", "131072B pairwise"),
    ],
)
def test_flow_model_follows_the_simulated_rounds_of_an_all_to_all(
    tmp_path, variant, ranks, network, size, blocks
):
    # Under all 24 permutation mappings, SimGrid is the reference. The prediction follows
    # each rank from the last repetition's timing reduction and the barrier (untimed: the
    # clock starts when the last rank leaves it) through the execution's agreement (an
    # allreduce of 24 B, pinned to recursive doubling) and the rounds, every message
    # released by the ones its two ranks waited for; all blocks in flight at once it was
    # 0.15x the simulated time.
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate", "transpose", "--network", *network, "--ranks", str(ranks),
        "--size", size, "--machine", "bgp", "--variants", variant, "--mapping", "permutations",
        "--smpi-option", "smpi/allreduce:rdb", "--predict", "--json", out, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    doc = json.loads(out.read_text())
    runs = doc["runs"]
    assert len(runs) == 24
    assert runs[0]["pattern"] == (
        f"ranks {ranks}; phase start untimed; allreduce 24B rdb; barrier rdb; "
        f"phase agreement; allreduce 24B rdb; phase exchange; alltoall {blocks}"
    )
    times = [r["simulated_time_s"] for r in runs]
    assert max(times) > 1.1 * min(times)
    for r in runs:
        assert r["predicted_time_s"] == pytest.approx(r["simulated_time_s"], rel=0.03), r
    (group,) = doc["agreement"]["groups"]
    assert group["spearman"] >= 0.95 and group["top_choice_gap"] < 0.005


@pytest.mark.mpi
def test_flow_model_predicts_the_simulated_transposes_on_a_fat_tree(tmp_path):
    # A 2:1 oversubscribed two-level fat tree (4 leaf switches of 4 nodes, 2 top switches),
    # 2 ranks per node, 32 ranks: SimGrid's FAT_TREE routes up by destination (d-mod-k), as
    # petacomm's dmodk does, so the flow model takes each message's route. Linear all-to-all,
    # the xor and pairwise rounds (ordered), each after the agreement.
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate", "transpose", "--network", "fattree:2;4,4;1,2;1,1", "--cores-per-node", "2",
        "--ranks", "32", "--size", "768x768", "--smpi-option", "smpi/allreduce:rdb",
        "--mapping", "block,cyclic", "--predict", "--json", out, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    doc = json.loads(out.read_text())
    assert doc["agreement"]["time_model"] == "max-min flows"
    assert len(doc["runs"]) == 6
    for r in doc["runs"]:
        assert r["prediction_model"] == "max-min flows"
        assert r["predicted_time_s"] == pytest.approx(r["simulated_time_s"], rel=0.02), r
    # Which top switch: by destination. 0 -> 4 and 1 -> 6 (one rank per node) both climb to
    # top switch 0 (even destinations) and share leaf 0's uplink to it; routed by source
    # they would not (0 and 1 would climb to different top switches): twice as long.
    matrix = tmp_path / "two.csv"
    matrix.write_text("src,dst,bytes\n0,4,1000000\n1,6,1000000\n")
    done = run_cli(
        "simulate", "graph", "--network", "fattree:2;4,4;1,2;1,1", "--cores-per-node", "1",
        "--ranks", "16", "--size", matrix, "--predict", "--json", out, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    doc = json.loads(out.read_text())
    (run,) = doc["runs"]
    # Four links each (node, leaf switch, top switch, leaf switch, node), the middle two
    # shared at half the bandwidth each.
    link = doc["platform"]["link_bandwidth_B_s"], doc["platform"]["link_latency_s"]
    shared = 4 * link[1] + 2 * 1e6 / link[0]
    assert run["simulated_time_s"] == pytest.approx(shared, rel=0.01)
    assert run["predicted_time_s"] == pytest.approx(shared, rel=0.01)


def test_graph_size_is_a_graph_name_or_a_matrix_file(tmp_path):
    from petacomm.sim.presets import PRESETS, check_variant
    from petacomm.topology.irregular_graphs import make_graph
    from petacomm.topology.measured import load_matrix_file

    graph = PRESETS["graph"]
    assert graph.parse_size("rgg") == {"graph": "rgg", "seed": 0}
    assert graph.parse_size("delaunay:3") == {"graph": "delaunay", "seed": 3}
    matrix = tmp_path / "m.csv"
    matrix.write_text("src,dst,bytes\n0,1,8\n")
    assert graph.parse_size(str(matrix)) == {"matrix": str(matrix.resolve())}
    bad_names = (
        ("rgg:x", "SEED"),
        ("rgg:²", "SEED"),
        ("nothing", "graph name"),
        ("gone.csv", "not found"),
    )
    for bad, text in bad_names:
        with pytest.raises(ValueError, match=text):
            graph.parse_size(bad)
    # The program gets the graph's messages, as --predict prices them.
    size = {"graph": "delaunay", "seed": 0}
    argv = graph.prepare(tmp_path, 8, size, "nonblocking", 2)
    written = load_matrix_file(argv[argv.index("--matrix") + 1]).edges()
    expected = make_graph("delaunay", 8).edges()
    for a, b in zip(written, expected, strict=True):
        assert a.tolist() == pytest.approx(b.tolist())
    # 2 timed exchanges and 1 warm-up of every message.
    assert graph.work(8, size, "nonblocking", 2) == (3 * expected[0].size, 3 * expected[2].sum())
    with pytest.raises(PetacommError, match="--variants: petacomm-graph does not take 'sendrecv'"):
        check_variant(graph, "sendrecv")
    expect_clean_error("simulate", "graph", "--size", "nothing", names=("--size", "nothing"))
    # A matrix that does not read, a graph on too few ranks: refused before any build.
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    expect_clean_error("simulate", "graph", "--size", empty, names=("--size", "is empty"))
    expect_clean_error(
        "simulate", "graph", "--network", "torus:2x2x2", "--ranks", "1", "--size", "rgg",
        names=("--size 'rgg' on 1 ranks", ">= 2"),
    )  # fmt: skip


# ---- Sweep3D: weak scaling against the pipeline model ------------------------------------
# Hand-worked: petacomm-sweep3d's process grid (fewest fill stages 2(Px-1) + 4(Py-1), ties
# to the larger Px) and its faces per iteration, 8 octants x 4 blocks (2 angle blocks of 3
# directions, K = 8 in blocks of 4) x ((Px-1) Py x faces + Px (Py-1) y faces).
SWEEP_CASES = {1: ((1, 1), 0), 3: ((3, 1), 64), 4: ((4, 1), 96), 6: ((3, 2), 224)}


@pytest.mark.mpi
def test_sweep3d_weak_scaling_grows_the_grid_and_counts_faces(tmp_path):
    out = tmp_path / "runs.json"
    done = run_cli(
        "simulate",
        "sweep3d",
        "--network",
        "fattree:1;6;1;1",
        "--cores-per-node",
        "1",
        "--ranks",
        ",".join(str(r) for r in SWEEP_CASES),
        "--size",
        "4x4x8:4",
        "--variants",
        "nonblocking",
        "--reps",
        "2",
        "--json",
        out,
        timeout=600,
    )
    assert done.returncode == 0, done.describe()
    doc = json.loads(out.read_text())
    options = doc["platform"]["smpi_options"]
    # Compute bursts count at the platform's host speed; the host's computation is not
    # timed: petacomm-sweep3d charges each block the calibrated block's seconds.
    assert "--cfg=smpi/host-speed:1000000000.0f" in options
    assert "--cfg=smpi/simulate-computation:yes" not in options
    assert [r["ranks"] for r in doc["runs"]] == list(SWEEP_CASES)
    for r in doc["runs"]:
        (px, py), faces = SWEEP_CASES[r["ranks"]]
        assert r["procs"] == [px, py] and r["chosen"] == f"{px}x{py}"
        assert r["grid"] == [4 * px, 4 * py, 8]  # 4 x 4 columns of 8 cells per rank
        assert r["messages_per_iteration"] == faces
        assert r["bytes_per_iteration"] == faces * 4 * 4 * 3 * 8  # mk x n x mmi float64
        assert r["fill_stages"] == 2 * (px - 1) + 4 * (py - 1)
        assert r["iterations"] == 2 and r["block_compute_s"] > 0
        if r["ranks"] == 1:
            # No messages: an iteration is its 32 blocks (8 octants x 2 angle blocks x 8/4
            # K blocks) of exactly the calibrated compute, whatever the host did meanwhile
            # (host-timed, it was their measured time, 1-40 % above the calibration).
            # The rest: SMPI's 100 ns per MPI_Test call and the one-rank allreduces.
            assert r["steady_stages"] == 32
            assert 0 <= r["simulated_time_s"] - 32 * r["block_compute_s"] < 2e-6, r
        assert r["simulated_time_s"] > 0 and r["predicted_time_s"] > 0
    assert " predicted " in done.stdout.splitlines()[0]


def test_sweep3d_size_is_checked():
    from petacomm.sim.presets import PRESETS

    sweep = PRESETS["sweep3d"]
    assert sweep.parse_size("8x4x32:8") == {"nx": 8, "ny": 4, "k": 32, "mk": 8}
    for bad in ("8x8x32", "8x8:4", "8x8x30:4", "0x8x32:4", "8x8x32:x"):
        with pytest.raises(ValueError, match="NXxNYxK:MK"):
            sweep.parse_size(bad)
    expect_clean_error("simulate", "sweep3d", "--size", "8x8x30:4", names=("--size", "8x8x30:4"))
