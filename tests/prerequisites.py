"""What a test needs from the machine: skipped locally when missing, a failure in CI.

``scripts/setup.sh --test`` installs every tool the tests use (Debian's Open MPI and MPICH,
gfortran, SimGrid, Chromium, NetPIPE, ...), and ``scripts/test.sh`` (so CI) sets
``PETACOMM_REQUIRE_ALL=1``: there a missing tool means the set-up is broken, and the test
fails instead of passing silently. Elsewhere (a developer machine without them) it skips.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

SWITCH = "PETACOMM_REQUIRE_ALL"


def required_everywhere() -> bool:
    return os.environ.get(SWITCH, "") not in ("", "0")


def require(available: object, reason: str) -> None:
    """Skips the test (fails it under PETACOMM_REQUIRE_ALL=1) unless ``available`` is true.

    ``reason`` says what is missing and how to install it.
    """
    if available:
        return
    if required_everywhere():
        pytest.fail(f"{reason} [{SWITCH}=1: scripts/setup.sh --test should have provided it]")
    pytest.skip(reason)


def require_program(name: str | Path, reason: str) -> str:
    """The path of a program (a name on PATH or a path), as ``require`` would have it."""
    found = shutil.which(str(name))
    require(found, f"{name} not found: {reason}")
    return str(found)
