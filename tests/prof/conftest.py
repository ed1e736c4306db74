"""Fixtures of the profiler tests: where the native programs are, and running them profiled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env

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
    from petacomm.launch import find_mpiexec

    launcher = find_mpiexec()
    extra = ["--oversubscribe"] if launcher.vendor == "openmpi" else []
    return [str(launcher.path), "-n", str(ranks), *extra]


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


DEBIAN_MPICC = Path("/usr/bin/mpicc")
DEBIAN_MPIEXEC = Path("/usr/bin/mpiexec")


@pytest.fixture(scope="session")
def debian_profiler(tmp_path_factory) -> dict:
    """A profiler built by `petacomm profiler build` for Debian's Open MPI (libopenmpi-dev),
    in a cache of this test session; returns the environment that makes `profile` find it."""
    if not DEBIAN_MPICC.exists() or not DEBIAN_MPIEXEC.exists():
        pytest.skip(
            "Debian's Open MPI is not installed (apt-get install libopenmpi-dev openmpi-bin)"
        )
    cache = tmp_path_factory.mktemp("profilers")
    env = {"PETACOMM_PROF_CACHE": str(cache)}
    done = petacomm("profiler", "build", "--mpicc", str(DEBIAN_MPICC), env=env, timeout=900)
    assert "libmpi" in done.stdout
    return env
