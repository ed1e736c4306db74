"""``petacomm profile [options] -- mpiexec -n 4 ./app args``: runs a program with the
profiler preloaded on every rank and says where the log went.

The profiler reaches the ranks through the launcher's own way of passing environment
variables (Open MPI ``-x NAME=VALUE``, MPICH/Intel ``-genv NAME VALUE``), so the launcher
itself never loads it; without a known launcher (a singleton run, srun, ...) the variables
are set in the environment the command inherits.

Everything that can be checked is checked before the launch (the settings, the profiler
library, that the log can be written). A signal to this command (SIGTERM, SIGINT, SIGHUP)
or ``--timeout`` is passed on to the launcher; the ranks' data is then in their partial
logs, which this command finds and names, and it exits non-zero.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.files import refuse_empty_names
from petacomm.launch import describe_launcher
from petacomm.profile import builder, probes, settings

LAUNCHERS = {
    "mpiexec",
    "mpirun",
    "orterun",
    "prterun",
    "mpiexec.hydra",
    "mpiexec.openmpi",
    "mpirun.openmpi",
    "mpiexec.mpich",
    "mpirun.mpich",
    "srun",
}
# After the launcher was signalled: how long it may take to stop the ranks before it is
# killed (seconds).
GRACE_SECONDS = 30.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass
class ProfileRun:
    argv: list[str]
    env: dict[str, str]
    log: Path
    library: Path
    notes: list[str] = field(default_factory=list)

    @property
    def partial(self) -> Path:
        return self.log.with_name(self.log.name + ".partial")


def _executable(token: str) -> Path | None:
    if not token or token.startswith("-") or token.isdigit():
        return None
    found = shutil.which(token)
    if found:
        return Path(found)
    path = Path(token)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def target_program(command: list[str]) -> Path | None:
    """The program the launcher runs: the first later word that is an executable file."""
    for token in command[1:]:
        exe = _executable(token)
        if exe is not None:
            return exe
    return None


def default_log_path(command: list[str], program: Path | None) -> Path:
    name = program.name if program else Path(command[0]).name
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path.cwd() / f"petacomm-prof.{name}.{stamp}.{os.getpid()}.json"


def check_library(path: Path) -> None:
    """`path` is a shared library (ELF, type ET_DYN) this command can preload."""
    if not path.is_file():
        raise PetacommError(f"--profiler-lib: '{path}' is not a file")
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError as err:
        raise PetacommError(f"--profiler-lib: cannot read '{path}' ({err.strerror})") from err
    if len(head) < 18 or head[:4] != b"\x7fELF":
        raise PetacommError(f"--profiler-lib: '{path}' is not a shared library (not ELF)")
    order = "little" if head[5] == 1 else "big"
    if int.from_bytes(head[16:18], order) != 3:  # ET_DYN
        raise PetacommError(f"--profiler-lib: '{path}' is not a shared library (ELF, not ET_DYN)")


def check_writable(path: Path, argument: str) -> None:
    """`path` can be written as petacomm.files checks every output (its directory exists, a
    file can be created in it) and is a regular file if it exists; PetacommError naming
    `argument` otherwise."""
    from petacomm.files import check_output_path

    check_output_path(path, argument)
    if path.exists() and not path.is_file():
        raise PetacommError(f"{argument}: '{path}' exists and is not a regular file")


def check_output(log: Path) -> None:
    """The log (and its partial-log directory) can be written: checked before the launch."""
    check_writable(log, "--output")
    partial = log.with_name(log.name + ".partial")
    if partial.exists() and not partial.is_dir():
        raise PetacommError(f"--output: '{partial}' (for partial logs) is not a directory")


def prepare(command: list[str], args) -> ProfileRun:
    if not command:
        raise PetacommError("no command given: petacomm profile [options] -- mpiexec -n 4 ./app")
    settings.check_environment(dict(os.environ))
    prof_settings = settings.env_from_args(args)
    timeout = getattr(args, "timeout", None)
    if timeout is not None and not timeout > 0:
        raise PetacommError(f"--timeout: must be a positive number of seconds, got {timeout}")
    first = Path(command[0]).name
    is_launcher = first in LAUNCHERS
    program = target_program(command) if is_launcher else _executable(command[0])
    refuse_empty_names(
        [("--profiler-lib", args.profiler_lib), ("--mpicc", args.mpicc), ("-o", args.output)]
    )
    notes: list[str] = []
    if args.profiler_lib:
        lib = Path(args.profiler_lib)
        check_library(lib)
    elif args.mpicc:
        lib = builder.build(args.mpicc, log=lambda m: notes.append(m)).library
    else:
        chosen, note = builder.choose(program)
        lib = chosen.library
        if note:
            notes.append(note)
    if args.output:
        chosen = Path(args.output).resolve()
        is_dir = chosen.is_dir() or args.output.endswith("/")
        log = chosen / default_log_path(command, program).name if is_dir else chosen
    else:
        log = default_log_path(command, program)
    check_output(log)
    prof_env = {"PETACOMM_PROF_OUTPUT": str(log), **prof_settings}
    preload = str(lib.resolve())
    existing = os.environ.get("LD_PRELOAD", "")
    preload_value = f"{preload}:{existing}" if existing else preload
    env = dict(os.environ)
    env.update(prof_env)
    argv = list(command)
    vendor = "none"
    if is_launcher and first != "srun":
        resolved = shutil.which(command[0])
        if not resolved:
            raise PetacommError(f"launcher '{command[0]}' not found")
        vendor = probes.remembered(
            "launcher-vendor", Path(resolved), lambda: describe_launcher(resolved).vendor
        )
    if vendor == "openmpi":
        extra = ["-x", f"LD_PRELOAD={preload_value}"]
        for name, value in prof_env.items():
            extra += ["-x", f"{name}={value}"]
        argv = [argv[0], *extra, *argv[1:]]
    elif vendor in ("mpich", "intel"):
        extra = ["-genv", "LD_PRELOAD", preload_value]
        for name, value in prof_env.items():
            extra += ["-genv", name, value]
        argv = [argv[0], *extra, *argv[1:]]
    elif first == "srun":
        exports = ",".join(f"{k}={v}" for k, v in prof_env.items())
        argv = [argv[0], f"--export=ALL,LD_PRELOAD={preload_value},{exports}", *argv[1:]]
    else:
        env["LD_PRELOAD"] = preload_value
        if is_launcher:
            notes.append(
                f"launcher '{first}' not recognised: the profiler is passed in the environment"
            )
    return ProfileRun(argv, env, log, lib, notes)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class _Supervisor:
    """Runs the command; a signal to this process (or the time limit) is passed on to it,
    and if it does not stop within GRACE_SECONDS it is killed.

    The main thread blocks in waitpid, so the command's end is seen at once (waiting in
    slices polled it with sleeps of up to 50 ms, 25 ms added to every profiled run on
    average); signal handlers run between the retried waitpid calls, and timers in helper
    threads end the command at the time limit and at the grace period's end."""

    def __init__(self, child: subprocess.Popen):
        self.child = child
        self.stopped_by: str | None = None
        self.signal_number: int | None = None
        self._timers: list[threading.Timer] = []

    def _later(self, seconds: float, action) -> None:
        timer = threading.Timer(seconds, action)
        timer.daemon = True
        timer.start()
        self._timers.append(timer)

    def _stop(self, why: str, signum: int) -> None:
        if self.stopped_by is None:
            self.stopped_by, self.signal_number = why, signum
            self._later(GRACE_SECONDS, self._kill)
        self._signal(signum)

    def _signal(self, signum: int) -> None:
        # Not Popen.send_signal: its poll() cannot take the lock the waiting thread holds.
        if self.child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.child.pid, signum)

    def _kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _forward(self, signum, _frame) -> None:
        self._stop(signal.Signals(signum).name, signum)

    def wait(self, timeout: float | None) -> int:
        previous = {s: signal.signal(s, self._forward) for s in FORWARDED}
        try:
            if timeout is not None:
                self._later(timeout, lambda: self._stop(f"--timeout {timeout:g} s", signal.SIGTERM))
            return self.child.wait()
        finally:
            for timer in self._timers:
                timer.cancel()
            for s, handler in previous.items():
                signal.signal(s, handler)


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def run(command: list[str], args, out=print) -> int:
    plan = prepare(command, args)
    for note in plan.notes:
        out(f"petacomm profile: {note}")
    before = _mtime(plan.log)
    started = time.time_ns()
    try:
        child = subprocess.Popen(plan.argv, env=plan.env)
    except OSError as err:
        raise PetacommError(f"cannot run '{plan.argv[0]}': {err.strerror}") from err
    supervisor = _Supervisor(child)
    code = supervisor.wait(getattr(args, "timeout", None))
    wrote_log = _mtime(plan.log) not in (None, before)
    partial_logs = [
        p for p in plan.partial.glob("rank-*.live") if (_mtime(p) or 0) >= started - 10**9
    ]
    stopped = supervisor.stopped_by
    if wrote_log and stopped is None:
        out(f"petacomm profile: log written to {plan.log}")
        out(f"petacomm profile: read it with: petacomm report {plan.log}")
        return code
    why = (
        f"stopped by {stopped} (passed on to the launcher)"
        if stopped
        else f"the program did not reach MPI_Finalize ({_exit_text(code)})"
    )
    if partial_logs:
        n = len(partial_logs)
        out(f"petacomm profile: {why}; partial logs of {n} rank{'s' if n != 1 else ''} are in")
        out(f"    {plan.partial}")
        out(f"petacomm profile: read them with: petacomm report {plan.log}")
    elif wrote_log:
        out(f"petacomm profile: {why}; the log was written to {plan.log}")
    elif stopped:
        print(
            f"petacomm profile: error: no profile was written: {why} before any rank had "
            "started profiling",
            file=sys.stderr,
        )
    else:
        raise PetacommError(
            f"no profile was written ({why.replace('the program did not reach MPI_Finalize ', '')})"
            ": the program never initialised MPI through the profiler (is it statically linked, "
            f"or built against another MPI? the profiler used is {plan.library})"
        )
    if supervisor.signal_number is not None:
        return 128 + int(supervisor.signal_number)
    return code if code > 0 else (128 - code if code < 0 else 1)
