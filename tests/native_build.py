"""The native CMake build tree the tests use (test programs, ctest, the C examples).

PETACOMM_NATIVE_DIR (a development build, as for the Python tests), else PETACOMM_BUILD_DIR,
else the tree the installed petacomm was built in (its build-info.json records it; setup.sh
keeps it under build/). A missing tree fails the test, never skips it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


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

    recorded = build_info().get("build_dir", "")
    if not (Path(recorded) / "CTestTestfile.cmake").exists():
        pytest.fail(
            f"the installed petacomm's build tree '{recorded}' is gone or has no native tests: "
            "run scripts/setup.sh (or set PETACOMM_NATIVE_DIR to a build tree)"
        )
    return Path(recorded)
