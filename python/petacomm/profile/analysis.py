"""What the reports show, computed from a :class:`~petacomm.profile.log.Profile`.

All times returned are seconds, sizes bytes. Nothing here draws or prints.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from petacomm.profile.log import PEER_NONE, Profile

NS = 1e-9
# Calls whose partner receives the bytes recorded (the sender's view of the matrix).
SEND_KINDS = {"send", "sendrecv", "rma_send"}
RECV_KINDS = {"recv", "rma_recv"}


@dataclass(frozen=True)
class RankTimes:
    rank: int
    host: str
    wall: float
    mpi: float
    io: float
    rss_kib: int

    @property
    def calc(self) -> float:
        return max(self.wall - self.mpi - self.io, 0.0)


def imbalance(values: list[float]) -> float:
    """(max - mean) / max, in percent: 0 when perfectly balanced."""
    if not values:
        return 0.0
    top = max(values)
    return 0.0 if top <= 0 else 100.0 * (top - sum(values) / len(values)) / top


def rank_times(p: Profile) -> list[RankTimes]:
    return sorted(
        (
            RankTimes(
                int(r["rank"]),
                str(r["host"]),
                r["wall_ns"] * NS,
                r["mpi_ns"] * NS,
                r["io_ns"] * NS,
                int(r["rss_kib"]),
            )
            for r in p.rank_rows
        ),
        key=lambda t: t.rank,
    )


@dataclass(frozen=True)
class Totals:
    ranks: int
    ranks_reported: int
    nodes: int
    wall: float  # slowest rank
    mpi: float  # summed over ranks
    io: float
    calc: float
    cpu: float  # summed wall over ranks
    calc_imbalance: float  # percent
    mpi_imbalance: float
    rss_max_kib: int

    @property
    def mpi_percent(self) -> float:
        return 100.0 * self.mpi / self.cpu if self.cpu > 0 else 0.0

    @property
    def io_percent(self) -> float:
        return 100.0 * self.io / self.cpu if self.cpu > 0 else 0.0

    @property
    def calc_percent(self) -> float:
        return 100.0 * self.calc / self.cpu if self.cpu > 0 else 0.0


def totals(p: Profile) -> Totals:
    rt = rank_times(p)
    return Totals(
        ranks=p.ranks,
        ranks_reported=len(rt),
        nodes=p.nodes or len({t.host for t in rt}),
        wall=max((t.wall for t in rt), default=p.wall_ns * NS),
        mpi=sum(t.mpi for t in rt),
        io=sum(t.io for t in rt),
        calc=sum(t.calc for t in rt),
        cpu=sum(t.wall for t in rt),
        calc_imbalance=imbalance([t.calc for t in rt]),
        mpi_imbalance=imbalance([t.mpi for t in rt]),
        rss_max_kib=max((t.rss_kib for t in rt), default=0),
    )


@dataclass(frozen=True)
class RegionStats:
    name: str
    parent: str | None
    ranks: int
    entries: int  # summed over ranks
    wall_mean: float
    wall_max: float
    mpi_mean: float
    io_mean: float
    calc_mean: float
    lbst_mean: float
    excl_mpi_mean: float
    imbalance: float  # of wall time across ranks, percent


def regions(p: Profile) -> list[RegionStats]:
    by_name: dict[str, list[dict]] = defaultdict(list)
    order: list[str] = []
    for row in p.region_rows:
        if row["region"] not in by_name:
            order.append(row["region"])
        by_name[row["region"]].append(row)
    out = []
    for name in order:
        rows = by_name[name]
        n = len(rows)
        walls = [r["wall_ns"] * NS for r in rows]
        mpi = [r["mpi_ns"] * NS for r in rows]
        io = [r["io_ns"] * NS for r in rows]
        out.append(
            RegionStats(
                name=name,
                parent=rows[0].get("parent"),
                ranks=n,
                entries=sum(int(r["entries"]) for r in rows),
                wall_mean=sum(walls) / n,
                wall_max=max(walls),
                mpi_mean=sum(mpi) / n,
                io_mean=sum(io) / n,
                calc_mean=sum(max(w - m - i, 0.0) for w, m, i in zip(walls, mpi, io, strict=True))
                / n,
                lbst_mean=sum(r.get("lbst_ns", 0) for r in rows) * NS / n,
                excl_mpi_mean=sum(r.get("excl_mpi_ns", r["mpi_ns"]) for r in rows) * NS / n,
                imbalance=imbalance(walls),
            )
        )
    return out


@dataclass(frozen=True)
class CallStats:
    call: str
    kind: str
    count: int
    bytes: int
    time: float  # summed over ranks
    ranks: int  # ranks that made the call
    rank_time_min: float
    rank_time_max: float
    min_call: float
    max_call: float

    @property
    def avg_bytes(self) -> float:
        return self.bytes / self.count if self.count else 0.0

    @property
    def avg_time(self) -> float:
        return self.time / self.count if self.count else 0.0


def calls(p: Profile, region: str | None = None, include_posix: bool = True) -> list[CallStats]:
    """Every call (no cut-off), by total time, largest first."""
    agg: dict[str, dict] = {}
    for row in p.call_rows:
        if region is not None and row["region"] != region:
            continue
        if not include_posix and p.kind(row["call"]) == "posix":
            continue
        a = agg.setdefault(
            row["call"], {"count": 0, "bytes": 0, "time": 0, "min": math.inf, "max": 0}
        )
        a["count"] += row["count"]
        a["bytes"] += row["bytes"]
        a["time"] += row["time_ns"]
        if row["time_ns"] > 0:
            a["min"] = min(a["min"], row.get("min_ns", 0))
        a["max"] = max(a["max"], row.get("max_ns", 0))
    per_rank: dict[str, list[float]] = defaultdict(list)
    if region is None and p.call_rank_rows is not None:
        for row in p.call_rank_rows:
            per_rank[row["call"]].append(row["time_ns"] * NS)
    out = []
    for name, a in agg.items():
        rt = per_rank.get(name, [])
        out.append(
            CallStats(
                call=name,
                kind=p.kind(name),
                count=a["count"],
                bytes=a["bytes"],
                time=a["time"] * NS,
                ranks=len(rt),
                rank_time_min=min(rt) if rt else 0.0,
                rank_time_max=max(rt) if rt else 0.0,
                min_call=0.0 if a["min"] is math.inf else a["min"] * NS,
                max_call=a["max"] * NS,
            )
        )
    return sorted(out, key=lambda c: (-c.time, c.call))


@dataclass(frozen=True)
class SizeBin:
    size: int
    size_max: int
    count: int
    bytes: int
    time: float

    @property
    def avg_time(self) -> float:
        return self.time / self.count if self.count else 0.0

    @property
    def avg_size(self) -> float:
        return self.bytes / self.count if self.count else float(self.size)


def sizes(p: Profile, call: str) -> list[SizeBin]:
    """The size classes of one call (exact sizes up to the profiler's bound, then bins)."""
    agg: dict[tuple[int, int], list] = {}
    for row in p.call_rows:
        if row["call"] != call:
            continue
        a = agg.setdefault((row["size"], row["size_max"]), [0, 0, 0])
        a[0] += row["count"]
        a[1] += row["bytes"]
        a[2] += row["time_ns"]
    return [SizeBin(lo, hi, c, b, t * NS) for (lo, hi), (c, b, t) in sorted(agg.items())]


def log2_histogram(bins: list[SizeBin]) -> list[tuple[int, int, int]]:
    """(lower bound, count, bytes) per power-of-two class: 0, 1, 2-3, 4-7, ..."""
    out: dict[int, list[int]] = {}
    for b in bins:
        lo = 0 if b.size <= 0 else 1 << (int(b.size).bit_length() - 1)
        a = out.setdefault(lo, [0, 0])
        a[0] += b.count
        a[1] += b.bytes
    return [(lo, c, by) for lo, (c, by) in sorted(out.items())]


@dataclass
class Matrix:
    """Sent bytes and messages from rank (row) to rank (column), possibly in blocks of ranks."""

    bytes: np.ndarray
    counts: np.ndarray
    block: int  # ranks per row/column
    ranks: int
    source: str  # which calls contributed

    def labels(self) -> list[str]:
        n = self.bytes.shape[0]
        if self.block == 1:
            return [str(i) for i in range(n)]
        return [f"{i * self.block}-{min((i + 1) * self.block, self.ranks) - 1}" for i in range(n)]


def matrix(p: Profile, max_cells: int = 128) -> Matrix | None:
    """The communication matrix from point-to-point and one-sided partner records.

    Above ``max_cells`` ranks, ranks are grouped in consecutive blocks so that the matrix
    stays readable at thousands of ranks. None when the log has no partner records.
    """
    if p.peer_rows is None:
        return None
    n = p.ranks
    block = max(1, math.ceil(n / max_cells))
    cells = math.ceil(n / block)
    by = np.zeros((cells, cells), dtype=np.float64)
    cnt = np.zeros((cells, cells), dtype=np.float64)
    used_recv = False
    senders = [r for r in p.peer_rows if p.kind(r["call"]) in SEND_KINDS]
    if not senders:
        senders = [r for r in p.peer_rows if p.kind(r["call"]) in RECV_KINDS]
        used_recv = True
    for r in senders:
        peer = r["peer"]
        if peer < 0 or peer >= n:
            continue
        src, dst = (peer, r["rank"]) if used_recv else (r["rank"], peer)
        by[src // block, dst // block] += r["bytes"]
        cnt[src // block, dst // block] += r["count"]
    source = "receives (no sends recorded)" if used_recv else "sends, puts and accumulates"
    return Matrix(by, cnt, block, n, source)


def peer_totals(p: Profile) -> dict[tuple[int, str, int], tuple[int, int]]:
    """(rank, call, partner) -> (count, bytes)."""
    out: dict[tuple[int, str, int], tuple[int, int]] = {}
    for r in p.peer_rows or []:
        if r["peer"] == PEER_NONE:
            continue
        key = (r["rank"], r["call"], r["peer"])
        c, b = out.get(key, (0, 0))
        out[key] = (c + r["count"], b + r["bytes"])
    return out


# Calls and the machine model's operation that predicts them (its size convention noted).
MODEL_OPERATIONS = {
    "MPI_Send": "pingpong",
    "MPI_Ssend": "pingpong",
    "MPI_Bsend": "pingpong",
    "MPI_Rsend": "pingpong",
    "MPI_Isend": "pingpong",
    "MPI_Issend": "pingpong",
    "MPI_Recv": "pingpong",
    "MPI_Irecv": "pingpong",
    "MPI_Sendrecv": "pingpong",
    "MPI_Allreduce": "allreduce",
    "MPI_Iallreduce": "allreduce",
    "MPI_Allgather": "allgather",
    "MPI_Iallgather": "allgather",
    "MPI_Alltoall": "alltoall",
    "MPI_Ialltoall": "alltoall",
    "MPI_Alltoallv": "alltoallv",
    "MPI_Bcast": "bcast",
    "MPI_Ibcast": "bcast",
    "MPI_Reduce_scatter_block": "reduce_scatter_block",
}


def model_curve(model, call: str, sizes_bytes: list[float], ranks: int) -> list[float] | None:
    """Predicted seconds per call at the given sizes (the log's bytes per call), or None
    when the model has no operation for this call."""
    op = MODEL_OPERATIONS.get(call)
    if op is None:
        return None
    out = []
    p = 2 if op == "pingpong" else max(ranks, 1)
    for n in sizes_bytes:
        size = n / ranks if op in ("alltoall", "alltoallv") and ranks > 0 else n
        try:
            out.append(float(model.predict(op, max(size, 0.0), p)))
        except Exception:  # a model without this operation: no overlay for this call
            return None
    return out
