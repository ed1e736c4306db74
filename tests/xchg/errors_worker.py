"""MPI worker: bad arguments raise clear errors on every rank and leave values untouched;
a bad argument on one rank only fails on every rank together, naming that rank, and leaves
the plan usable (nothing hangs: the harness's timeout would fail the test)."""

import sys

import numpy as np
from mpi4py import MPI

import petacomm
import petacomm.xchg
from petacomm.errors import PetacommError

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def expect(error, fragments, call):
    try:
        call()
    except error as err:
        text = str(err)
        missing = [f for f in fragments if f not in text]
        if missing:
            raise AssertionError(f"rank {rank}: message {text!r} lacks {missing}") from err
        return
    raise AssertionError(f"rank {rank}: expected {error.__name__} mentioning {fragments}")


def check_plan(keys, strategy):
    with petacomm.SparseReducePlan(comm, keys, strategy=strategy) as plan:
        values = np.arange(15, dtype=np.float64).reshape(5, 3)
        before = values.copy()
        expect(ValueError, ["values", "5", "4"], lambda: plan.execute(values[:4].copy()))
        expect(ValueError, ["dtype", "float16"], lambda: plan.execute(values.astype(np.float16)))
        expect(ValueError, ["dtype", "int8"], lambda: plan.execute(values.astype(np.int8)))
        # float64 in the other byte order: its bytes would be read as this machine's floats.
        swapped = values.astype(values.dtype.newbyteorder())
        expect(
            ValueError,
            ["values", swapped.dtype.str, "byte order", ".astype('float64')"],
            lambda: plan.execute(swapped),
        )
        assert np.array_equal(swapped, before), f"rank {rank}: swapped values modified"
        expect(ValueError, ["op", "median"], lambda: plan.execute(values, "median"))
        expect(
            ValueError,
            ["min", "complex128"],
            lambda: plan.execute(values.astype(np.complex128), "min"),
        )
        expect(ValueError, ["C-contiguous"], lambda: plan.execute(np.asfortranarray(values)))
        expect(ValueError, ["numpy array"], lambda: plan.execute(values.tolist()))
        if size > 1:
            half = comm.Split(rank % 2, rank)
            expect(ValueError, ["comm", "different ranks"], lambda: plan.execute(values, comm=half))
            half.Free()
        assert np.array_equal(values, before), f"rank {rank}: values modified by an error"
        expect(PetacommError, ["no execution in progress"], plan.execute_end)
        plan.execute(values)
        # Key 9 twice per rank: rows 0 and 2 combined once, both receive the sum.
        want = np.array([[6, 8, 10], [3, 4, 5], [6, 8, 10], [9, 10, 11], [12, 13, 14]])
        want = want * size
        want[3] //= size  # key 500 + rank is on this rank only
        assert np.array_equal(values, want), (values, want)
        info = plan.describe()
        assert info["strategy"] == plan.strategy and info["reason"], info
        stats = plan.stats(np.float64, 3)
        assert stats["bytes"]["max"] >= 0 and stats["memory_bytes"]["min"] > 0, stats
    return plan, values


def one_rank_bad_creation(keys):
    """Plan creation with one argument bad on the last rank only."""
    from petacomm.model import MachineModel, OperationModel, Piece

    bad = size - 1
    other = [f"invalid arguments on rank {bad}", "no plan was created"]
    slow = MachineModel({"pingpong": OperationModel("pingpong", 2, [Piece(0, 1 << 40, 9e-6, 1e-9,
                         1.0, 3)])})  # fmt: skip
    cases = [  # (arguments on the bad rank, its message fragments, the others')
        ({"keys": np.array([1.5, 2.0])}, ["keys", "float64"], other),
        ({"keys": keys.reshape(-1, 1)}, ["keys", "one-dimensional", "(5, 1)"], other),
        ({"dtype": np.float16}, ["dtype", "float16"], other),
        ({"dtype": np.dtype(np.complex128).newbyteorder()}, ["dtype", "byte order"], other),
        # numpy's own "data type 'nonsense' not understood" named no argument
        ({"dtype": "nonsense"}, ["dtype", "not a numpy dtype", "'nonsense'"], other),
        ({"chunk_keys": "many"}, ["chunk_keys", "many"], other),
        ({"send_window": -1}, ["send_window", "must be >= 0", "-1"], other),
        ({"send_window": 2.5}, ["send_window", "expected an integer", "2.5"], other),
        ({"autotune": 2**31 - 1}, ["autotune: must be in [0, 1000000], got 2147483647"], other),
        ({"autotune": 2**32 + 2}, ["autotune: must be in [0, 1000000], got 4294967298"], other),
        ({"model": "/nonexistent/model.json"}, ["machine model", "not found"], other),
        ({"model": 42}, ["model", "MachineModel", "int"], other),
        (
            {"strategy": "owner"},
            ["strategy", "'owner'", f"rank {bad}", "differs from rank 0's"],
            ["arguments differ between ranks: strategy on rank", f"{bad}"],
        ),
        ({"k": 3}, ["plan_k", "3", f"rank {bad}"], ["plan_k on rank", f"{bad}"]),
        ({"model": slow}, ["cost.", f"rank {bad}"], ["cost.", f"rank {bad}"]),
    ]
    for arguments, mine, theirs in cases:
        given = {"keys": keys, "strategy": "directory", **(arguments if rank == bad else {})}
        expect(ValueError, mine if rank == bad else theirs, lambda g=given: make_plan(**g))
    # Ranks asking for the directory send their keys home while the check is in flight;
    # those whose strategy needs none skip that step, and must join it late when the check
    # fails, or the others' exchange never ends (a hang, not an error).
    for base, odd in (("range", "directory"), ("directory", "range"), ("allgather", "auto")):
        cases = [
            (
                {"strategy": odd},
                ["strategy", f"'{odd}'", f"rank {bad}", "differs from rank 0's"],
                ["arguments differ between ranks: strategy on rank", f"{bad}"],
            ),
            ({"keys": np.array([1.5, 2.0])}, ["keys", "float64"], other),
        ]
        for arguments, mine, theirs in cases:
            given = {"keys": keys, "strategy": base, **(arguments if rank == bad else {})}
            expect(ValueError, mine if rank == bad else theirs, lambda g=given: make_plan(**g))
    plan = make_plan(keys, strategy="range")  # and a good plan after the failures
    values = np.ones((keys.size, 1))
    plan.execute(values)
    # keys 9 (twice per rank), 4, 500 + rank (this rank only), 2**62: counted by hand.
    assert values[:, 0].tolist() == [2 * size, size, 2 * size, 1, size], values
    plan.free()


def make_plan(keys, **options):
    return petacomm.SparseReducePlan(comm, keys, **options)


def one_rank_bad_execution(keys, strategy, plan_k):
    """execute with one argument bad on the last rank only: every rank fails in execute, no
    hang, no overrun of the others' buffers, values unchanged everywhere, and the next good
    execution is right. With plan_k = 3 the good ranks' values are the plan's element, so
    their exchange goes ahead of the argument check and the bad rank completes it; with
    plan_k = 1 every rank waits for the check."""
    bad = size - 1
    with petacomm.SparseReducePlan(comm, keys, strategy=strategy, k=plan_k) as plan:
        good = np.arange(15, dtype=np.float64).reshape(5, 3) + rank
        other = [f"invalid arguments on rank {bad}", "the values are unchanged"]
        cases = [  # (values or op on the bad rank, its fragments, the others')
            (good.astype(np.float32), "sum", ["dtype", "float32", f"rank {bad}"], ["dtype"]),
            (good[:, :2].copy(), "sum", ["k", "2", f"rank {bad}"], ["k on rank"]),
            (good[:4].copy(), "sum", ["values", "5 keys", "4 rows"], other),
            (good.astype(np.float16), "sum", ["values", "float16"], other),
            (good.astype(good.dtype.newbyteorder()), "sum", ["values", "byte order"], other),
            (np.asfortranarray(good), "sum", ["C-contiguous"], other),
            (good.copy(), "median", ["op", "median"], other),
            (good.copy(), [], ["op", "[]"], other),  # was "unhashable type: 'list'"
            (good.copy(), "max", ["op", "max", f"rank {bad}"], ["op on rank"]),
        ]
        for values, op, mine, theirs in cases:
            mine_values = values if rank == bad else good.copy()
            before = mine_values.copy()
            expect(
                ValueError,
                mine if rank == bad else theirs,
                lambda v=mine_values, o=(op if rank == bad else "sum"): plan.execute(v, o),
            )
            assert np.array_equal(mine_values, before), f"rank {rank}: values changed by {op}"
            assert mine_values.dtype == before.dtype
        values = good.copy()
        plan.execute(values)
        # keys: 9 (twice per rank), 4, 500 + rank (this rank only), 2**62.
        total = sum(np.arange(15.0).reshape(5, 3) + r for r in range(size))
        want = total.copy()
        want[0] = want[2] = total[0] + total[2]
        want[3] = good[3]
        assert np.array_equal(values, want), (strategy, values, want)


def main() -> int:
    keys = np.array([9, 4, 9, 500 + rank, 1 << 62], dtype=np.int64)

    bad = keys.copy()
    if rank == 0:
        bad[3] = -7
    expect(
        ValueError,
        ["keys[3]", "-7"] if rank == 0 else ["rank 0"],
        lambda: petacomm.SparseReducePlan(comm, bad, strategy="directory"),
    )
    expect(
        ValueError,
        ["keys[0]", "negative"],
        lambda: petacomm.SparseReducePlan(comm, np.array([1 << 63], dtype=np.uint64)),
    )
    expect(ValueError, ["keys", "float64"], lambda: petacomm.SparseReducePlan(comm, [1.5, 2.0]))
    expect(
        ValueError,
        ["strategy", "fastest"],
        lambda: petacomm.SparseReducePlan(comm, keys, strategy="fastest"),
    )
    expect(
        ValueError,
        ["dtype", "float16"],
        lambda: petacomm.SparseReducePlan(comm, keys, dtype=np.float16),
    )

    for strategy in petacomm.xchg.strategy_names():
        plan, values = check_plan(keys, strategy)
    expect(PetacommError, ["freed"], lambda: plan.execute(values))
    if size > 1:
        one_rank_bad_creation(keys)
        for strategy in (
            "dense-allreduce",
            "hub-split",
            "owner",
            "directory",
            "node-aware",
            "butterfly",
        ):
            for plan_k in (1, 3):
                one_rank_bad_execution(keys, strategy, plan_k)
    print("errors ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
