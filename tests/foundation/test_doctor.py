import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env
from prerequisites import require


@pytest.mark.mpi  # doctor starts a 2-rank job
def test_doctor_reports_everything_required():
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "doctor"],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    for heading in (
        "native library",
        "built against MPI",
        "mpi4py's MPI",
        "mpiexec",
        "FFTW",
        "ScaLAPACK",
        "SimGrid SMPI",
        "hwloc",
    ):
        assert heading in out, heading
    assert "MPI MISMATCH" not in out
    job = [line for line in out.splitlines() if "2-rank job" in line]
    assert len(job) == 1 and "[ok]" in job[0] and "formed one job" in job[0], out


def test_doctor_fails_when_native_part_missing(tmp_path):
    env = mpi_test_env({"PETACOMM_NATIVE_DIR": str(tmp_path)})
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1
    assert "[FAIL] native library" in done.stdout


@pytest.mark.mpi
@pytest.mark.parametrize(
    "launcher, reason",
    [
        ("/bin/false", "exited 1"),
        ("/bin/true", "exited 0 but ran no MPI program"),
        ("/usr/bin/mpiexec.mpich", "saw 1 rank(s), not one job of 2"),
    ],
)
def test_a_launcher_that_does_not_start_one_job_is_not_ok(launcher, reason):
    require(Path(launcher).exists(), f"{launcher} is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "doctor", "--mpiexec", launcher],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
        timeout=300,
    )
    assert done.returncode == 1, done.stdout
    job = [line for line in done.stdout.splitlines() if "2-rank job" in line]
    assert len(job) == 1 and "[FAIL]" in job[0] and reason in job[0], done.stdout
    assert "everything required works" not in done.stdout


@pytest.mark.mpi  # doctor starts a 2-rank job
def test_stale_launcher_session_directories_are_named(tmp_path):
    # Open MPI 5's launcher cannot start when $TMPDIR/ompi.<its pid> is left over from a
    # killed launcher: doctor names such directories (their pid no longer runs), and only
    # those: not a running process's, not a name that is no pid.
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    dead, alive = tmp_path / f"ompi.{pid_max + 1}", tmp_path / f"ompi.{os.getpid()}"
    for directory in (dead, alive, tmp_path / "ompi.x", tmp_path / "ompi.12x"):
        directory.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "doctor"],
        capture_output=True,
        text=True,
        env=mpi_test_env({"TMPDIR": str(tmp_path)}),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # a warning, not a failure
    (line,) = [x for x in done.stdout.splitlines() if "launcher leftovers" in x]
    assert "[WARN]" in line and "1 stale Open MPI session directory" in line, line
    assert f"rm -rf {dead}" in line and str(alive) not in line and "ompi.x" not in line, line
    clean = tmp_path / "clean"
    clean.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "doctor"],
        capture_output=True,
        text=True,
        env=mpi_test_env({"TMPDIR": str(clean)}),
        timeout=300,
    )
    (line,) = [x for x in done.stdout.splitlines() if "launcher leftovers" in x]
    assert "[ok]" in line and str(clean) in line, line
