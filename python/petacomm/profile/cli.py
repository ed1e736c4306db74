"""Commands ``petacomm profile``, ``petacomm profiler`` and ``petacomm report``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.files import check_output_path, refuse_empty_names, write_text_atomically


def register(subparsers) -> None:
    _register_profile(subparsers)
    _register_profiler(subparsers)
    _register_report(subparsers)


# ---- petacomm profile ---------------------------------------------------------------------


def _register_profile(subparsers) -> None:
    from petacomm.profile import settings
    from petacomm.topology.arguments import positive_seconds

    p = subparsers.add_parser(
        "profile",
        help="run an MPI program with the communication profiler preloaded on every rank",
        description=(
            "Runs COMMAND (usually an mpiexec line) with libpetacomm-prof preloaded on every "
            "rank, and prints where the log went. Example: petacomm profile -- mpiexec -n 4 "
            "./app input.dat. Each option sets a PETACOMM_PROF_* variable (docs/profiler.md); "
            "values are checked before the launch. Exits non-zero when no complete log was "
            "written (then it names the partial logs)."
        ),
    )
    settings.add_arguments(p)
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="stop the run after SECONDS (SIGTERM to the launcher, as for a signal to this "
        "command) and keep what the ranks recorded",
    )
    p.add_argument("--profiler-lib", help="the libpetacomm-prof.so to preload")
    p.add_argument("--mpicc", help="build (once, cached) and use the profiler for this MPI's mpicc")
    # Its own dest: `command` is the sub-command's name in the top-level parser.
    p.add_argument(
        "program", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="-- COMMAND [ARGS...]"
    )
    p.set_defaults(func=_profile)


def _profile(args) -> int:
    from petacomm.profile import run

    command = list(args.program)
    if command and command[0] == "--":
        command = command[1:]
    return run.run(command, args)


# ---- petacomm profiler ----------------------------------------------------------------


def _register_profiler(subparsers) -> None:
    p = subparsers.add_parser(
        "profiler",
        help="build or list profiler libraries for other MPI installations",
        description="A profiler must be built against the MPI the program uses. 'build' "
        "compiles one for the MPI of --mpicc into the cache (PETACOMM_PROF_CACHE); "
        "'list' shows the profilers 'petacomm profile' can choose from.",
    )
    sub = p.add_subparsers(dest="profiler_command", metavar="ACTION")
    b = sub.add_parser("build", help="build the profiler for the MPI of an mpicc")
    b.add_argument("--mpicc", required=True, help="the MPI C compiler wrapper, e.g. /usr/bin/mpicc")
    b.add_argument("-j", "--jobs", type=int, help="parallel compile jobs")
    b.add_argument("-v", "--verbose", action="store_true", help="show the build output")
    b.set_defaults(func=_profiler_build)
    ls = sub.add_parser("list", help="list the profilers available")
    ls.set_defaults(func=_profiler_list)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


# Compile jobs at most: more is a typing error, not a machine (make forks each one).
MAX_BUILD_JOBS = 1024


def _profiler_build(args) -> int:
    from petacomm.profile import builder

    if args.jobs is not None and args.jobs < 1:
        raise PetacommError(f"--jobs: must be a positive integer, got {args.jobs}")
    if args.jobs is not None and args.jobs > MAX_BUILD_JOBS:  # was handed to make as it was
        raise PetacommError(f"--jobs: at most {MAX_BUILD_JOBS}, got {args.jobs}")
    prof = builder.build(args.mpicc, jobs=args.jobs, verbose=args.verbose)
    print(f"profiler: {prof.library}")
    print(f"links:    {prof.libmpi}")
    return 0


def _profiler_list(args) -> int:
    from petacomm.profile import builder

    profilers = builder.available()
    if not profilers:
        print("no profilers (the native part is not built and the cache is empty)")
        return 1
    for p in profilers:
        print(f"{p.library}\n    links {p.libmpi}  (mpicc {p.mpicc or '?'}; {p.origin})")
    return 0


# ---- petacomm report ------------------------------------------------------------------


def _register_report(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="summarise a profile log (terminal and HTML), or compare two",
        description="Reads a log written by the profiler (or the partial logs of a run that "
        "did not finish: give the log path or its .partial directory). With LOG2, shows "
        "what changed between the runs.",
    )
    p.add_argument("log", help="profile log, or its .partial/ directory")
    p.add_argument("log2", nargs="?", help="a second log to compare with")
    p.add_argument("-o", "--html", dest="html", help="also write a self-contained HTML report")
    p.add_argument("--model", help="machine model file (petacomm netbench) to overlay")
    p.add_argument(
        "--all", action="store_true", help="list every call (and call site) in the terminal"
    )
    p.add_argument(
        "--callsite-threshold",
        type=float,
        default=1.0,
        metavar="PERCENT",
        help="show the call sites with at least PERCENT of the time at call sites [1]",
    )
    p.set_defaults(func=_report)


def _report(args) -> int:
    from petacomm.profile import compare, html, log, terminal

    if not 0 <= args.callsite_threshold <= 100:
        raise PetacommError(
            f"--callsite-threshold: must be between 0 and 100 %, got {args.callsite_threshold:g}"
        )
    inputs = [("LOG", args.log), ("LOG2", args.log2), ("--model", args.model)]
    refuse_empty_names([*inputs, ("-o", args.html)])
    if args.html is not None:  # before reading anything: the HTML must never replace an input
        check_output_path(args.html, "-o", inputs)
    first = log.load(args.log)
    model = None
    if args.model is not None:
        from petacomm.model import load as load_model

        try:
            model = load_model(args.model)
        except PetacommError as err:
            raise PetacommError(f"--model: {err}") from None
    if args.log2 is not None:
        second = log.load(args.log2)
        comparison = compare.compare(first, second)
        sys.stdout.write(terminal.comparison_report(comparison))
        if args.html is not None:
            write_text_atomically(Path(args.html), html.comparison_page(comparison), "-o", inputs)
            print(f"HTML report: {Path(args.html).resolve()}")
        return 0
    sys.stdout.write(
        terminal.report(first, all_calls=args.all, callsite_threshold=args.callsite_threshold)
    )
    if args.html is not None:
        write_text_atomically(Path(args.html), html.page(first, model=model), "-o", inputs)
        print(f"HTML report: {Path(args.html).resolve()}")
    return 0
