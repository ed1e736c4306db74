"""Runs programs under mpiexec for the tests and collects every rank's output.

The harness (and only the harness: never the library) sets Open MPI's run-as-root
variables, and oversubscribes so that 7 or 8 ranks run on a 2-core machine.

Nothing hangs silently: a run that outlives its timeout is killed with its whole process
group and fails the test showing each rank's output so far; Python programs run under
``python -m mpi4py``, so an exception on one rank aborts the job at once instead of leaving
the other ranks waiting. Tests that start ranks carry ``@pytest.mark.mpi`` (tests/conftest.py
enforces it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from petacomm.launch import Launcher, describe_launcher, find_mpiexec, split_rank_output

# Rank counts every multi-rank feature is tested at: one, odd, and non-powers of two.
RANK_COUNTS = (1, 2, 3, 4, 7, 8)


def mpi_test_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    # Oversubscription through the environment also covers programs started by our CLI.
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
    # Unbuffered Python writes a line in pieces ("sum", " ", "3", "\n"), which Open MPI 4
    # tags one by one: the ranks' lines would come out cut.
    env.pop("PYTHONUNBUFFERED", None)
    env.update(extra or {})
    return env


@dataclass
class MpiResult:
    returncode: int
    stdout: str
    stderr: str
    argv: list[str]
    by_rank: dict[int, list[str]] = field(default_factory=dict)

    def rank_lines(self, rank: int) -> list[str]:
        return self.by_rank.get(rank, [])


def launcher_for(mpiexec: str | None = None) -> Launcher:
    """The given mpiexec (another MPI's), or the one petacomm uses."""
    return describe_launcher(mpiexec) if mpiexec else find_mpiexec()


def mpiexec_argv(ranks: int, mpiexec: str | None = None) -> list[str]:
    """``mpiexec -n RANKS`` (oversubscribed with Open MPI), for a program to follow."""
    launcher = launcher_for(mpiexec)
    extra = ["--oversubscribe"] if launcher.vendor == "openmpi" else []
    return [str(launcher.path), "-n", str(ranks), *extra]


def mpirun(
    ranks: int,
    program: list[str],
    *,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    check: bool = True,
    tag_output: bool = True,
    mpiexec: str | None = None,
) -> MpiResult:
    """Runs ``program`` on ``ranks`` ranks (with ``mpiexec``, default: petacomm's launcher);
    raises AssertionError with all output on failure (a non-zero exit with ``check``, or
    ``timeout`` seconds passing)."""
    argv = mpiexec_argv(ranks, mpiexec)
    if tag_output:
        argv += launcher_for(mpiexec).tag_output_flags()
    argv += program
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=mpi_test_env(env),
        start_new_session=True,  # its own process group: a timeout kills every rank
    ) as job:
        try:
            stdout, stderr = job.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = stop_process_group(job)
            raise AssertionError(
                f"{' '.join(argv)} did not finish within {timeout} s: killed its process "
                f"group. Output so far:\n{output_by_rank(stdout, stderr, tag_output)}"
            ) from None
    by_rank = split_rank_output(stdout + "\n" + stderr) if tag_output else {}
    result = MpiResult(job.returncode, stdout, stderr, argv, by_rank)
    if check and job.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} exited {job.returncode}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        )
    return result


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now (from /proc): Open MPI starts its ranks in process
    groups of their own, out of reach of a signal to the launcher's group."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _running(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    with contextlib.suppress(OSError, IndexError):
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    return False


def stop_process_group(job: subprocess.Popen, grace: float = 5) -> tuple[str, str]:
    """SIGTERM to the job's process group (the launcher forwards it to the ranks and flushes
    what they wrote), then SIGKILL to whatever is left after at most ``grace`` seconds, the
    group and every process that was below the launcher (the ranks, in groups of their
    own, may not have died of the forwarded SIGTERM yet); returns once they are gone, with
    the output."""
    below = _descendants(job.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.pid, signal.SIGTERM)
    try:
        output = job.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        output = None
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.pid, signal.SIGKILL)
    for pid in below:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while any(_running(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.01)
    return output or job.communicate()


def output_by_rank(stdout: str, stderr: str, tagged: bool) -> str:
    """The output grouped by rank (when the launcher tagged it), then everything untagged."""
    if not tagged:
        return f"--- stdout\n{stdout}\n--- stderr\n{stderr}"
    text = stdout + "\n" + stderr
    sections = [
        f"--- rank {rank}\n" + "\n".join(lines)
        for rank, lines in sorted(split_rank_output(text).items())
    ]
    untagged = [line for line in text.splitlines() if line and not split_rank_output(line)]
    sections.append("--- not from a rank (launcher)\n" + "\n".join(untagged))
    return "\n".join(sections)


# The script as __main__ (its directory first on sys.path, as `python script.py` would have
# it) with line-buffered output: a hung run still shows each rank's lines so far, and each
# line reaches the launcher whole (Open MPI 4 tags every write separately).
_RUN_LINE_BUFFERED = (
    "import os, runpy, sys\n"
    "sys.stdout.reconfigure(line_buffering=True, write_through=False)\n"
    "sys.stderr.reconfigure(line_buffering=True, write_through=False)\n"
    "sys.argv = sys.argv[1:]\n"
    "sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def mpirun_python(ranks: int, script: str, *args: str, **kwargs) -> MpiResult:
    """Runs a Python script (a path) with this interpreter on ``ranks`` ranks, under
    ``python -m mpi4py``: an uncaught exception on any rank aborts the whole job."""
    program = [sys.executable, "-m", "mpi4py", "-c", _RUN_LINE_BUFFERED, script, *args]
    return mpirun(ranks, program, **kwargs)
