"""The node layer through its Python binding at every rank count of the harness (the native
test, run by ctest, covers the protocol in depth at the same rank counts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from node_support import QUIET

from cli_harness import python_output
from mpi_harness import RANK_COUNTS, mpirun_python

HERE = Path(__file__).resolve().parent


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_binding_against_mpi4py(ranks):
    result = mpirun_python(ranks, str(HERE / "layer_worker.py"), timeout=240, env=QUIET)
    lines = result.stdout.splitlines()
    assert sum("node layer ok" in line for line in lines) == ranks, result.stdout + result.stderr


def test_import_does_not_touch_mpi():
    code = (
        "import sys, petacomm.node, petacomm.native as n; assert 'mpi4py' not in sys.modules; "
        "assert n.load_library.cache_info().currsize == 0; print('lazy')"
    )
    assert "lazy" in python_output(code)
