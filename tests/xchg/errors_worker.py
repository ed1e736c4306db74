"""MPI worker: bad arguments raise clear errors on every rank and leave values untouched."""

import sys

import numpy as np
from mpi4py import MPI

import petacomm
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

    for strategy in ("dense-allreduce", "directory", "owner", "hub-split", "allgather", "auto"):
        plan, values = check_plan(keys, strategy)
    expect(PetacommError, ["freed"], lambda: plan.execute(values))
    print("errors ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
