"""Runs that never reach MPI_Finalize: every rank keeps its data in its live file
(LOG.partial/rank-N.live) while it runs, so whatever ends the job (MPI_Abort, a crash, the
launcher's SIGTERM then SIGKILL, SIGKILL alone) every rank's data up to that moment is there,
the call a rank was blocked in counts as MPI time, and `petacomm profile` says where the
logs are and exits non-zero."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import mpiexec, petacomm, profile_run
from mpi_harness import mpi_test_env
from petacomm.errors import PetacommError
from petacomm.profile import analysis, load

pytestmark = pytest.mark.mpi
NO_REASON = "no reason recorded"


def work_done(profile) -> dict[int, int]:
    """rank -> MPI_Allreduce calls it recorded in region "work" (prof_abort makes 3)."""
    out = dict.fromkeys(range(profile.ranks), 0)
    for e in profile.entry_rows:
        if e["call"] == "MPI_Allreduce" and e["region"] == "work":
            out[e["rank"]] += e["count"]
    return out


def check_every_rank_kept_its_data(profile, ranks: int) -> None:
    assert not profile.complete and profile.ranks == ranks
    assert profile.missing_ranks == []
    assert work_done(profile) == dict.fromkeys(range(ranks), 3)
    assert (
        sorted(r["region"] for r in profile.region_rows if r["region"] == "work")
        == ["work"] * ranks
    )
    for row in profile.rank_rows:
        assert 0 < row["mpi_ns"] <= row["wall_ns"]


def test_abort_leaves_every_ranks_data(programs, tmp_path):
    log = tmp_path / "abort.json"
    done = profile_run(log, 4, [str(programs / "prof_abort"), "abort"], check=False, timeout=120)
    assert done.returncode != 0
    assert "did not reach MPI_Finalize" in done.stdout and str(log) + ".partial" in done.stdout
    assert sorted(p.name for p in (tmp_path / "abort.json.partial").iterdir()) == [
        f"rank-{r}.live" for r in range(4)
    ]
    profile = load(log)  # the final log's path finds the partial logs
    check_every_rank_kept_its_data(profile, 4)
    assert profile.partial_reasons[0] == "MPI_Abort(errorcode 3)"
    report = petacomm("report", str(tmp_path / "abort.json.partial"))
    assert "PARTIAL" in report.stdout and "MPI_Allreduce" in report.stdout


def test_segfault_leaves_every_ranks_data(programs, tmp_path):
    log = tmp_path / "segv.json"
    done = profile_run(log, 3, [str(programs / "prof_abort"), "segv"], check=False, timeout=120)
    assert done.returncode != 0
    profile = load(log)
    check_every_rank_kept_its_data(profile, 3)
    assert profile.partial_reasons[1] == "signal SIGSEGV"


def test_exit_without_finalize(programs, tmp_path):
    log = tmp_path / "nofin.json"
    done = profile_run(
        log, 2, [str(programs / "prof_abort"), "nofinalize"], check=False, timeout=120
    )
    assert done.returncode != 0  # no complete log: the profile command says so
    profile = load(log)
    check_every_rank_kept_its_data(profile, 2)
    assert set(profile.partial_reasons.values()) == {"exit without MPI_Finalize"}
    barrier = [c for c in analysis.calls(profile) if c.call == "MPI_Barrier"]
    assert barrier and barrier[0].count == 2
    assert profile.in_flight == {}
    # A copy of a rank's file (same run, same rank) was counted twice; it is refused.
    partial = tmp_path / "nofin.json.partial"
    shutil.copy(partial / "rank-0.live", partial / "rank-00.live")
    with pytest.raises(PetacommError, match="rank 0 again .also rank-0.live, same run."):
        load(log)


def start_hanging_run(programs, log, ranks: int, *options: str) -> subprocess.Popen:
    """`petacomm profile` of prof_abort hang; returns once every rank waits in MPI_Recv."""
    argv = [
        sys.executable, "-m", "petacomm.cli", "profile", "-o", str(log), "--no-banner",
        "--partial-interval", "0.2", *options, "--", *mpiexec(ranks),
        str(programs / "prof_abort"), "hang",
    ]  # fmt: skip
    child = subprocess.Popen(
        argv, env=mpi_test_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    waiting = 0
    while waiting < ranks:
        line = child.stdout.readline()
        assert line, "the run ended before every rank waited"
        waiting += "waiting" in line
    time.sleep(0.6)  # the ranks block in MPI_Recv; heartbeats every 0.2 s
    return child


def check_blocked_in_recv(profile, ranks: int) -> None:
    """Every rank was inside MPI_Recv when it stopped: that time is MPI, not CALC."""
    check_every_rank_kept_its_data(profile, ranks)
    assert sorted(profile.in_flight) == list(range(ranks))
    for rank, flight in profile.in_flight.items():
        assert flight["call"] == "MPI_Recv" and flight["region"] == "(program)"
        assert flight["ns"] > 0
        row = next(r for r in profile.rank_rows if r["rank"] == rank)
        assert row["mpi_ns"] >= flight["ns"]
        recv = [e for e in profile.entry_rows if e["rank"] == rank and e["call"] == "MPI_Recv"]
        assert sum(e["count"] for e in recv) == 1 and recv[0]["time_ns"] == flight["ns"]


def test_sigterm_to_profile_command_is_passed_on(programs, tmp_path):
    """SIGTERM to `petacomm profile` itself (as `timeout` or a batch system sends it): it
    stops the launcher, finds the ranks' partial logs, names them and exits 128+15."""
    log = tmp_path / "hang.json"
    child = start_hanging_run(programs, log, 3)
    child.send_signal(signal.SIGTERM)  # to the command only, not its process group
    out, err = child.communicate(timeout=90)
    assert child.returncode == 128 + signal.SIGTERM, out + err
    assert "stopped by SIGTERM" in out and str(log) + ".partial" in out
    check_blocked_in_recv(load(log), 3)


def test_timeout_stops_a_hanging_run(programs, tmp_path):
    log = tmp_path / "hang.json"
    child = start_hanging_run(programs, log, 2, "--timeout", "6")
    out, err = child.communicate(timeout=90)
    assert child.returncode == 128 + signal.SIGTERM, out + err
    assert "stopped by --timeout 6 s" in out
    check_blocked_in_recv(load(log), 2)


def _exe(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def test_sigkill_of_every_rank_loses_nothing(programs, tmp_path):
    """SIGKILL (no handler runs): the data is in the files all the same; the time of death
    is the last heartbeat."""
    log = tmp_path / "killed.json"
    child = start_hanging_run(programs, log, 2)
    program = str(programs / "prof_abort")
    pids = [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and _exe(pid) == program]
    assert len(pids) == 2
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    out, err = child.communicate(timeout=90)
    assert child.returncode != 0
    profile = load(log)
    check_blocked_in_recv(profile, 2)
    assert all(r.startswith(NO_REASON) for r in profile.partial_reasons.values())
