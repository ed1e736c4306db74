"""Requests, communicators and the call table under stress: handle values shared or reused
(Open MPI's one handle for requests that completed at once, MPI_PROC_NULL, threads), every
completion call, completions in another region than the posting, communicators whose
creation was not recorded, and a table filled to its capacity. Expected figures are worked
out by hand from the programs (expected.py), or come from Open MPI's own monitoring."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict

import pytest
from expected import requests_pattern
from test_exact_counts import call_table, peer_table

from conftest import mpiexec, profile_run
from mpi_harness import mpi_test_env
from petacomm.profile import analysis, load, terminal

pytestmark = pytest.mark.mpi
TEST_COUNTS = re.compile(
    r"prof_requests: rank (\d+) testall (\d+) testsome (\d+) testany (\d+) waitsome (\d+)"
)


def program_counts(stdout: str) -> dict[int, dict[str, int]]:
    names = ("testall", "testsome", "testany", "waitsome")
    return {
        int(m.group(1)): dict(zip(names, map(int, m.groups()[1:]), strict=True))
        for m in TEST_COUNTS.finditer(stdout)
    }


def check_requests_profile(profile, ranks: int, stdout: str, io: bool = False) -> None:
    counts = program_counts(stdout)
    assert sorted(counts) == list(range(ranks)), stdout
    want_calls, want_peers = requests_pattern(ranks, counts, io)
    assert call_table(profile) == want_calls
    assert peer_table(profile) == want_peers
    for row in profile.rank_rows:
        assert row["requests_incomplete"] == 0 and row["requests_untracked"] == 0, row
        assert row["mpi_ns"] <= row["wall_ns"]


@pytest.mark.parametrize("ranks", [1, 4, 7])  # and 3 in the monitoring test below
def test_every_completion_call_counts_each_request_once(ranks, programs, tmp_path):
    log, data = tmp_path / "requests.json", tmp_path / "shared.dat"
    program = [str(programs / "prof_requests"), str(data)]
    done = profile_run(log, ranks, program, "--detail", "full")
    check_requests_profile(load(log), ranks, done.stdout, io=True)
    assert data.stat().st_size == 64 * ranks  # the shared-pointer writes did happen


def monitored_messages(files: list[str]) -> dict[tuple[int, int], int]:
    """(sender, receiver) -> point-to-point messages of 8 bytes or more, from Open MPI's pml
    monitoring files ("E src dst B bytes N msgs sent h0,h1,..." where h[k] counts messages of
    2**(k-1) to 2**k - 1 bytes)."""
    out = defaultdict(int)
    for text in files:
        for line in text.splitlines():
            parts = line.split("\t")
            if parts[0] != "E":
                continue
            histogram = [int(x) for x in parts[5].split(",")]
            out[(int(parts[1]), int(parts[2]))] += sum(histogram[4:])
    return {pair: n for pair, n in out.items() if n}


def test_counts_match_open_mpi_monitoring(programs, tmp_path):
    """Open MPI counts the messages its point-to-point layer sends (pml monitoring, in a run
    without the profiler, whose own traffic it would count too); the profiler's MPI_Isend
    records to each partner are the same numbers."""
    from petacomm.launch import find_mpiexec

    if find_mpiexec().vendor != "openmpi":
        pytest.skip("pml monitoring is an Open MPI component")
    ranks, prefix = 3, tmp_path / "mon"
    subprocess.run(
        [*mpiexec(ranks), "--mca", "pml_monitoring_enable", "1",
         "--mca", "pml_monitoring_enable_output", "3", "--mca", "pml_monitoring_filename",
         str(prefix), str(programs / "prof_requests")],
        env=mpi_test_env(), capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    reference = monitored_messages([(tmp_path / f"mon.{r}.prof").read_text() for r in range(ranks)])
    assert reference == {(r, (r + 1) % ranks): 1201 for r in range(ranks)}
    log = tmp_path / "requests.json"
    done = profile_run(log, ranks, [str(programs / "prof_requests")], "--detail", "full")
    profile = load(log)
    sends = defaultdict(int)
    for (rank, call, peer), (count, nbytes) in analysis.peer_totals(profile).items():
        if call == "MPI_Isend" and peer >= 0 and nbytes > 0:
            sends[(rank, peer)] += count
    assert dict(sends) == reference
    check_requests_profile(profile, ranks, done.stdout)


def sendrecv_partners(profile) -> dict[tuple[int, int], set[int]]:
    """(rank, message size) -> partners of MPI_Sendrecv, from the full tables."""
    out = defaultdict(set)
    for e in profile.entry_rows:
        if e["call"] == "MPI_Sendrecv":
            out[(e["rank"], e["size"])].add(e["peer"])
    return dict(out)


@pytest.mark.parametrize(("ranks", "wrap"), [(3, "all"), (4, "p2p")])
def test_partners_right_when_communicator_creation_is_not_recorded(ranks, wrap, programs, tmp_path):
    """prof_comms frees and re-creates communicators (handle values reused) with reversed
    rank orders, some of them while paused; with --wrap p2p no creation is recorded at all."""
    log = tmp_path / "comms.json"
    profile_run(log, ranks, [str(programs / "prof_comms")], "--detail", "full", "--wrap", wrap)
    got = sendrecv_partners(load(log))
    want = {}
    for r in range(ranks):
        for it in range(6):
            partner = (r + 1) % ranks if it % 2 == 0 else (r - 1) % ranks
            want[(r, 4 * (it + 1))] = {partner}
    assert got == want


def test_table_coarsens_only_beyond_its_capacity(programs, tmp_path):
    """A 64 KiB table has 1024 entries and takes 7/8 of them, 896 distinct keys: 896 keys
    are all kept exactly; the 897th is the first kept under a coarser key."""
    for keys, coarsened in ((896, 0), (897, 1)):
        log = tmp_path / f"keys{keys}.json"
        profile_run(
            log, 1, [str(programs / "prof_keys"), str(keys)], "--table-size", "64KiB",
            "--detail", "full",
        )  # fmt: skip
        profile = load(log)
        row = profile.rank_rows[0]
        assert profile.profiler["table_entries"] == 1024
        assert profile.profiler["table_capacity"] == 896
        assert row["coarsened_peer"] + row["coarsened_size"] + row["coarsened_call"] == coarsened
        exact = [e for e in profile.entry_rows if e["call"] == "MPI_Sendrecv" and e["peer"] == 0]
        assert len(exact) == keys - coarsened
        assert sum(e["count"] for e in profile.entry_rows if e["call"] == "MPI_Sendrecv") == keys
        assert sum(e["bytes"] for e in profile.entry_rows) == keys * (keys + 1) // 2
        assert ("overflowed" in terminal.report(profile)) == bool(coarsened)
