import subprocess
import sys

from mpi_harness import mpi_test_env


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
