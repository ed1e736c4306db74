"""MPI worker: plan setup after the collective cuts. The fused reduction's statistics
(int64 key range near 2**62, counts, min/avg/max) equal values computed here with mpi4py,
the per-rank setup clock is consistent, every strategy's messages and bytes per execution
(stats()) equal a plain count from the key sets (traffic_reference), auto chose the
cheapest candidate its describe() lists, results match a dense reference, and bad or
disagreeing arguments still fail on every rank."""

import os
import sys

import numpy as np
from mpi4py import MPI
from traffic_reference import spread as min_avg_max
from traffic_reference import traffic

from petacomm.errors import PetacommError
from petacomm.xchg import SparseReducePlan, strategy_names

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
rng = np.random.default_rng([11, rank])
base = 1 << 62
if size > 2 and rank == 2:
    keys = np.zeros(0, dtype=np.int64)  # a rank without keys
else:
    keys = base + rng.integers(0, 3000, 700 + 37 * rank)  # repeats, near 2**62
    keys = np.concatenate([keys, [base - 5, 123]])  # on every rank holding keys
everyone = comm.allgather(keys)
union = np.unique(np.concatenate(everyone))

for strategy in strategy_names():
    plan = SparseReducePlan(comm, keys, strategy=strategy, k=1, chunk_keys=512)
    info = plan.describe()
    # Traffic of one execution of 3 float64 per key, against the plain count.
    counted = plan.stats(np.float64, 3)
    hub_threshold = info.get("hub_threshold", 0)
    expected = [
        traffic(
            info["strategy"],
            everyone,
            r,
            elem_bytes=24,
            chunk_keys=512,
            hub=hub_threshold,
            node_size=int(os.environ.get("PETACOMM_NODE_SIZE", size)),
        )
        for r in range(size)
    ]
    for i, field in enumerate(("messages", "bytes")):
        lo, avg, hi = min_avg_max([e[i] for e in expected])
        got = counted[field]  # exact counts; 2 (p-1)/p N for allreduce rounds in the last bit
        for have, want in ((got["min"], lo), (got["avg"], avg), (got["max"], hi)):
            assert abs(have - want) <= 1e-9 * max(1.0, want), (strategy, field, got, lo, avg, hi)
    if strategy == "auto":  # the cheapest candidate, ties to the earlier in registry order
        listed = [
            (s["predicted_execute_seconds"], i, name)
            for i, (name, s) in enumerate(info["strategies"].items())
            if s["candidate"]
        ]
        assert info["strategy"] == min(listed)[2], (info["strategy"], listed)
    st = info["statistics"]
    for name, local in (("n_local", keys.size), ("n_unique", np.unique(keys).size)):
        lo, hi = comm.allreduce(local, op=MPI.MIN), comm.allreduce(local, op=MPI.MAX)
        avg = comm.allreduce(local) / size
        assert (st[name]["min"], st[name]["max"]) == (lo, hi), (strategy, name, st[name])
        assert abs(st[name]["avg"] - avg) <= 1e-6 * avg, (
            strategy,
            name,
            st[name],
            avg,
        )  # JSON: 6 digits
    assert st["key_min"] == int(union.min()) and st["key_max"] == int(union.max()), st
    # Strategies without discovery (dense-allreduce, range, butterfly) do not learn the
    # distinct keys.
    assert st["sharing_known"] == (strategy not in ("dense-allreduce", "range", "butterfly")), st
    if st["sharing_known"]:
        assert st["distinct_keys"] == union.size, (strategy, st["distinct_keys"], union.size)
    setup = info["setup"]
    assert set(setup) >= {"wall_seconds", "cpu_seconds", "compute_seconds", "mpi_seconds"}
    assert 0 <= setup["compute_seconds"] <= setup["cpu_seconds"] + 1e-9, setup
    assert info["setup_seconds"] == setup["wall_seconds"]
    spread = plan.stats(np.float64, 1)
    for field in ("wall_seconds", "compute_seconds", "mpi_seconds"):
        s = spread["setup"][field]
        assert 0 <= s["min"] <= s["avg"] + 1e-12 and s["avg"] <= s["max"] + 1e-12, (field, s)
    assert spread["setup_seconds"] == spread["setup"]["wall_seconds"]["max"]
    wall = comm.allreduce(setup["wall_seconds"], op=MPI.MAX)  # JSON keeps 6 digits
    assert abs(spread["setup"]["wall_seconds"]["max"] - wall) <= 1e-5 * wall, (spread, wall)
    values = np.ones(keys.size)
    plan.execute(values)
    # Sum of ones: every position of a key on any rank contributes one.
    held, counts = np.unique(np.concatenate(everyone), return_counts=True)
    expect = counts[np.searchsorted(held, keys)].astype(float)
    assert np.array_equal(values, expect), (strategy, values[:5], expect[:5])
    plan.free()


# Disagreeing options and a bad key still fail together, from one reduction, naming the
# rank at fault (and the option).
for make_bad, fragments in (
    (
        lambda: dict(chunk_keys=512 if rank == size - 1 else 1024),
        ["chunk_keys", f"rank {size - 1}", "differs from rank 0's"],
    ),
    (
        lambda: dict(keys=np.array([-1]) if rank == size - 1 else keys),
        ["negative"] if rank == size - 1 else [f"invalid arguments on rank {size - 1}"],
    ),
):
    options = make_bad()
    chosen = options.pop("keys", keys)
    if size == 1 and "chunk_keys" in fragments:
        continue
    try:
        SparseReducePlan(comm, chosen, **options)
    except (PetacommError, ValueError) as err:
        assert all(f in str(err) for f in fragments), (fragments, str(err))
    else:
        raise AssertionError(f"no error for {fragments}")
print("setup ok", flush=True)
sys.exit(0)
