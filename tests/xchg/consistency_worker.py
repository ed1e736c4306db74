"""MPI worker: the offline statistics and predictions (petacomm.xchg.offline, no MPI) equal
what a plan computes inside the job on the same keys."""

import math
import sys

import numpy as np
from mpi4py import MPI

from petacomm.datasets import make
from petacomm.xchg import SparseReducePlan, offline
from petacomm.xchg.cost import cost_params, resolve_model

comm = MPI.COMM_WORLD
gen = make("cmb", comm.size, nside=32, samples_per_rank=3000)
keysets = gen.all_keys()
plan = SparseReducePlan(comm, keysets[comm.rank], strategy="auto", k=3)
info = plan.describe()
stats = offline.statistics(keysets)
predicted = offline.predict(stats, cost_params(resolve_model(None), comm.size), elem_bytes=24)
statistics = info["statistics"]
for name, field in (("n_unique", "n_unique"), ("partners", "pair_partners")):
    column = stats.field(field)
    assert statistics[name]["max"] == column.max(), (name, statistics[name], column)
    assert statistics[name]["min"] == column.min(), (name, statistics[name], column)
assert statistics["distinct_keys"] == stats.global_stats.distinct_keys
for strategy, entry in predicted.items():
    inside = info["strategies"][strategy]["predicted_execute_seconds"]
    assert math.isclose(inside, entry["execute_seconds"], rel_tol=1e-9), (strategy, inside, entry)
values = np.ones((keysets[comm.rank].size, 3))
plan.execute(values)
plan.free()
print("consistent", info["strategy"], flush=True)
sys.exit(0)
