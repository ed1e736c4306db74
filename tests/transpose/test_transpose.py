"""The transpose family through the Python binding, at every rank count of the harness;
the binding's structures against the C compiler's layout; the registry as the one source
of strategy names."""

from __future__ import annotations

import ctypes
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
def test_matrix_against_numpy(ranks):
    result = mpirun_python(ranks, str(HERE / "matrix_worker.py"), timeout=300)
    _all_ranks_say(result, "matrix ok", ranks)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", (1, 3, 4))
def test_bad_argument_on_one_rank_fails_everywhere(ranks):
    result = mpirun_python(ranks, str(HERE / "errors_worker.py"), timeout=120)
    _all_ranks_say(result, "errors ok", ranks)


@pytest.mark.mpi
def test_virtual_node_size_from_the_environment():
    result = mpirun_python(4, str(HERE / "node_worker.py"), env={"PETACOMM_NODE_SIZE": "2"})
    _all_ranks_say(result, "nodes 2 ranks_per_node 2 ok", 4)
    bad = mpirun_python(
        1, str(HERE / "node_worker.py"), env={"PETACOMM_NODE_SIZE": "two"}, check=False
    )
    assert bad.returncode != 0 and "PETACOMM_NODE_SIZE: expected a positive integer, got 'two'" in (
        bad.stdout + bad.stderr
    )


def test_strategy_names_come_from_the_registry():
    from petacomm.transpose import strategies

    names = [s.name for s in strategies()]
    assert names == [
        "alltoall",
        "alltoallv",
        "alltoallw",
        "xor",
        "pairwise",
        "pipelined",
        "partial",
        "two-level",
    ]
    assert dict((s.name, s.options) for s in strategies())["pipelined"] == ("window",)
    # docs/transpose.md's strategy table lists exactly the registry, with its summaries.
    text = (ROOT / "docs" / "transpose.md").read_text()
    start = text.index("| strategy | what it does and when it wins | options |")
    section = text[start : text.index("\n\n", start)]
    table = re.findall(r"^\| `([a-z0-9-]+)` \| (.+?) \|", section, re.M)
    assert [name for name, _ in table] == names
    for (_, summary), strategy in zip(table, strategies(), strict=True):
        assert summary.strip() == strategy.summary


def test_c_example_in_docs_is_the_tested_file():
    text = (ROOT / "docs" / "transpose.md").read_text()
    start = text.index("<!-- example: c")
    shown = re.compile(r"```c\n(.*?)```", re.S).search(text, start).group(1)
    assert shown == (ROOT / "native/tests/transpose/example_transpose.c").read_text()


def test_fortran_example_in_docs_is_the_tested_file():
    """The Fortran example is the program tests/foundation/test_packaging.py builds against
    the installed module and runs."""
    text = (ROOT / "docs" / "transpose.md").read_text()
    start = text.index("<!-- example: fortran")
    shown = re.compile(r"```fortran\n(.*?)```", re.S).search(text, start).group(1)
    tested = ROOT / "tests/foundation/consumer/transpose_example.f90"
    assert shown == tested.read_text()
    assert "transpose_example.f90" in (tested.parent / "CMakeLists.txt").read_text()


def test_import_does_not_touch_mpi():
    code = (
        "import sys, petacomm; assert 'mpi4py' not in sys.modules; "
        "assert 'petacomm.transpose' not in sys.modules; "
        "assert 'TransposePlan' in petacomm.__all__; print('lazy')"
    )
    assert "lazy" in python_output(code)


def test_offline_decision_from_statistics():
    """The planner's pure decision through the C API (no MPI): a sparse mask picks
    partial, and every candidate carries a predicted time."""
    import json

    from petacomm.transpose import _capi

    lib = _capi.library()
    mask = (ctypes.c_ubyte * 256)(*([1] * 4 + [0] * 252))
    problem = _capi.Problem(8, 256, 256, 1, 16, 8, mask, 256)
    needed = ctypes.c_size_t()
    assert lib.petacomm_transpose_model_decide(problem, None, None, 0, needed) == 0
    text = ctypes.create_string_buffer(needed.value)
    assert lib.petacomm_transpose_model_decide(problem, None, text, needed.value, None) == 0
    decision = json.loads(text.value)
    assert decision["choice"] == "partial", decision
    by_name = {c["name"]: c for c in decision["candidates"]}
    assert by_name["xor"]["applicable"] and by_name["alltoall"]["predicted_seconds"] > 0
    # Blocks of 256/8 rows x 256/8 columns x 16 B: alltoall sends 7 of them.
    assert by_name["alltoall"]["bytes"] == 7 * 32 * 32 * 16


def test_a_model_path_is_read_as_the_planners_model(tmp_path):
    # A path (as petacomm.xchg takes it) was used as the model itself: AttributeError
    # "'str' object has no attribute 'source'" from TransposePlan(..., model="m.json").
    from petacomm.model.machine import MachineModel, OperationModel, Piece, save
    from petacomm.transpose.cost import cost_params, resolve_model

    # A measured model with a ping-pong alpha no default has: read from the file or not.
    pingpong = OperationModel("pingpong", 2, [Piece(0, 1 << 30, 3e-6, 1e-10, 1.0, 4)])
    path = save(MachineModel({"pingpong": pingpong}, source="netbench"), tmp_path / "m.json")
    assert isinstance(resolve_model(str(path)), MachineModel)
    assert cost_params(resolve_model(str(path))).p2p_alpha == 3e-6
    assert cost_params(resolve_model(path)).p2p_alpha == 3e-6
    with pytest.raises(ValueError, match="model: expected a petacomm.model.MachineModel"):
        resolve_model(42)


@pytest.mark.parametrize("plan", ["TransposePlan", "PencilPlan", "FourierFilter"])
def test_a_plan_without_a_communicator_is_refused_naming_comm(plan):
    # None gave AttributeError "'NoneType' object has no attribute 'py2f'".
    args = {"TransposePlan": ((16, 8),), "PencilPlan": ((4, 5, 6), (1, 1))}
    with pytest.raises(TypeError, match="comm: expected an mpi4py communicator, got None"):
        import petacomm

        getattr(petacomm, plan)(None, *args.get(plan, ((2, 8, 8), (1, 1))))


def test_measure_reps_is_bounded_as_the_library_bounds_it():
    # PETACOMM_MAX_REPS, refused with the library's message; a value beyond a C int reached
    # the library wrapped (2**32 + 3 as 3 timed executions, 2**31 as -2**31).
    from petacomm.transpose.plan import build_options

    assert build_options(measure_reps=1000000)[0].measure_reps == 1000000
    for reps in (0, 1000001, 2**31, 2**32 + 3):
        with pytest.raises(
            ValueError, match=rf"^measure_reps: must be in \[1, 1000000\], got {reps}$"
        ):
            build_options(measure_reps=reps)


def test_integer_arguments_take_numpy_integers_and_refuse_the_rest():
    # int() took 16.5 for 16 and "44" for 44; a 0-d integer array is an integer.
    import numpy as np

    from petacomm.errors import integer_argument

    for value in (3, np.int32(3), np.uint64(3), np.array(3)):
        assert integer_argument(value, "howmany") == 3
    for value in (3.0, 16.5, "44", True, np.True_, np.array([3]), np.array(3.0), float("nan")):
        with pytest.raises(ValueError, match="^howmany: expected an integer, got "):
            integer_argument(value, "howmany")
