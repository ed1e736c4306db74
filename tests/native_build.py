"""The native CMake build tree the tests use (test programs, ctest, the C examples).

PETACOMM_NATIVE_DIR (a development build, as for the Python tests), else PETACOMM_BUILD_DIR,
else the tree under build/ that the installed petacomm was built in (the one whose
build-info.json names the same mpicc); a missing tree fails the test, never skips it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tree_info(tree: Path) -> dict:
    """The build record of a tree ({} when it has none)."""
    try:
        return json.loads((tree / "share" / "build-info.json").read_text())
    except (OSError, ValueError):
        return {}


def build_tree() -> Path:
    for variable in ("PETACOMM_NATIVE_DIR", "PETACOMM_BUILD_DIR"):
        value = os.environ.get(variable)
        if value:
            if not (Path(value) / "CTestTestfile.cmake").exists():
                pytest.fail(f"{variable}={value} is not a CMake build tree with native tests")
            return Path(value)
    from petacomm.native import build_info

    installed = build_info()["mpicc"]
    trees = [
        testfile.parent
        for testfile in ROOT.glob("build/*/CTestTestfile.cmake")
        if tree_info(testfile.parent).get("mpicc") == installed
    ]
    if not trees:
        pytest.fail(f"no native build tree under {ROOT / 'build'} for {installed}: run setup.sh")
    return max(trees, key=lambda tree: (tree / "CTestTestfile.cmake").stat().st_mtime)
