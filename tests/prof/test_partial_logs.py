"""Runs that never reach MPI_Finalize leave per-rank partial logs that `report` reads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import mpiexec, petacomm, profile_run
from mpi_harness import mpi_test_env
from petacomm.profile import analysis, load

pytestmark = pytest.mark.mpi


def allreduces(profile) -> int:
    return sum(c.count for c in analysis.calls(profile) if c.call == "MPI_Allreduce")


def test_abort_leaves_partial_logs(programs, tmp_path):
    log = tmp_path / "abort.json"
    done = profile_run(log, 3, [str(programs / "prof_abort"), "abort"], check=False, timeout=120)
    assert done.returncode != 0
    assert "did not reach MPI_Finalize" in done.stdout
    partial = tmp_path / "abort.json.partial"
    assert (partial / "rank-0.json").exists()
    profile = load(log)  # the final log's path finds the partial logs
    assert not profile.complete
    assert profile.partial_reasons[0].startswith("MPI_Abort")
    ranks_with_logs = sorted(profile.partial_reasons)
    # Every rank that left a log did its 3 Allreduce inside region "work".
    assert allreduces(profile) == 3 * len(ranks_with_logs)
    work = [r for r in profile.region_rows if r["region"] == "work"]
    assert len(work) == len(ranks_with_logs)
    report = petacomm("report", str(partial))
    assert "PARTIAL" in report.stdout and "MPI_Allreduce" in report.stdout


def test_exit_without_finalize(programs, tmp_path):
    log = tmp_path / "nofin.json"
    profile_run(log, 2, [str(programs / "prof_abort"), "nofinalize"], check=False, timeout=120)
    profile = load(log)
    assert not profile.complete
    assert set(profile.partial_reasons) == {0, 1}
    assert set(profile.partial_reasons.values()) == {"exit without MPI_Finalize"}
    assert allreduces(profile) == 6
    barrier = [c for c in analysis.calls(profile) if c.call == "MPI_Barrier"]
    assert barrier and barrier[0].count == 2


def test_killed_hanging_run_and_periodic_logs(programs, tmp_path):
    """A hung run killed by a signal: each rank writes its log from the signal handler."""
    log = tmp_path / "hang.json"
    argv = [
        sys.executable, "-m", "petacomm.cli", "profile", "-o", str(log), "--no-banner",
        "--partial-interval", "1", "--", *mpiexec(2), str(programs / "prof_abort"), "hang",
    ]  # fmt: skip
    child = subprocess.Popen(
        argv, env=mpi_test_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    partial = tmp_path / "hang.json.partial"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(partial.glob("rank-*.json"))) < 2:
        time.sleep(0.2)
    assert len(list(partial.glob("rank-*.json"))) == 2, "no periodic partial logs"
    periodic = load(log)
    assert set(periodic.partial_reasons.values()) == {"periodic"}
    time.sleep(0.5)
    os.killpg(child.pid, signal.SIGTERM)
    child.communicate(timeout=60)
    profile = load(log)
    assert not profile.complete
    assert all("SIGTERM" in r or r == "periodic" for r in profile.partial_reasons.values())
    assert allreduces(profile) == 6
    # The rank was inside MPI_Recv when killed: its region and program times are still there.
    assert all(r["wall_ns"] > 0 for r in profile.rank_rows)
