"""Exact counts: programs with known communication leave exactly the profile they must,
per call, per partner, per region and per message size, at several rank counts."""

from __future__ import annotations

import os
from collections import defaultdict

import pytest
from expected import pattern

from conftest import mpiexec, petacomm, profile_run
from mpi_harness import RANK_COUNTS
from petacomm.profile import analysis, load
from prerequisites import require

pytestmark = pytest.mark.mpi


def call_table(profile) -> dict:
    out = defaultdict(lambda: [0, 0])
    for row in profile.call_rows:
        if profile.kind(row["call"]) == "posix":
            continue
        key = (row["region"], row["call"], row["size"])
        out[key][0] += row["count"]
        out[key][1] += row["bytes"]
    return {k: tuple(v) for k, v in out.items()}


def peer_table(profile) -> dict:
    return {k: v for k, v in analysis.peer_totals(profile).items()}


@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_pattern_profile_is_exact(ranks, programs, tmp_path):
    log = tmp_path / "pattern.json"
    done = profile_run(log, ranks, [str(programs / "prof_pattern")], "--detail", "full")
    profile = load(log)
    assert profile.complete and profile.ranks == ranks
    want_calls, want_peers = pattern(ranks, "one-sided part skipped" not in done.stdout)
    assert call_table(profile) == want_calls
    assert peer_table(profile) == want_peers
    # The full per-rank tables agree with the merged summaries.
    from petacomm.profile.log import summarise_entries

    calls, _, peers = summarise_entries(profile.entry_rows)
    merged = {(c["region"], c["call"], c["size"]): c["count"] for c in calls}
    assert merged == {(c["region"], c["call"], c["size"]): c["count"] for c in profile.call_rows}
    # The binned size is reported with its bin: 10000 B lies in 9216..10239.
    big = [c for c in profile.call_rows if c["call"] == "MPI_Sendrecv" and c["size"] == 9216]
    assert big and big[0]["size_max"] == 10239 and big[0]["bytes"] == 10000 * ranks
    # Every rank reported; regions nest under the program; the closing barrier is LBST.
    assert sorted(r["rank"] for r in profile.rank_rows) == list(range(ranks))
    regions = {r.name: r for r in analysis.regions(profile)}
    assert set(regions) == {"(program)", "ring", "collectives", "nonblocking"}
    assert regions["ring"].parent == "(program)" and regions["ring"].entries == ranks
    for row in profile.region_rows:
        assert row["mpi_ns"] <= row["wall_ns"]
        if row["region"] == "collectives":
            assert row["lbst_ns"] > 0
    for row in profile.rank_rows:
        assert row["coarsened_peer"] == row["coarsened_size"] == row["coarsened_call"] == 0
        assert row["rss_kib"] > 0 and row["mpi_ns"] < row["wall_ns"]
    # The MPI library as that library names itself (mpi4py on the same libmpi), whole: no
    # NUL byte ending it early or carried into the log, line breaks as spaces.
    from mpi4py import MPI

    named = " ".join(MPI.Get_library_version().replace("\0", "").split())
    assert " ".join(profile.mpi_library.split()) == named and "\0" not in profile.mpi_library


def test_table_overflow_coarsens_but_keeps_every_call(programs, tmp_path):
    """A tiny table (16 entries) overflows: events go to coarser keys, none is lost."""
    log = tmp_path / "tiny.json"
    profile_run(log, 3, [str(programs / "prof_pattern")], "--table-size", "1K")
    profile = load(log)
    coarsened = sum(
        r["coarsened_peer"] + r["coarsened_size"] + r["coarsened_call"] for r in profile.rank_rows
    )
    assert coarsened > 0
    want_calls, _ = pattern(3)
    want = defaultdict(lambda: [0, 0])
    for (_, call, _), (count, nbytes) in want_calls.items():
        want[call][0] += count
        want[call][1] += nbytes
    got = {c.call: [c.count, c.bytes] for c in analysis.calls(profile, include_posix=False)}
    assert got == dict(want)


@pytest.mark.parametrize("ranks", [1, 3])
def test_thread_multiple(ranks, programs, tmp_path):
    """4 threads per rank, each 50 MPI_Sendrecv and 100 (MPI_Irecv, MPI_Isend, wait) rounds
    to its neighbours at the same time: request handles freed by one thread are reused by
    another; every request counts once, and MPI time (time with at least one thread inside
    MPI) stays within the wall time."""
    log = tmp_path / "threads.json"
    done = profile_run(log, ranks, [str(programs / "prof_threads")])
    require("not provided" not in done.stdout, "this MPI does not provide MPI_THREAD_MULTIPLE")
    profile = load(log)
    assert profile.thread_level == "multiple"
    peers = analysis.peer_totals(profile)
    threads, rounds = 4, 50
    for r in range(ranks):
        right, left = (r + 1) % ranks, (r - 1) % ranks
        assert peers[(r, "MPI_Sendrecv", right)] == (threads * rounds, threads * rounds * 8)
        assert peers[(r, "MPI_Isend", right)] == (2 * threads * rounds, 16 * threads * rounds)
        assert peers[(r, "MPI_Irecv", left)] == (2 * threads * rounds, 16 * threads * rounds)
    for row in profile.rank_rows:
        assert row["mpi_ns"] <= row["wall_ns"]
        assert row["requests_incomplete"] == 0
    assert analysis.totals(profile).mpi_percent <= 100.0


def test_cxx_regions_nesting_pause_and_nameless_pcontrol(programs, tmp_path):
    log = tmp_path / "regions.json"
    # An argument that is not UTF-8: the log stays valid JSON (\u00XX escapes).
    done = petacomm(
        "profile", "-o", str(log), "--no-banner", "--", *mpiexec(3),
        str(programs / "prof_regions"), os.fsdecode(b"\xff\xfe"),
    )  # fmt: skip
    assert "prof_regions: 3 ranks, 0 failures" in done.stdout
    profile = load(log)
    assert profile.command[1:] == ["\u00ff\u00fe"]
    regions = {r.name: r for r in analysis.regions(profile)}
    # No region from the nameless calls with garbage; the Latin-1 name read as characters.
    assert set(regions) == {"(program)", "outer", "inner", "caf\u00e9"}
    assert regions["inner"].parent == "outer" and regions["inner"].entries == 2 * 3
    assert regions["outer"].entries == 3
    table = call_table(profile)
    assert table[("outer", "MPI_Allreduce", 8)] == (3, 24)
    assert table[("outer", "MPI_Barrier", 0)] == (3, 0)
    assert table[("inner", "MPI_Bcast", 16)] == (6, 96)
    assert table[("inner", "MPI_Barrier", 0)] == (6, 0)
    assert table[("caf\u00e9", "MPI_Barrier", 0)] == (3, 0)
    # The Allreduce made while paused by MPI_Pcontrol(0) is not recorded.
    assert not any(k[0] == "(program)" and k[1] == "MPI_Allreduce" for k in table)
    for row in profile.region_rows:
        if row["region"] in ("inner", "outer"):
            assert row["lbst_ns"] > 0
        if row["region"] == "outer":  # inclusive times contain the nested region's
            inner = [
                r
                for r in profile.region_rows
                if r["region"] == "inner" and r["rank"] == row["rank"]
            ][0]
            assert row["wall_ns"] >= inner["wall_ns"] and row["mpi_ns"] >= inner["mpi_ns"]
    report = petacomm("report", str(log)).stdout
    assert "caf\u00e9" in report


@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_intercommunicators(ranks, programs, tmp_path):
    log = tmp_path / "inter.json"
    profile_run(log, ranks, [str(programs / "prof_intercomm")])
    profile = load(log)
    peers = analysis.peer_totals(profile)
    expected = {}
    if ranks >= 2:
        evens, odds = list(range(0, ranks, 2)), list(range(1, ranks, 2))
        for i, w in enumerate(evens):
            if i < len(odds):
                expected[(w, "MPI_Send", odds[i])] = (1, 24)
                expected[(odds[i], "MPI_Recv", w)] = (1, 24)
        for w in odds:  # the odd group receives the broadcast from world rank 0
            expected[(w, "MPI_Bcast", 0)] = (1, 8)
        expected[(0, "MPI_Intercomm_create", 1)] = None  # leader handshake is not a partner
    got = {k: v for k, v in peers.items() if k[1] in ("MPI_Send", "MPI_Recv", "MPI_Bcast")}
    # The even group's MPI_PROC_NULL ranks record partner -2 with no bytes.
    got = {k: v for k, v in got.items() if k[2] >= 0}
    assert got == {k: v for k, v in expected.items() if v is not None}
    counts = {c.call: c.count for c in analysis.calls(profile)}
    if ranks >= 2:
        assert counts["MPI_Intercomm_merge"] == ranks
