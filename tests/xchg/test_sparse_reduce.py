"""SparseReducePlan through the Python binding, at every rank count of the harness."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli_harness import python_output
from mpi_harness import RANK_COUNTS, mpirun_python

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def _all_ranks_say(result, text: str, ranks: int) -> None:
    lines = result.stdout.splitlines()
    assert sum(text in line for line in lines) == ranks, result.stdout + result.stderr


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_matrix_against_reference(ranks):
    from petacomm.xchg import strategy_names

    result = mpirun_python(ranks, str(HERE / "matrix_worker.py"), timeout=240)
    _all_ranks_say(result, "matrix ok", ranks)
    # Every registered strategy went through the matrix (it iterates the registry).
    ran = re.findall(r"strategies=(\S+)", result.stdout)
    assert len(ran) == ranks and all(set(r.split(",")) == set(strategy_names()) for r in ran)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", (1, 3, 4))
def test_errors_leave_values_untouched(ranks):
    result = mpirun_python(ranks, str(HERE / "errors_worker.py"), timeout=120)
    _all_ranks_say(result, "errors ok", ranks)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", (1, 3))
def test_unsorted_repeated_keys_over_wide_spans(ranks):
    result = mpirun_python(ranks, str(HERE / "repeats_worker.py"), timeout=120)
    _all_ranks_say(result, "repeats ok", ranks)


def test_import_does_not_touch_mpi():
    code = (
        "import sys, petacomm; assert 'mpi4py' not in sys.modules; "
        "assert 'petacomm.xchg' not in sys.modules; "
        "assert 'SparseReducePlan' in petacomm.__all__; print('lazy')"
    )
    assert "lazy" in python_output(code)


def test_lazy_attribute_resolves():
    import petacomm
    from petacomm.xchg import SparseReducePlan

    assert petacomm.SparseReducePlan is SparseReducePlan
    with pytest.raises(AttributeError):
        petacomm.NoSuchThing  # noqa: B018


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_setup_statistics_clock_and_agreement(ranks):
    # One node (this machine) up to 3 ranks, then virtual nodes (node-aware's traffic).
    env = {"PETACOMM_NODE_SIZE": "2" if ranks == 4 else "3"} if ranks >= 4 else None
    result = mpirun_python(ranks, str(HERE / "setup_worker.py"), timeout=180, env=env)
    _all_ranks_say(result, "setup ok", ranks)


def test_a_plan_without_a_communicator_is_refused_naming_comm():
    # None gave AttributeError "'NoneType' object has no attribute 'py2f'".
    import petacomm

    with pytest.raises(TypeError, match="comm: expected an mpi4py communicator, got None"):
        petacomm.SparseReducePlan(None, [1, 2, 3])
