"""MPI worker: a bad argument on ONE rank raises a clear ValueError on every rank (naming
the argument, the value and the rank at fault), before anything is sent: outputs stay
untouched and the plan keeps working. Prints 'errors ok'."""

import sys

import numpy as np
from mpi4py import MPI

import petacomm
from petacomm.errors import PetacommError

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
CULPRIT = size - 1


def expect(fragments, call, error=ValueError):
    try:
        call()
    except error as err:
        text = str(err)
        missing = [f for f in fragments if f not in text]
        if missing:
            raise AssertionError(f"rank {rank}: message {text!r} lacks {missing}") from err
        return
    names = [e.__name__ for e in (error if isinstance(error, tuple) else (error,))]
    raise AssertionError(f"rank {rank}: expected {' or '.join(names)} mentioning {fragments}")


def culprit_says(*fragments):
    """What the culprit's message holds; the others name the culprit and repeat it."""
    return list(fragments) if rank == CULPRIT else [f"rank {CULPRIT}", *fragments]


def creation():
    n1 = 0 if rank == CULPRIT else 8
    expect(culprit_says("n1: must be >= 1, got 0"), lambda: petacomm.TransposePlan(comm, (16, n1)))
    strategy = "fastest" if rank == CULPRIT else "auto"
    expect(
        culprit_says("strategy: unknown strategy 'fastest'", "alltoall"),
        lambda: petacomm.TransposePlan(comm, (16, 8), strategy=strategy),
    )
    mask = np.ones(7 if rank == CULPRIT else 8, bool)
    expect(
        culprit_says("mask: length 7 does not match the plan's n1 = 8"),
        lambda: petacomm.TransposePlan(comm, (16, 8), mask=mask),
    )
    if size & (size - 1):
        expect(
            ["strategy: xor needs a power-of-two number of ranks", str(size)],
            lambda: petacomm.TransposePlan(comm, (16, 8), strategy="xor"),
        )
    expect(["dtype", "int32"], lambda: petacomm.TransposePlan(comm, (16, 8), np.int32))
    # Arguments the binding refuses before the call, on one rank only: that rank's message,
    # the others name it, and none is left waiting in the collective creation.
    mine = rank == CULPRIT
    for fragments, create in (
        (
            ["shape: expected (n0, n1), got (16, 8, 2)"],
            lambda: petacomm.TransposePlan(comm, (16, 8, 2) if mine else (16, 8)),
        ),
        # int() read these as (16, 8), (4, 4), 1 and 16: now refused by name
        (
            ["shape: expected an integer, got 16.5"],
            lambda: petacomm.TransposePlan(comm, (16.5, 8) if mine else (16, 8)),
        ),
        (
            ["shape: expected a sequence of integers, got '44'"],
            lambda: petacomm.TransposePlan(comm, "44" if mine else (16, 8)),
        ),
        (
            ["howmany: expected an integer, got 1.5"],
            lambda: petacomm.TransposePlan(comm, (16, 8), howmany=1.5 if mine else 1),
        ),
        (
            ["grid: expected an integer, got 16.0"],
            lambda: petacomm.PencilPlan(comm, (4, 5, 6), (1, 16.0) if mine else (1, size)),
        ),
        (  # int(nan) said "cannot convert float NaN to integer"
            ["measure_reps: expected an integer, got nan"],
            lambda: petacomm.TransposePlan(comm, (16, 8), measure_reps=np.nan if mine else 3),
        ),
        (  # taken, then the first execution ran for ever
            ["measure_reps: must be in [1, 1000000], got 2147483647"],
            lambda: petacomm.TransposePlan(
                comm, (16, 8), planner="measure", measure_reps=2**31 - 1 if mine else 3
            ),
        ),
        (  # reached the library as 3
            ["measure_reps: must be in [1, 1000000], got 4294967299"],
            lambda: petacomm.TransposePlan(comm, (16, 8), measure_reps=2**32 + 3 if mine else 3),
        ),
        (
            ["dtype: not a numpy dtype: 'nonsense'"],
            lambda: petacomm.TransposePlan(comm, (16, 8), "nonsense" if mine else np.complex128),
        ),
        (
            ["modes: expected an integer, got 1.5"],
            lambda: petacomm.FourierFilter(comm, (2, 8, 8), (1.5, 1) if mine else (1, 1)),
        ),
        (
            ["mask: expected a one-dimensional array, got shape (2, 4)"],
            lambda: petacomm.TransposePlan(comm, (16, 8), mask=np.ones((2, 4)) if mine else None),
        ),
        (
            ["cost: unknown parameter 'nope'"],
            lambda: petacomm.TransposePlan(comm, (16, 8), cost={"nope": 1.0} if mine else None),
        ),
        (
            ["shape: (1180591620717411303424, 8) does not fit 64-bit integers"],
            lambda: petacomm.TransposePlan(comm, (2**70, 8) if mine else (16, 8)),
        ),
        (
            ["shape: expected (n0, n1, n2), got (4, 5)"],
            lambda: petacomm.PencilPlan(comm, (4, 5) if mine else (4, 5, 6), (1, size)),
        ),
        (
            ["variant: unknown variant 'fast'"],
            lambda: petacomm.FourierFilter(
                comm, (2, 8, 8), (1, 1), variant="fast" if mine else "plain"
            ),
        ),
    ):
        expect(culprit_says(*fragments), create, (ValueError, OverflowError))
    # The other byte order on one rank: refused there by name, on every rank together.
    swapped = np.dtype(np.complex128).newbyteorder()
    dtype = swapped if rank == CULPRIT else np.complex128
    mine = [f"dtype {swapped.str}", "byte order", ".astype('complex128')"]
    for create in (
        lambda: petacomm.TransposePlan(comm, (16, 8), dtype),
        lambda: petacomm.PencilPlan(comm, (4, 5, 6), (1, size), dtype),
    ):
        expect(mine if rank == CULPRIT else [f"rank {CULPRIT}", "dtype: unknown dtype"], create)
    expect(
        ["planner: unknown planner 'fast'"],
        lambda: petacomm.TransposePlan(comm, (16, 8), planner="fast"),
    )
    grid = (1, size + 1) if rank == CULPRIT else (1, size)
    expect(culprit_says("grid:"), lambda: petacomm.PencilPlan(comm, (4, 5, 6), grid))
    expect(
        culprit_says("n: expected n_s >= 1 and even n_chi, n_phi"),
        lambda: petacomm.FourierFilter(comm, (2, 8, 7 if rank == CULPRIT else 8), (1, 1)),
    )
    expect(
        ["variant: unknown variant 'fast'"],
        lambda: petacomm.FourierFilter(comm, (2, 8, 8), (1, 1), variant="fast"),
    )


def execution():
    plan = petacomm.TransposePlan(comm, (16, 12), np.complex128)
    good_in, good_out = plan.empty_input(), plan.empty_output()
    good_in[...] = 1 + 2j
    sentinel = np.full(plan.local_output_shape, 7 - 7j)
    mine = rank == CULPRIT

    def run(a_in, a_out):
        return lambda: plan.execute(a_in, a_out)

    out = sentinel.copy()
    wrong = np.zeros((plan.local_input_shape[0] + 1, 12), np.complex128) if mine else good_in
    expect(culprit_says("in: shape", "does not match this rank's local shape"), run(wrong, out))
    bigger = np.zeros((plan.local_input_shape[0], 24), np.complex128)
    strided = bigger[:, ::2] if mine else good_in
    expect(culprit_says("in: not C-contiguous"), run(strided, out))
    expect(
        culprit_says("in: dtype complex64 does not match the plan's complex128"),
        run(good_in.astype(np.complex64) if mine else good_in, out),
    )
    expect(
        culprit_says("in: dtype int64") if mine else culprit_says("in: dtype unknown"),
        run(good_in.real.astype(np.int64) if mine else good_in, out),
    )
    # complex128 in the other byte order: its bytes would be read as this machine's values.
    swapped = good_in.astype(good_in.dtype.newbyteorder())
    expect(
        culprit_says(f"in: dtype {swapped.dtype.str}", "byte order")
        if mine
        else culprit_says("in: dtype unknown"),
        run(swapped if mine else good_in, out),
    )
    readonly = out.copy()
    readonly.flags.writeable = not mine
    expect(culprit_says("out: read-only"), run(good_in, readonly))
    expect(
        culprit_says("in: expected a numpy array, got list") if mine else culprit_says("in:"),
        run(good_in.tolist() if mine else good_in, out),
    )
    assert np.array_equal(out, sentinel), f"rank {rank}: a failed execution wrote the output"
    plan.execute(good_in, good_out)
    assert np.all(good_out == 1 + 2j)
    plan.free()
    expect(["already freed"], lambda: plan.execute(good_in, good_out), PetacommError)
    # The filter: a field of the wrong shape on one rank.
    f = petacomm.FourierFilter(comm, (2, 8, 8), (1, 1))
    field = np.zeros(f.local_shape)
    bad = np.zeros((f.local_shape[0], f.local_shape[1], 9)) if mine else field
    target = np.full(f.local_shape, 3.0)
    expect(culprit_says("in: shape"), lambda: f.apply(bad, target))
    assert np.all(target == 3.0)
    f.free()
    # Pencils: a swap that is not between adjacent layouts.
    pencil = petacomm.PencilPlan(comm, (4, 5, 6), (1, size))
    expect(
        ["Z -> X is not a swap of adjacent layouts"],
        lambda: pencil.execute(pencil.empty("z"), pencil.empty("x"), "z", "x"),
    )
    pencil.free()


def main() -> int:
    creation()
    execution()
    print("errors ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
