"""MPI worker: thousands of unsorted keys per rank with repeats, spread over small keys and
keys near 2**62 (so the key index sorts over many bits), reduced by every strategy and
compared with a plain numpy reduction. On one rank each key's sum must equal, bit for bit,
the sum of its positions' values in position order (np.add.at): the documented combine
order, which an unstable sort of the keys breaks."""

import numpy as np
from mpi4py import MPI

import petacomm
from petacomm.xchg import strategy_names

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
HIGH = 2**62


def keys_of(r: int) -> np.ndarray:
    rng = np.random.default_rng([11, r])
    n = 3000 + 137 * r
    keys = rng.integers(0, 2500, n)
    keys[::3] = HIGH + rng.integers(-40, 40, keys[::3].size)
    return keys.astype(np.int64)


def values_of(r: int, n: int) -> np.ndarray:
    return np.random.default_rng([12, r]).uniform(-1.0, 1.0, (n, 2))


all_keys = [keys_of(r) for r in range(size)]
everything = np.concatenate(all_keys)
distinct, where = np.unique(everything, return_inverse=True)
totals = np.zeros((distinct.size, 2))
np.add.at(totals, where, np.concatenate([values_of(r, k.size) for r, k in enumerate(all_keys)]))
mine = all_keys[rank]
expected = totals[np.searchsorted(distinct, mine)]
for strategy in strategy_names():
    values = values_of(rank, mine.size)
    with petacomm.SparseReducePlan(comm, mine, strategy=strategy, deterministic=True) as plan:
        plan.execute(values)
    if size == 1:
        assert np.array_equal(values, expected), f"{strategy}: not the position-order sums"
    else:
        assert np.allclose(values, expected, rtol=1e-12, atol=1e-12), strategy
print(f"rank {rank}: repeats ok", flush=True)
