"""What the reports show (totals, regions, calls, size classes, the communication matrix,
partners, the model overlay, the comparison of two runs), from profiles built by hand: no
MPI run, so these are not marked mpi as test_report.py is."""

from __future__ import annotations

from pathlib import Path

import pytest

S = 10**9  # ns per second
KINDS = {"MPI_Send": "send", "MPI_Recv": "recv", "MPI_Allreduce": "coll", "write": "posix",
         "MPI_Alltoall": "coll", "MPI_Bcast": "coll", "MPI_Barrier": "coll"}  # fmt: skip
EXACT = {"rel": 1e-12, "abs": 0}


def hand_profile(ranks=3, rank_rows=(), region_rows=(), call_rows=(), call_rank_rows=None,
                 peer_rows=None):  # fmt: skip
    from petacomm.profile.log import Profile

    def table(columns, rows):
        return [dict(zip(columns, row, strict=True)) for row in rows]

    return Profile(
        source=Path("hand.json"), complete=True, command=[], ranks=ranks, nodes=0,
        mpi_library="", thread_level="", profiler={}, call_kinds=KINDS, wall_ns=0,
        rank_rows=table(("rank", "host", "wall_ns", "mpi_ns", "io_ns", "rss_kib"), rank_rows),
        region_rows=[dict(r) for r in region_rows],
        call_rows=table(("region", "call", "size", "size_max", "count", "bytes", "time_ns",
                         "min_ns", "max_ns"), call_rows),
        call_rank_rows=None if call_rank_rows is None else table(
            ("rank", "call", "count", "bytes", "time_ns"), call_rank_rows),
        peer_rows=None if peer_rows is None else table(
            ("rank", "call", "peer", "count", "bytes"), peer_rows),
    )  # fmt: skip


RANKS = [(2, "n1", 6 * S, 6 * S, 1 * S, 200), (0, "n0", 10 * S, 2 * S, 1 * S, 100),
         (1, "n0", 8 * S, 4 * S, 0, 300)]  # fmt: skip
REGIONS = [
    {"rank": 0, "region": "(program)", "parent": None, "entries": 1, "wall_ns": 10 * S,
     "mpi_ns": 2 * S, "io_ns": S},
    {"rank": 0, "region": "solve", "parent": "(program)", "entries": 3, "wall_ns": 4 * S,
     "mpi_ns": S, "io_ns": 0, "excl_mpi_ns": S // 2, "lbst_ns": 2 * S},
    {"rank": 1, "region": "solve", "parent": "(program)", "entries": 5, "wall_ns": 6 * S,
     "mpi_ns": 3 * S, "io_ns": S},
]  # fmt: skip
CALLS = [
    ("solve", "MPI_Send", 1024, 2047, 2, 3000, 2000, 900, 1100),
    ("solve", "MPI_Send", 8, 8, 4, 32, 400, 50, 150),
    ("(program)", "MPI_Send", 8, 8, 1, 8, 0, 0, 0),  # untimed: no minimum of 0
    ("(program)", "MPI_Allreduce", 16, 16, 3, 48, 3000, 800, 1200),
    ("solve", "write", 100, 100, 1, 100, 5000, 5000, 5000),
]
CALL_RANKS = [(0, "MPI_Send", 3, 24, 1000), (1, "MPI_Send", 4, 3016, 1400),
              (0, "MPI_Allreduce", 1, 16, 2000), (1, "MPI_Allreduce", 1, 16, 500),
              (2, "MPI_Allreduce", 1, 16, 500)]  # fmt: skip


def test_totals_and_regions_by_hand():
    from petacomm.profile import analysis

    p = hand_profile(rank_rows=RANKS, region_rows=REGIONS)
    assert [t.rank for t in analysis.rank_times(p)] == [0, 1, 2]
    t = analysis.totals(p)
    # calc per rank: 10-2-1 = 7, 8-4-0 = 4, 6-6-1 < 0 -> 0; two hosts; wall the slowest rank.
    assert (t.ranks, t.ranks_reported, t.nodes, t.rss_max_kib) == (3, 3, 2, 300)
    assert [t.wall, t.mpi, t.io, t.calc, t.cpu] == pytest.approx([10, 12, 2, 11, 24], **EXACT)
    # Imbalance (max - mean) / max: calc (7 - 11/3) / 7, MPI (6 - 4) / 6.
    assert t.calc_imbalance == pytest.approx(100 * (7 - 11 / 3) / 7, **EXACT)
    assert t.mpi_imbalance == pytest.approx(100 / 3, **EXACT)
    # Shares of the summed wall (24 s).
    assert [t.mpi_percent, t.io_percent, t.calc_percent] == pytest.approx(
        [50, 100 * 2 / 24, 100 * 11 / 24], **EXACT
    )
    program, solve = analysis.regions(p)
    assert (program.name, program.ranks, solve.name, solve.parent) == (
        "(program)", 1, "solve", "(program)")  # fmt: skip
    # solve on ranks 0 and 1: walls 4 and 6, MPI 1 and 3, I/O 0 and 1, calc 3 and 2; rank 1
    # records no exclusive MPI time (its inclusive 3 s counts) and no load-balance time.
    assert solve.entries == 8 and solve.ranks == 2
    got = [solve.wall_mean, solve.wall_max, solve.mpi_mean, solve.io_mean, solve.calc_mean,
           solve.lbst_mean, solve.excl_mpi_mean, solve.imbalance]  # fmt: skip
    assert got == pytest.approx([5, 6, 2, 0.5, 2.5, 1, 1.75, 100 / 6], **EXACT)


def test_calls_and_sizes_by_hand():
    from petacomm.profile import analysis

    p = hand_profile(call_rows=CALLS, call_rank_rows=CALL_RANKS)
    calls = analysis.calls(p)
    assert [c.call for c in calls] == ["write", "MPI_Allreduce", "MPI_Send"]  # by time
    send = calls[2]
    assert (send.kind, send.count, send.bytes, send.ranks) == ("send", 7, 3040, 2)
    got = [send.time, send.min_call, send.max_call, send.rank_time_min, send.rank_time_max,
           send.avg_time, send.avg_bytes]  # fmt: skip
    want = [2400e-9, 50e-9, 1100e-9, 1000e-9, 1400e-9, 2400e-9 / 7, 3040 / 7]
    assert got == pytest.approx(want, **EXACT)
    allreduce = calls[1]
    assert allreduce.ranks == 3
    assert [allreduce.rank_time_min, allreduce.rank_time_max] == pytest.approx(
        [500e-9, 2000e-9], **EXACT
    )
    assert [c.call for c in analysis.calls(p, include_posix=False)] == [
        "MPI_Allreduce", "MPI_Send"]  # fmt: skip
    # One region: its rows only, and no per-rank times (those are over the whole run).
    in_solve = {c.call: c for c in analysis.calls(p, region="solve")}
    assert sorted(in_solve) == ["MPI_Send", "write"]
    assert (in_solve["MPI_Send"].count, in_solve["MPI_Send"].ranks) == (6, 0)
    # Size classes in size order; 8 B twice (two regions) summed.
    bins = analysis.sizes(p, "MPI_Send")
    assert [(b.size, b.size_max, b.count, b.bytes) for b in bins] == [
        (8, 8, 5, 40), (1024, 2047, 2, 3000)]  # fmt: skip
    assert [b.time for b in bins] == pytest.approx([400e-9, 2000e-9], **EXACT)
    assert analysis.SizeBin(64, 127, 0, 0, 0.0).avg_size == 64.0  # no call: its lower bound
    # Powers of two: 0, 2-3 (sizes 2 and 3), 8-15, 1024-2047.
    histogram = analysis.log2_histogram(
        [analysis.SizeBin(s, s, c, s * c, 0.0) for s, c in ((8, 5), (3, 2), (0, 1), (2, 1))]
        + [analysis.SizeBin(1024, 2047, 2, 3000, 0.0)]
    )
    assert histogram == [(0, 1, 0), (2, 3, 8), (8, 5, 40), (1024, 2, 3000)]


def test_matrix_and_partners_by_hand():
    from petacomm.profile import analysis

    peers = [(0, "MPI_Send", 1, 2, 100), (1, "MPI_Send", 2, 1, 50), (2, "MPI_Send", 0, 3, 30),
             (0, "MPI_Recv", 2, 3, 30), (0, "MPI_Send", -1, 1, 8), (1, "MPI_Send", 7, 1, 9),
             (0, "MPI_Send", -2, 1, 0)]  # fmt: skip
    p = hand_profile(peer_rows=peers)
    m = analysis.matrix(p)
    # Sends only (receives are the same bytes seen from the other side); partners outside
    # 0..2 (none, a null process, an out-of-range rank) left out.
    assert m.bytes.tolist() == [[0, 100, 0], [0, 0, 50], [30, 0, 0]]
    assert m.counts.tolist() == [[0, 2, 0], [0, 0, 1], [3, 0, 0]]
    assert (m.block, m.labels(), m.source) == (1, ["0", "1", "2"], "sends, puts and accumulates")
    # At most 2 cells a side: blocks of ceil(3 / 2) = 2 ranks, {0, 1} and {2}.
    m = analysis.matrix(p, max_cells=2)
    assert m.bytes.tolist() == [[100, 50], [30, 0]] and m.labels() == ["0-1", "2-2"]
    # Receives only: rank 0 received 30 B from rank 2, so 2 -> 0.
    m = analysis.matrix(hand_profile(peer_rows=[(0, "MPI_Recv", 2, 3, 30)]))
    assert m.bytes.tolist() == [[0, 0, 0], [0, 0, 0], [30, 0, 0]]
    assert m.source == "receives (no sends recorded)"
    totals = analysis.peer_totals(p)
    assert totals[(0, "MPI_Send", 1)] == (2, 100) and totals[(0, "MPI_Send", -2)] == (1, 0)
    assert (0, "MPI_Send", -1) not in totals


def test_model_curve_sizes_and_ranks():
    from petacomm.profile import analysis

    class Model:  # seconds that spell the arguments: p * 1000 + size
        def predict(self, op, size, p):
            if op == "bcast":
                raise ValueError("no bcast")
            return p * 1000 + size

    # A send is a ping-pong of 2 ranks; an all-to-all's size is the log's bytes per call
    # over the ranks (bytes to each rank).
    assert analysis.model_curve(Model(), "MPI_Send", [100], 8) == [2100.0]
    assert analysis.model_curve(Model(), "MPI_Allreduce", [100], 8) == [8100.0]
    assert analysis.model_curve(Model(), "MPI_Alltoall", [400, 800], 4) == [4100.0, 4200.0]
    assert analysis.model_curve(Model(), "MPI_Bcast", [1], 4) is None  # not in the model
    assert analysis.model_curve(Model(), "MPI_Barrier", [1], 4) is None  # no operation


def test_comparison_by_hand():
    from petacomm.profile.compare import compare, relative_change

    def run(walls, mpi, calls, regions):
        return hand_profile(
            ranks=2,
            rank_rows=[(r, "n0", w * S, int(mpi * S), 0, 1) for r, w in enumerate(walls)],
            region_rows=[{"rank": r, "region": name, "parent": None, "entries": 1,
                          "wall_ns": w * S, "mpi_ns": m * S, "io_ns": 0}
                         for name, rows in regions for r, (w, m) in enumerate(rows)],
            call_rows=[("(program)", c, 8, 8, n, 8 * n, t, t, t) for c, n, t in calls],
        )  # fmt: skip

    before = run([4, 2], 1, [("MPI_Send", 2, 1000), ("MPI_Bcast", 1, 5000)],
                 [("(program)", [(4, 1), (2, 1)]), ("solve", [(3, 1), (1, 0)])])  # fmt: skip
    after = run([5, 5], 1.5, [("MPI_Send", 3, 4000), ("MPI_Barrier", 1, 500)],
                [("(program)", [(5, 2), (5, 2)]), ("io", [(2, 0), (2, 0)])])  # fmt: skip
    c = compare(before, after)
    # Largest change first, whichever its sign: Bcast -5 us, Send +3 us, Barrier +0.5 us.
    assert [d.name for d in c.calls] == ["MPI_Bcast", "MPI_Send", "MPI_Barrier"]
    bcast, send, barrier = c.calls
    assert (send.a_count, send.b_count, send.a_bytes, send.b_bytes) == (2, 3, 16, 24)
    assert [send.a_time, send.b_time, send.change] == pytest.approx([1e-6, 4e-6, 3e-6], **EXACT)
    assert bcast.change == pytest.approx(-5e-6, **EXACT) and barrier.a_count == 0
    # Regions: A's in order, then B's new ones; mean wall and MPI per rank.
    assert [(r.name, r.a_time, r.b_time, r.a_mpi, r.b_mpi) for r in c.regions] == [
        ("(program)", 3.0, 5.0, 1.0, 2.0), ("solve", 2.0, 0.0, 0.5, 0.0),
        ("io", 0.0, 2.0, 0.0, 0.0)]  # fmt: skip
    # Wall of the slowest rank; MPI (1 s, then 1.5 s per rank) and calc summed over ranks.
    assert c.totals() == [
        ("wall (slowest rank)", 4.0, 5.0),
        ("MPI (sum over ranks)", 2.0, 3.0),
        ("I/O (sum over ranks)", 0.0, 0.0),
        ("CALC (sum over ranks)", 4.0, 7.0),
    ]
    assert [relative_change(a, b) for a, b in ((0, 0), (0, 1), (1, 0), (2, 3), (4, 3), (1, 1))] == [
        "=", "new", "gone", "+50.0 %", "-25.0 %", "+0.0 %"]  # fmt: skip
