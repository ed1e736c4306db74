"""MPI worker: every registered strategy (and auto) x dtype, with operators and k in
{1, 3} rotating over the plans, on several key sets against a reference every rank computes
locally, folding each key's values
in the documented order (holders by rank, positions in order). Where the order is
documented, the floats must be bitwise equal to the reference: always for allgather,
directory and owner, with deterministic=True for every strategy, and without it for
hub-split's keys held by at most its threshold of ranks; elsewhere (MPI_Allreduce's order)
within rounding. Prints 'matrix ok <executions> strategies=<names>' on every rank, raises
on the first mismatch."""

import sys

import numpy as np
from mpi4py import MPI

import petacomm
from petacomm.xchg import strategy_names

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
HIGH = 1 << 62
TOP = (1 << 63) - 1  # the largest valid key
STRATEGIES = strategy_names()  # "auto" and every registered strategy
# Strategies that reduce every key in rank order whatever `deterministic` says.
ALWAYS_ORDERED = {"allgather", "directory", "owner"}
DTYPES = (np.float32, np.float64, np.int32, np.int64, np.complex64, np.complex128)
OPS = ("sum", "prod", "min", "max")
UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}
TOLERANCE = {np.float32: 1e-5, np.complex64: 1e-5, np.float64: 1e-12, np.complex128: 1e-12}


def keys_for(scenario: str, r: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * r + len(scenario))
    if scenario == "mixed":  # repeats, an empty rank, keys near 2**62, one key everywhere
        if size > 1 and r == 1:
            return np.zeros(0, dtype=np.int64)
        keys = rng.integers(0, 120, 30 + 5 * r)
        keys[::4] = HIGH + rng.integers(-4, 5, keys[::4].size)
        return np.concatenate([keys, [77, keys[0]]]).astype(np.int64)
    if scenario == "all-shared":
        return rng.permutation(40).astype(np.int64)
    if scenario == "none-shared":
        return (r * 1000 + 3 * np.arange(25)).astype(np.int64)
    if scenario == "one-key":
        return np.full(3, HIGH + 5, dtype=np.int64)
    if scenario == "top-key":  # only the largest valid key, everywhere
        return np.full(2, TOP, dtype=np.int64)
    if scenario == "full-span":  # the widest range of keys: 0 to 2**63 - 1
        return np.array([0, 7 + r, TOP], dtype=np.int64)
    return np.zeros(0, dtype=np.int64)  # empty everywhere


def values_for(r: int, n: int, k: int, dtype, op: str) -> np.ndarray:
    rng = np.random.default_rng(7 + r)
    if np.dtype(dtype).kind in "iu":
        low, high = (-2, 3) if op == "prod" else (-1000, 1001)
        return rng.integers(low, high, (n, k)).astype(dtype)
    out = rng.uniform(0.75, 1.25, (n, k))
    if np.dtype(dtype).kind == "c":
        out = out + 1j * rng.uniform(0, 0.25, (n, k))
    return out.astype(dtype)


def identity(dtype, op):
    dt = np.dtype(dtype)
    if op == "sum":
        return dt.type(0)
    if op == "prod":
        return dt.type(1)
    if dt.kind == "f":
        return dt.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dt)
    return dt.type(info.max if op == "min" else info.min)


def reference(scenario: str, k: int, dtype, op: str) -> np.ndarray:
    ufunc = UFUNC[op]
    table: dict[int, np.ndarray] = {}
    for r in range(size):
        keys = keys_for(scenario, r)
        values = values_for(r, keys.size, k, dtype, op)
        unique, inverse = np.unique(keys, return_inverse=True)
        local = np.full((unique.size, k), identity(dtype, op), dtype=dtype)
        ufunc.at(local, inverse, values)
        for j, key in enumerate(unique.tolist()):
            table[key] = ufunc(table[key], local[j]) if key in table else local[j].copy()
    mine = keys_for(scenario, rank)
    return np.array([table[key] for key in mine.tolist()], dtype=dtype).reshape(mine.size, k)


def multiplicity(scenario: str) -> dict[int, int]:
    """Ranks holding each key."""
    held: dict[int, int] = {}
    for r in range(size):
        for key in np.unique(keys_for(scenario, r)).tolist():
            held[key] = held.get(key, 0) + 1
    return held


def check(got, want, dtype, label, bitwise, exact):
    """bitwise: a boolean mask of the rows that must equal `exact` bit for bit (the
    reference, or for complex products, whose rounding numpy and C++ need not share, the
    first strategy's result)."""
    if np.dtype(dtype).kind in "iu":
        ok = np.array_equal(got, want)
    else:
        ok = np.allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
        ok = ok and got[bitwise].tobytes() == exact[bitwise].tobytes()
    if not ok:
        raise AssertionError(f"rank {rank}: {label}: got {got.ravel()[:6]} want {want.ravel()[:6]}")


def ordered_rows(plan, deterministic: bool, keys, held) -> np.ndarray:
    """The positions whose reduction order the documentation fixes for this plan."""
    name = plan.strategy
    if deterministic or name in ALWAYS_ORDERED:
        return np.ones(keys.size, dtype=bool)
    if name == "hub-split":  # keys on more than the threshold go through MPI_Allreduce
        threshold = plan.describe()["hub_threshold"]
        return np.array([held[k] <= threshold for k in keys.tolist()], dtype=bool)
    return np.zeros(keys.size, dtype=bool)  # dense-allreduce: MPI's order


def combinations(dtype, turn: int) -> list[tuple[str, int]]:
    """Two of the dtype's (operator, k) combinations, rotating with `turn`: over the
    strategies and modes every combination of every dtype is executed (the native matrix
    runs every combination on every plan; this one checks the binding and numpy's results)."""
    every = [
        (op, k)
        for op in OPS
        for k in (1, 3)
        if not (np.dtype(dtype).kind == "c" and op in ("min", "max"))
    ]
    return [every[turn % len(every)], every[(turn + len(every) // 2) % len(every)]]


def main() -> int:
    executions = 0
    references: dict = {}
    first_exact: dict = {}  # complex products: the first fully ordered result per case
    for scenario in ("mixed", "all-shared", "none-shared", "one-key", "empty"):
        keys = keys_for(scenario, rank)
        held = multiplicity(scenario)
        for s, strategy in enumerate(STRATEGIES):
            for deterministic in (True, False):
                plan = petacomm.SparseReducePlan(
                    comm, keys, strategy=strategy, deterministic=deterministic, chunk_keys=16
                )
                bitwise = ordered_rows(plan, deterministic, keys, held)
                variant = 2 * s + int(deterministic)
                for d, dtype in enumerate(DTYPES):
                    for op, k in combinations(dtype, variant + d):
                        values = values_for(rank, keys.size, k, dtype, op)
                        if k == 1:
                            values = values.reshape(-1)
                        if executions % 2:
                            plan.execute(values, op)
                        else:
                            plan.execute_begin(values, op)
                            plan.execute_end()
                        executions += 1
                        case = (scenario, k, np.dtype(dtype).name, op)
                        if case not in references:
                            references[case] = reference(scenario, k, dtype, op)
                        label = f"{scenario}/{strategy}/det={deterministic}/{case}"
                        got, exact = values.reshape(-1, k), references[case]
                        if np.dtype(dtype).kind == "c" and op == "prod":
                            if bitwise.all():
                                exact = first_exact.setdefault(case, got.copy())
                            else:
                                exact = first_exact.get(case, got)
                        check(got, references[case], dtype, label, bitwise, exact)
                plan.free()
    # Sends throttled to one or two in flight (binding from 3 ranks on, auto's discovery
    # too): the same sums, exact in int64.
    for scenario in ("mixed", "all-shared"):
        keys = keys_for(scenario, rank)
        want = reference(scenario, 3, np.int64, "sum")
        for strategy in STRATEGIES:
            # The window is local: ranks may pass different ones (here 0, 1 or 2 by rank).
            for window in (1, 2, rank % 3):
                plan = petacomm.SparseReducePlan(comm, keys, strategy=strategy, send_window=window)
                assert plan.describe()["send_window"] == window
                values = values_for(rank, keys.size, 3, np.int64, "sum")
                plan.execute(values, "sum")
                executions += 1
                label = f"{scenario}/{strategy}/send_window={window}"
                check(values.reshape(-1, 3), want, np.int64, label, None, None)
                plan.free()
    # The ends of the key range: every strategy, and the range the statistics report (a
    # key set of 2**63 - 1 alone was once taken for no keys at all, and `range` then
    # computed a negative owner rank).
    for scenario, span in (("top-key", (TOP, TOP)), ("full-span", (0, TOP))):
        keys = keys_for(scenario, rank)
        want = reference(scenario, 3, np.int64, "sum")
        for strategy in STRATEGIES:
            plan = petacomm.SparseReducePlan(comm, keys, strategy=strategy)
            described = plan.describe()
            statistics = described.get("statistics") or {}
            if "key_min" in statistics:
                got_span = (statistics["key_min"], statistics["key_max"])
                assert got_span == span, f"{scenario}/{strategy}: key range {got_span}"
            if strategy == "auto":  # the range's width, 2**63 at most, in the reason
                width = f"dense range {span[1] - span[0] + 1} keys"
                assert width in described["reason"], described["reason"]
            values = values_for(rank, keys.size, 3, np.int64, "sum")
            plan.execute(values, "sum")
            executions += 1
            check(values.reshape(-1, 3), want, np.int64, f"{scenario}/{strategy}", None, None)
            plan.free()
    print(f"matrix ok {executions} strategies={','.join(STRATEGIES)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
