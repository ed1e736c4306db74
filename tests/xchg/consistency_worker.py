"""MPI worker: the offline statistics and predictions (petacomm.xchg.offline, no MPI) equal
what a plan computes inside the job on the same keys, with a machine model whose ping-pong
fit has two pieces (the plan prices its messages by size with the same curve). The nodes
are this machine (all ranks) or PETACOMM_NODE_SIZE's virtual nodes, which the offline
statistics are told."""

import math
import os
import sys

import numpy as np
from mpi4py import MPI

from petacomm.datasets import make
from petacomm.model import MachineModel, OperationModel, Piece
from petacomm.xchg import SparseReducePlan, offline
from petacomm.xchg.cost import cost_params, p2p_curve

comm = MPI.COMM_WORLD
pieces = [Piece(0, 2048, 0.44e-6, 1 / 3e9, 1.0, 5), Piece(2048, 1 << 30, 2.99e-6, 1 / 11e9, 1.0, 5)]
model = MachineModel({"pingpong": OperationModel("pingpong", 2, pieces)}, source="two pieces")
gen = make("cmb", comm.size, nside=32, samples_per_rank=3000)
keysets = gen.all_keys()
node_size = int(os.environ.get("PETACOMM_NODE_SIZE", comm.size))
curve = p2p_curve(model)


def check_plan(deterministic, keysets=keysets):
    """A plan's statistics and predictions against the offline ones. A deterministic plan
    sends every holder's value between nodes (no node partials), so node-aware's price
    comes from other node statistics (local and remote holders per key)."""
    plan = SparseReducePlan(
        comm, keysets[comm.rank], strategy="auto", k=3, model=model, deterministic=deterministic
    )
    info = plan.describe()
    used = info["cost"]["p2p_curve"]
    assert [(c["from_bytes"], c["alpha"], c["beta"]) for c in used] == [
        (curve.from_bytes[i], curve.alpha[i], curve.beta[i]) for i in range(curve.pieces)
    ], used
    stats = offline.statistics(keysets, node_size=node_size, node_partials=not deterministic)
    predicted = offline.predict(stats, cost_params(model, comm.size), elem_bytes=24, p2p=curve)
    statistics = info["statistics"]
    for name, field in (("n_unique", "n_unique"), ("partners", "pair_partners")):
        column = stats.field(field)
        assert statistics[name]["max"] == column.max(), (name, statistics[name], column)
        assert statistics[name]["min"] == column.min(), (name, statistics[name], column)
    assert statistics["distinct_keys"] == stats.global_stats.distinct_keys
    for strategy, entry in predicted.items():
        # Setup prices the directory's messages home and its replies (each key's home,
        # the reply ints per shared key) as the offline count does.
        for phase in ("execute", "setup"):
            inside = info["strategies"][strategy][f"predicted_{phase}_seconds"]
            assert math.isclose(inside, entry[f"{phase}_seconds"], rel_tol=1e-9), (
                deterministic,
                strategy,
                phase,
                inside,
                entry,
            )
        for figure in ("messages", "bytes"):
            inside = info["strategies"][strategy][f"predicted_{figure}"]
            assert math.isclose(inside, entry[figure], rel_tol=1e-12, abs_tol=1e-9), (
                deterministic,
                strategy,
                figure,
            )
    assert info["strategies"]["node-aware"]["candidate"] is True
    return plan, info


check_plan(deterministic=True)[0].free()
# Keys also near 2^62: their chunks span more than the planner counts (2^23), so both sides
# estimate the dense reduction's chunks (they once differed: 18 messages against 150).
wide = [np.concatenate([k, [(1 << 62) + 5, (1 << 62) + 9 + r]]) for r, k in enumerate(keysets)]
check_plan(False, wide)[0].free()
plan, info = check_plan(deterministic=False)
values = np.ones((keysets[comm.rank].size, 3))
plan.execute(values)
plan.free()
print("consistent", info["strategy"], flush=True)
sys.exit(0)
