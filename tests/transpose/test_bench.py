"""The benchmark commands: ``bench transpose`` (a small race on Debian's Open MPI against
FFTW-MPI and mpi4py-fft, every output compared; --model-only; argument errors) and
``bench fftfilter`` / the petacomm-fftfilter mini-app (three variants verified, the byte
ratios the formats imply)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cli_harness import expect_clean_error, run_cli
from prerequisites import require

ROOT = Path(__file__).resolve().parents[2]
# The race builds petacomm against Debian's Open MPI once; keep that build with this tree.
CACHE = {"PETACOMM_BUILD_CACHE": str(ROOT / "build" / "bench-cache")}


def _debian_race_available() -> bool:
    if not (shutil.which("mpicc.openmpi") and shutil.which("mpiexec.openmpi")):
        return False
    probe = "import mpi4py.MPI, mpi4py_fft"
    done = subprocess.run(["/usr/bin/python3", "-c", probe], capture_output=True, check=False)
    return done.returncode == 0


def test_model_only_predicts_every_strategy(tmp_path):
    out = tmp_path / "model.json"
    result = run_cli(
        "bench", "transpose", "--model-only", "4,6", "--sizes", "256x128", "--json", out
    )
    assert result.returncode == 0, result.describe()
    assert "planner:" in result.stdout and "needs a power-of-two" in result.stdout
    data = json.loads(out.read_text())
    assert data["schema"] == "petacomm-bench-transpose" and data["schema_version"] == 1
    four = data["model_only"][0]
    # 256 x 128 complex128 on 4 ranks: alltoall sends 3 blocks of 64 x 32 elements.
    a2a = next(c for c in four["candidates"] if c["name"] == "alltoall")
    assert a2a["bytes"] == 3 * 64 * 32 * 16 and a2a["predicted_seconds"] > 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


@pytest.mark.mpi
def test_race_on_debian_open_mpi(tmp_path):
    require(
        _debian_race_available(),
        "Debian's Open MPI or python3-mpi4py-fft is absent (libfftw3-mpi-dev python3-mpi4py-fft)",
    )
    out = tmp_path / "race.json"
    result = run_cli(
        "bench",
        "transpose",
        "--sizes",
        "64x32",
        "--ranks",
        "2",
        "--reps",
        "2",
        "--warmup",
        "0",
        "--json",
        out,
        timeout=900,
        env=CACHE,
    )
    assert result.returncode == 0, result.describe()
    data = json.loads(out.read_text())
    (case,) = data["runs"][0]["cases"]
    names = {row["name"] for row in case["contenders"]}
    assert {"fftw-mpi", "mpi4py-fft", "floor", "petacomm:auto", "petacomm:xor"} <= names
    assert all(row["agrees"] for row in case["contenders"]), case["contenders"]
    assert "Open MPI v4" in data["runs"][0]["mpi_library"]
    assert case["bytes_per_rank"]["petacomm:alltoallv"] == 32 * 16 * 16  # 32 x 16 block
    assert "vs peer" in result.stdout and "floor (MPI_Alltoall)" in result.stdout
    table = [ln for ln in result.stdout.splitlines() if not ln.startswith(("building", "built"))]
    assert max(len(line) for line in table) <= 100


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("--sizes", "64by64"), "--sizes"),
        (("--strategies", "fastest", "--model-only", "4"), "fastest"),
        (("--reps", "0"), "--reps"),
        (("--mpicc", "/nonexistent/mpicc"), "--mpicc"),
        (("--peers", "heffte"), "--peers"),
    ],
)
def test_bench_transpose_argument_errors(args, names):
    expect_clean_error("bench", "transpose", *args, names=names)


def test_bench_transpose_keeps_an_existing_json_on_an_error(tmp_path):
    """--json was checked by writing '{}' into it: an earlier result was lost to any error
    that followed (here a --mpicc that does not exist)."""
    old = tmp_path / "old.json"
    old.write_text('{"an earlier result": "kept"}\n')
    args = ["bench", "transpose", "--json", str(old), "--mpicc", "/nonexistent/mpicc"]
    expect_clean_error(*args, names=("--mpicc", "/nonexistent/mpicc"), inputs=[old])
    expect_clean_error("bench", "transpose", "--json", "", names=("--json", "empty file name"))


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", ("2", "3"))
def test_bench_fftfilter_variants_verified(tmp_path, ranks):
    out = tmp_path / "filter.json"
    result = run_cli(
        "bench",
        "fftfilter",
        "--shape",
        "3,16,32",
        "--ranks",
        ranks,
        "--reps",
        "2",
        "--warmup",
        "0",
        "--json",
        out,
        timeout=300,
    )
    assert result.returncode == 0, result.describe()
    (run,) = json.loads(out.read_text())["runs"]
    assert run["verification_passed"] and run["ranks"] == int(ranks)
    by = {v["variant"]: v for v in run["variants"]}
    assert all(v["relative_error"] <= 1e-12 for v in by.values()), by
    if ranks == "2":
        # Per filter, each way, a rank sends 8 chi rows x its partner's columns x 3 s x 16 B:
        # plain 16 of 32 columns, packed 8 of 16 (half the bytes); partial only the kept
        # modes n <= 32/16 = 2, all in rank 0's block: 3 columns, one way per rank.
        assert by["plain"]["bytes_per_rank"] == 2 * 8 * 16 * 3 * 16
        assert by["packed"]["bytes_per_rank"] == 2 * 8 * 8 * 3 * 16
        assert by["packed-partial"]["bytes_per_rank"] == 8 * 3 * 3 * 16
    assert "verification: passed" in result.stdout


@pytest.mark.mpi
def test_fftfilter_app_refuses_bad_flags():
    from mpi_harness import mpirun
    from petacomm.native import program_path

    app = str(program_path("petacomm-fftfilter"))
    bad = mpirun(1, [app, "--shape", "4,63,32"], check=False)
    assert bad.returncode != 0 and "n: expected n_s >= 1 and even n_chi" in bad.stdout + bad.stderr
    bad = mpirun(1, [app, "--variant", "fast"], check=False)
    assert bad.returncode == 2 and "--variant" in bad.stdout + bad.stderr
    # atoi read 99999999999 as 1215752191 repetitions; a grid of 4294967297 was cast to
    # int: 1
    for flag, value, bound in (
        ("--reps", "99999999999", "[1, 1000000]"),
        ("--grid", "4294967297,2", "[1, 16777216]"),
    ):
        bad = mpirun(1, [app, flag, value], check=False)
        assert bad.returncode == 2, bad.stderr
        assert f"{flag}: expected an integer in {bound}, got '{value.split(',')[0]}'" in bad.stderr
    helped = mpirun(1, [app, "--help"])
    assert "--shape NS,NCHI,NPHI" in helped.stdout


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("program", "args"),
    [
        ("petacomm-transpose-bench", ["8", "8", "99999999999", "xor"]),  # atoi: 1215752191
        ("petacomm-transpose-bench", ["8x", "8", "2", "xor"]),  # atoll read 8
        ("petacomm-xchg-setup-bench", [".", "99999999999"]),
        ("petacomm-xchg-setup-bench", [".", "2", "owner", "p2p", "4294967298"]),  # atoi: 2
    ],
)
def test_the_c_drivers_refuse_counts_they_cannot_hold(program, args):
    """The drivers are not installed: simulate builds its own (SMPI); the tests use the
    build tree's."""
    from mpi_harness import mpirun
    from native_build import build_tree

    bad = mpirun(1, [str(build_tree() / "bin" / program), *args], check=False)
    assert bad.returncode != 0 and f"usage: {program}" in bad.stderr, bad.stderr


def test_a_probe_is_run_to_its_end_within_its_limits():
    """What mpi4py_library asks a --python: its exit status and both outputs; a program
    that runs too long is killed at the timeout, one that prints without end at 1 MiB."""
    import sys
    import time

    from petacomm.bench import transpose

    code = "import sys; print('out'); sys.stderr.write('err'); sys.exit(3)"
    done = transpose._probe([sys.executable, "-c", code], timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err")
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        transpose._probe([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert time.monotonic() - start < 10
    flood = "import sys\nwhile True: sys.stdout.write('y' * 4096)"
    assert transpose._probe([sys.executable, "-c", flood], timeout=60) is None
