"""``petacomm profile [options] -- mpiexec -n 4 ./app args``: runs a program with the
profiler preloaded on every rank and says where the log went.

The profiler reaches the ranks through the launcher's own way of passing environment
variables (Open MPI ``-x NAME=VALUE``, MPICH/Intel ``-genv NAME VALUE``), so the launcher
itself never loads it; without a known launcher (a singleton run, srun, ...) the variables
are set in the environment the command inherits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.launch import describe_launcher
from petacomm.profile import builder

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


@dataclass
class ProfileRun:
    argv: list[str]
    env: dict[str, str]
    log: Path
    library: Path
    notes: list[str] = field(default_factory=list)


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


def settings_env(args) -> dict[str, str]:
    env = {}
    if args.detail:
        env["PETACOMM_PROF_DETAIL"] = args.detail
    if args.wrap:
        env["PETACOMM_PROF_WRAP"] = args.wrap
    if args.table_size:
        env["PETACOMM_PROF_TABLE_SIZE"] = args.table_size
    if args.size_exact:
        env["PETACOMM_PROF_SIZE_EXACT"] = args.size_exact
    if args.partial_interval is not None:
        if args.partial_interval < 0:
            raise PetacommError(
                f"--partial-interval: must be a non-negative number of seconds, got "
                f"{args.partial_interval}"
            )
        env["PETACOMM_PROF_PARTIAL_INTERVAL"] = str(args.partial_interval)
    if args.io:
        env["PETACOMM_PROF_IO"] = args.io
    if args.no_banner:
        env["PETACOMM_PROF_BANNER"] = "0"
    if args.lbst_barrier:
        env["PETACOMM_PROF_LBST_BARRIER"] = "1"
    return env


def prepare(command: list[str], args) -> ProfileRun:
    if not command:
        raise PetacommError("no command given: petacomm profile [options] -- mpiexec -n 4 ./app")
    first = Path(command[0]).name
    is_launcher = first in LAUNCHERS
    program = target_program(command) if is_launcher else _executable(command[0])
    notes: list[str] = []
    if args.profiler_lib:
        lib = Path(args.profiler_lib)
        if not lib.is_file():
            raise PetacommError(f"--profiler-lib: '{lib}' is not a file")
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
    if not log.parent.is_dir():
        raise PetacommError(f"--output: directory '{log.parent}' does not exist")
    prof_env = {"PETACOMM_PROF_OUTPUT": str(log), **settings_env(args)}
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
        vendor = describe_launcher(resolved).vendor
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


def run(command: list[str], args, out=print) -> int:
    plan = prepare(command, args)
    for note in plan.notes:
        out(f"petacomm profile: {note}")
    partial = plan.log.with_name(plan.log.name + ".partial")
    try:
        child = subprocess.Popen(plan.argv, env=plan.env)
    except OSError as err:
        raise PetacommError(f"cannot run '{plan.argv[0]}': {err.strerror}") from err
    try:
        code = child.wait()
    except KeyboardInterrupt:
        child.send_signal(signal.SIGINT)
        try:
            code = child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            code = child.wait()
    if plan.log.exists():
        out(f"petacomm profile: log written to {plan.log}")
        out(f"petacomm profile: read it with: petacomm report {plan.log}")
    elif partial.is_dir() and any(partial.glob("rank-*.json")):
        n = len(list(partial.glob("rank-*.json")))
        out(
            f"petacomm profile: the program did not reach MPI_Finalize (exit code {code}); "
            f"partial logs of {n} rank{'s' if n != 1 else ''} are in {partial}"
        )
        out(f"petacomm profile: read them with: petacomm report {plan.log}")
    else:
        out(
            "petacomm profile: no profile was written: the program never initialised MPI "
            "through the profiler (is it statically linked, or built against another MPI? "
            f"the profiler used is {plan.library})"
        )
    return code
