"""MPI worker: every strategy x dtype x operator x k in {1, 3} on several key sets against a
reference every rank computes locally; deterministic plans must agree bitwise across
strategies. Prints 'matrix ok <executions>' on every rank, raises on the first mismatch."""

import sys

import numpy as np
from mpi4py import MPI

import petacomm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
HIGH = 1 << 62
STRATEGIES = ("dense-allreduce", "allgather", "directory", "owner", "hub-split", "auto")
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


def check(got, want, dtype, label):
    if np.dtype(dtype).kind in "iu":
        ok = np.array_equal(got, want)
    else:
        ok = np.allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    if not ok:
        raise AssertionError(f"rank {rank}: {label}: got {got.ravel()[:6]} want {want.ravel()[:6]}")


def main() -> int:
    executions = 0
    references: dict = {}
    for scenario in ("mixed", "all-shared", "none-shared", "one-key", "empty"):
        keys = keys_for(scenario, rank)
        bitwise: dict = {}
        for strategy in STRATEGIES:
            for deterministic in (True, False):
                plan = petacomm.SparseReducePlan(
                    comm, keys, strategy=strategy, deterministic=deterministic, chunk_keys=16
                )
                for dtype in DTYPES:
                    for op in OPS:
                        if np.dtype(dtype).kind == "c" and op in ("min", "max"):
                            continue
                        for k in (1, 3):
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
                            check(values.reshape(-1, k), references[case], dtype, label)
                            if deterministic:
                                first = bitwise.setdefault(case, values.tobytes())
                                if first != values.tobytes():
                                    raise AssertionError(f"rank {rank}: {label}: not bitwise equal")
                plan.free()
    print(f"matrix ok {executions}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
