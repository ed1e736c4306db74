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
