"""Fixtures of the profiler tests: where the native programs are, and running them profiled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env, mpiexec_argv
from prerequisites import require

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))


def native_build_tree() -> Path | None:
    """The CMake build tree with the test programs (prof_pattern, ...), built against the
    same MPI as the installed petacomm (its build-info.json names the same mpicc)."""
    import json

    for name in ("PETACOMM_NATIVE_DIR", "PETACOMM_BUILD_DIR"):
        value = os.environ.get(name)
        if value and (Path(value) / "bin" / "prof_pattern").exists():
            return Path(value)
    try:
        from petacomm.native import build_info

        mpicc = build_info().get("mpicc")
    except Exception:  # no installed native part: any tree will do
        mpicc = None
    trees = sorted(ROOT.glob("build/*/bin/prof_pattern"), key=lambda p: p.stat().st_mtime)
    for program in reversed(trees):
        tree = program.parent.parent
        try:
            info = json.loads((tree / "share" / "build-info.json").read_text())
        except (OSError, ValueError):
            continue
        if mpicc is None or info.get("mpicc") == mpicc:
            return tree
    return None


@pytest.fixture(scope="session")
def programs() -> Path:
    tree = native_build_tree()
    if tree is None:
        pytest.fail("no build tree with the profiler test programs: run scripts/setup.sh")
    return tree / "bin"


@pytest.fixture(scope="session")
def profiler_lib() -> Path:
    from petacomm.native import library_path

    return library_path("petacomm-prof")


def petacomm(*args: str, env: dict | None = None, timeout: float = 300, check: bool = True):
    """Runs the petacomm command (this interpreter) with the MPI test environment."""
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", *args],
        capture_output=True,
        text=True,
        env=mpi_test_env(env),
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"petacomm {' '.join(args)} exited {done.returncode}\n--- stdout\n{done.stdout}"
            f"\n--- stderr\n{done.stderr}"
        )
    return done


def mpiexec(ranks: int) -> list[str]:
    return mpiexec_argv(ranks)


def profile_run(
    log: Path, ranks: int, program: list[str], *options: str, env=None, check=True, timeout=300
):
    """`petacomm profile -o LOG [options] -- mpiexec -n RANKS --oversubscribe program...`."""
    return petacomm(
        "profile",
        "-o",
        str(log),
        "--no-banner",
        *options,
        "--",
        *mpiexec(ranks),
        *program,
        env=env,
        check=check,
        timeout=timeout,
    )


def _debian(name: str, suffix: str) -> Path:
    """Debian's /usr/bin/NAME.SUFFIX (one MPI by its own name, whatever the alternatives
    system points /usr/bin/NAME to); /usr/bin/NAME where there is no suffixed one."""
    suffixed = Path(f"/usr/bin/{name}.{suffix}")
    return suffixed if suffixed.exists() else Path(f"/usr/bin/{name}")


# Debian's Open MPI (libopenmpi-dev, openmpi-bin) and MPICH (libmpich-dev, mpich).
DEBIAN_MPICC = _debian("mpicc", "openmpi")
DEBIAN_MPIF90 = _debian("mpif90", "openmpi")
DEBIAN_MPIEXEC = _debian("mpiexec", "openmpi")
MPICH_MPICC = Path("/usr/bin/mpicc.mpich")
MPICH_MPIF90 = Path("/usr/bin/mpif90.mpich")
MPICH_MPIEXEC = Path("/usr/bin/mpiexec.mpich")


def build_profiler(tmp_path_factory, mpicc: Path) -> dict:
    """`petacomm profiler build --mpicc MPICC` into a cache of this test session; returns the
    environment that makes `petacomm profile` find it."""
    cache = tmp_path_factory.mktemp("profilers")
    env = {"PETACOMM_PROF_CACHE": str(cache)}
    done = petacomm("profiler", "build", "--mpicc", str(mpicc), env=env, timeout=900)
    assert "libmpi" in done.stdout
    return env


@pytest.fixture(scope="session")
def debian_profiler(tmp_path_factory) -> dict:
    """A profiler for Debian's Open MPI, in a cache of this test session."""
    require(
        DEBIAN_MPICC.exists() and DEBIAN_MPIEXEC.exists(),
        "Debian's Open MPI is not installed (apt-get install libopenmpi-dev openmpi-bin)",
    )
    return build_profiler(tmp_path_factory, DEBIAN_MPICC)


def need_mpich() -> None:
    require(
        MPICH_MPICC.exists() and MPICH_MPIEXEC.exists(),
        f"Debian's MPICH is not installed ({MPICH_MPICC} or {MPICH_MPIEXEC} missing: "
        "apt-get install libmpich-dev mpich)",
    )


@pytest.fixture(scope="session")
def mpich_profiler(tmp_path_factory) -> dict:
    """A profiler for Debian's MPICH, in a cache of this test session."""
    need_mpich()
    return build_profiler(tmp_path_factory, MPICH_MPICC)


def compile_program(compiler: Path, source: Path, out: Path, *flags: str) -> Path:
    """Compiles one test program with an MPI compiler wrapper; returns the executable."""
    done = subprocess.run(
        [str(compiler), *flags, "-o", str(out), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{compiler} {source.name} failed:\n{done.stderr}"
    return out
