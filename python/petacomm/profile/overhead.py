"""``petacomm bench profiler-overhead``: what the profiler costs a running program.

Runs the native ``petacomm-prof-overhead`` with the profiler preloaded. Inside that one run
the same loops execute alternately through ``MPI_*`` (intercepted) and ``PMPI_*`` (not
intercepted), so both are measured on the same processes at the same time, and the machine's
noise cancels. Prints the slowdown of a realistic iteration mix and the time added per
intercepted call. Targets: at most 2 % on the mix, at most 100 ns per call.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.files import write_text_atomically

TARGET_SLOWDOWN_PERCENT = 2.0
TARGET_NS_PER_CALL = 100.0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "profiler-overhead",
        help="cost of the communication profiler: slowdown and ns per intercepted call",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("-n", "--ranks", type=int, default=2, help="MPI ranks [2]")
    p.add_argument("--iterations", type=int, default=2000, help="mix iterations per rep [2000]")
    p.add_argument("--calls", type=int, default=200000, help="cheap-call iterations [200000]")
    p.add_argument("--reps", type=int, default=9, help="alternating repetitions [9]")
    p.add_argument(
        "--compute-us", type=float, default=200.0, help="compute per mix iteration, us [200]"
    )
    p.add_argument("--mpiexec", help="MPI launcher (default: the one petacomm was built with)")
    p.add_argument("--profiler-lib", help="libpetacomm-prof.so to measure [the bundled one]")
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.set_defaults(func=run)


def _check(args) -> None:
    for name in ("ranks", "iterations", "calls", "reps"):
        value = getattr(args, name)
        if value < 1:
            raise PetacommError(f"--{name}: must be a positive integer, got {value}")
    if args.reps > 101:
        raise PetacommError(f"--reps: at most 101, got {args.reps}")
    if args.compute_us < 0:
        raise PetacommError(f"--compute-us: must be non-negative, got {args.compute_us}")
    from petacomm.profile.run import check_library, check_writable

    if args.profiler_lib:
        check_library(Path(args.profiler_lib))
    if args.json:
        check_writable(Path(args.json).resolve(), "--json")


def measure(args) -> dict:
    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path
    from petacomm.profile import run as profile_run
    from petacomm.profile import settings

    _check(args)
    program = program_path("petacomm-prof-overhead")
    launcher = find_mpiexec(args.mpiexec)
    launcher.check_can_run()
    command = launcher.command(
        args.ranks,
        [
            str(program),
            "--iterations",
            str(args.iterations),
            "--calls",
            str(args.calls),
            "--reps",
            str(args.reps),
            "--compute-us",
            str(args.compute_us),
        ],
    )
    with tempfile.TemporaryDirectory() as tmp:
        # Every profiler setting at its default (prof-settings.json), no banner.
        options = argparse.Namespace(
            **settings.namespace_defaults(),
            profiler_lib=args.profiler_lib,
            mpicc=None,
            timeout=None,
        )
        options.output = str(Path(tmp) / "overhead.json")
        options.no_banner = True
        plan = profile_run.prepare(command, options)
        done = subprocess.run(
            plan.argv, env=plan.env, capture_output=True, text=True, timeout=3600, check=False
        )
    if done.returncode != 0:
        raise PetacommError(
            f"petacomm-prof-overhead exited {done.returncode}:\n{done.stderr[-2000:]}"
        )
    line = next((x for x in done.stdout.splitlines() if x.startswith("{")), None)
    if line is None:
        raise PetacommError(f"petacomm-prof-overhead printed no result:\n{done.stdout[-2000:]}")
    raw = json.loads(line)
    if not raw["profiler_active"]:
        raise PetacommError("the profiler was not active in the benchmark run (not preloaded?)")
    # Best of the repetitions: on a shared machine noise only ever adds time.
    mix_with, mix_without = raw["mix_mpi"]["min_s"], raw["mix_pmpi"]["min_s"]
    calls_with, calls_without = raw["calls_mpi"]["min_s"], raw["calls_pmpi"]["min_s"]
    n_calls = raw["calls_iterations"] * raw["calls_per_iteration"]
    n_mix = raw["iterations"] * raw["mix_calls_per_iteration"]
    return {
        "ranks": raw["ranks"],
        "profiler": str(plan.library),
        "mix_with_profiler_s": mix_with,
        "mix_without_profiler_s": mix_without,
        "mix_slowdown_percent": 100.0 * (mix_with / mix_without - 1.0),
        "mix_median_slowdown_percent": 100.0
        * (raw["mix_mpi"]["median_s"] / raw["mix_pmpi"]["median_s"] - 1.0),
        "mix_ns_per_call": 1e9 * (mix_with - mix_without) / n_mix,
        "calls_with_profiler_s": calls_with,
        "calls_without_profiler_s": calls_without,
        "ns_per_call": 1e9 * (calls_with - calls_without) / n_calls,
        "raw": raw,
    }


def run(args) -> int:
    from petacomm.profile import units

    r = measure(args)
    raw = r["raw"]
    print(
        f"profiler overhead: {r['ranks']} ranks, {raw['reps']} alternating repetitions in one "
        "run (MPI_* through the profiler vs PMPI_* directly; best repetition, slowest rank)"
    )
    print(f"profiler: {r['profiler']}")
    print(
        f"realistic mix ({raw['iterations']} iterations of {raw['compute_us']:g} us compute + "
        "halo exchange of 4 KiB with 2 neighbours + 8 B allreduce, 6.1 MPI calls each):"
    )
    print(f"  without profiler  {units.seconds(r['mix_without_profiler_s'])}")
    print(f"  with profiler     {units.seconds(r['mix_with_profiler_s'])}")
    verdict = "ok" if r["mix_slowdown_percent"] <= TARGET_SLOWDOWN_PERCENT else "ABOVE TARGET"
    print(
        f"  slowdown          {r['mix_slowdown_percent']:+.2f} %  "
        f"(target <= {TARGET_SLOWDOWN_PERCENT:g} %: {verdict})"
    )
    print(f"  (medians: {r['mix_median_slowdown_percent']:+.2f} %; noise of this machine)")
    print(
        f"cheap calls ({raw['calls_iterations']} x send to MPI_PROC_NULL, irecv+wait from "
        "MPI_PROC_NULL, 8 B allreduce on MPI_COMM_SELF):"
    )
    print(f"  without profiler  {units.seconds(r['calls_without_profiler_s'])}")
    print(f"  with profiler     {units.seconds(r['calls_with_profiler_s'])}")
    verdict = "ok" if r["ns_per_call"] <= TARGET_NS_PER_CALL else "ABOVE TARGET"
    print(
        f"  added per call    {r['ns_per_call']:.1f} ns  "
        f"(target <= {TARGET_NS_PER_CALL:g} ns: {verdict})"
    )
    if args.json:
        write_text_atomically(args.json, json.dumps(r, indent=2) + "\n", "--json")
        print(f"figures written to {args.json}")
    return 0
