"""Drives the native tests (ctest, under mpiexec) from pytest, so one command runs all."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env

ROOT = Path(__file__).resolve().parents[2]


def build_tree() -> Path:
    explicit = os.environ.get("PETACOMM_BUILD_DIR")
    if explicit:
        return Path(explicit)
    trees = sorted(ROOT.glob("build/cp3*/CTestTestfile.cmake"), key=lambda p: p.stat().st_mtime)
    if not trees:
        pytest.fail("no native build tree under build/: run scripts/setup.sh first")
    return trees[-1].parent


@pytest.mark.mpi
def test_native_tests_pass_under_ctest():
    ctest = shutil.which("ctest") or str(Path(os.sys.executable).parent / "ctest")
    done = subprocess.run(
        [ctest, "--test-dir", str(build_tree()), "--output-on-failure", "-j2", "--timeout", "600"],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
        check=False,
    )
    summary = [line for line in done.stdout.splitlines() if "tests passed" in line]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    print(summary)
