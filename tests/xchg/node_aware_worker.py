"""MPI worker (run with PETACOMM_NODE_SIZE): node-aware against directory on CMB-like keys
(petacomm.datasets). Messages between nodes per execution: node-aware's from the plans'
describe(), directory's counted here from the keys (pairs of ranks on different nodes that
share a key), node-aware's also counted here (pairs of nodes that share a key). Results:
deterministic node-aware bitwise equal to directory (floats), non-deterministic within
rounding, integers exact. Prints one JSON line on rank 0 with the counts, 'node-aware ok'
on every rank."""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

from petacomm.datasets import make
from petacomm.xchg import SparseReducePlan

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
node_size = int(os.environ["PETACOMM_NODE_SIZE"])
node_of = [r // node_size for r in range(size)]  # virtual nodes: consecutive ranks

gen = make("cmb", size, nside=16, samples_per_rank=4000)
keysets = gen.all_keys()
keys = keysets[rank]

# The plain counts, from every rank's keys.
holders: dict[int, set[int]] = {}
for r, ks in enumerate(keysets):
    for key in np.unique(ks).tolist():
        holders.setdefault(key, set()).add(r)
rank_pairs, node_pairs = set(), set()
for hs in holders.values():
    for a in hs:
        for b in hs:
            if a != b:
                rank_pairs.add((a, b))
                if node_of[a] != node_of[b]:
                    node_pairs.add((node_of[a], node_of[b]))
directory_between = sum(node_of[a] != node_of[b] for a, b in rank_pairs)


def run(strategy, deterministic, dtype, k=3):
    plan = SparseReducePlan(comm, keys, strategy=strategy, deterministic=deterministic, k=k)
    rng = np.random.default_rng(rank)
    if np.dtype(dtype).kind == "i":
        values = rng.integers(-1000, 1000, (keys.size, k)).astype(dtype)
    else:
        values = rng.uniform(0.75, 1.25, (keys.size, k)).astype(dtype)
    plan.execute(values)
    info = plan.describe()
    messages = plan.stats(dtype, k)["messages"]["avg"] * size  # all ranks' sends
    plan.free()
    return values, info, messages


directory, _, directory_messages = run("directory", False, np.float64)
assert directory_messages == len(rank_pairs), (directory_messages, len(rank_pairs))
exact, info, _ = run("node-aware", True, np.float64)
assert info["strategy"] == "node-aware" and info["nodes"] == (size - 1) // node_size + 1, info
assert exact.tobytes() == directory.tobytes(), "deterministic node-aware differs from directory"
between = comm.allreduce(info["inter_node_messages"])
assert between == len(node_pairs), (between, len(node_pairs))
partial, info_partial, _ = run("node-aware", False, np.float64)
assert np.allclose(partial, directory, rtol=1e-12, atol=0), "node partials beyond rounding"
assert comm.allreduce(info_partial["inter_node_messages"]) == len(node_pairs)
integers, _, _ = run("directory", False, np.int64)
integers_node, _, _ = run("node-aware", False, np.int64)
assert np.array_equal(integers, integers_node), "integer sums differ"

if rank == 0:
    print(
        json.dumps(
            {
                "ranks": size,
                "node_size": node_size,
                "directory_inter_node_messages": directory_between,
                "node_aware_inter_node_messages": between,
                "directory_messages": len(rank_pairs),
                "reason": info["reason"],
            }
        ),
        flush=True,
    )
print("node-aware ok", flush=True)
sys.exit(0)
