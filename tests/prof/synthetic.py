"""A final profile log written without running anything, for report tests at scales no test
machine runs (thousands of ranks) and with awkward content (long names, many size classes).

Every rank r of N sends ``messages`` MPI_Isend to (r+1)%N and (r+7)%N per size class 2**k
for k in 0..classes-1 (each message exactly 2**k bytes), and spends ``mpi_fraction`` of its
wall time in MPI.
"""

from __future__ import annotations

import json
from pathlib import Path

CALLS = ["MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Allreduce", "MPI_Barrier"]
KINDS = ["send", "recv", "req", "coll", "coll"]


def write_log(
    path: Path,
    ranks: int,
    classes: int = 20,
    messages: int = 3,
    region: str = "solve",
    mpi_fraction: float = 0.25,
) -> Path:
    wall = 10**9
    rank_rows, region_rows, call_rows, by_rank, peers = [], [], [], [], []
    for r in range(ranks):
        mpi = int(wall * mpi_fraction * (1 + (r % 7) / 10))
        rank_rows.append([r, f"node{r // 64:04d}", 1000 + r, wall, mpi, 0, 20000, 10**6, 100,
                          0, 0, 0, 0, 0, 0, 10])  # fmt: skip
        region_rows.append([r, "(program)", None, 1, wall, mpi, 0, wall // 2, mpi // 2, 0, 0])
        region_rows.append([r, region, "(program)", 1, wall // 2, mpi // 2, 0, wall // 2,
                            mpi // 2, 0, 10**5])  # fmt: skip
        sent = sum(2 * messages * 2**k for k in range(classes))
        by_rank.append([r, 0, 2 * messages * classes, sent, mpi // 2])
        by_rank.append([r, 3, 1, 8, mpi // 2])
        for peer in ((r + 1) % ranks, (r + 7) % ranks):
            peers.append([r, 0, peer, messages * classes, sent // 2, mpi // 4])
    for k in range(classes):
        n = 2 * messages * ranks
        call_rows.append([region, 0, 2**k, 2**k, n, n * 2**k, n * 1000 * (k + 1), 900, 10**6,
                          ranks, 1000, 10**6])  # fmt: skip
    call_rows.append(["(program)", 3, 8, 8, ranks, 8 * ranks, ranks * 10**5, 10**4, 10**6,
                      ranks, 10**5, 10**5])  # fmt: skip
    log = {
        "schema": "petacomm.profile",
        "schema_version": 1,
        "complete": True,
        "created_unix_s": 1700000000,
        "command": ["./app", "--size", "large"],
        "mpi_library": "Synthetic MPI 1.0",
        "thread_level": "single",
        "ranks": ranks,
        "nodes": (ranks + 63) // 64,
        "wall_ns": wall,
        "profiler": {"version": "test", "table_capacity": 57344},
        "calls": CALLS,
        "call_kinds": KINDS,
        "rank_summary": {
            "columns": [
                "rank",
                "host",
                "pid",
                "wall_ns",
                "mpi_ns",
                "io_ns",
                "rss_kib",
                "init_ns",
                "events",
                "coarsened_peer",
                "coarsened_size",
                "coarsened_call",
                "requests_untracked",
                "requests_incomplete",
                "region_errors",
                "keys",
            ],  # fmt: skip
            "rows": rank_rows,
        },
        "region_summary": {
            "columns": [
                "rank",
                "region",
                "parent",
                "entries",
                "wall_ns",
                "mpi_ns",
                "io_ns",
                "excl_wall_ns",
                "excl_mpi_ns",
                "excl_io_ns",
                "lbst_ns",
            ],  # fmt: skip
            "rows": region_rows,
        },
        "call_summary": {
            "columns": [
                "region",
                "call",
                "size",
                "size_max",
                "count",
                "bytes",
                "time_ns",
                "min_ns",
                "max_ns",
                "ranks",
                "rank_time_min_ns",
                "rank_time_max_ns",
            ],  # fmt: skip
            "rows": call_rows,
        },
        "call_by_rank": {"columns": ["rank", "call", "count", "bytes", "time_ns"], "rows": by_rank},
        "peer_summary": {
            "columns": ["rank", "call", "peer", "count", "bytes", "time_ns"],
            "rows": peers,
        },
    }
    path.write_text(json.dumps(log))
    return path
