"""``petacomm bench profiler-overhead``: what the profiler costs a running program.

Runs the native ``petacomm-prof-overhead`` with the profiler preloaded. Inside that one run
the same loops execute alternately through ``MPI_*`` (intercepted) and ``PMPI_*`` (not
intercepted), so both are measured on the same processes at the same time, and the machine's
noise cancels. Prints the slowdown of a realistic iteration mix and the time added per
intercepted call, also with 16 to 37,000 distinct keys in the table. Targets: at most 2 % on
the mix, at most 50 ns per call whatever the number of keys.

With ``--peers ipm,mpip`` the same in-process measurements run under each peer profiler
(built by scripts/build-profiler-peer.sh; a peer not built for this MPI is skipped with a
note), and ``petacomm-prof-manykeys`` (about 37,000 distinct keys per rank) runs end to end
plain, under ``petacomm profile`` (the command itself included) and under each peer: wall
time, slowdown and log size. Targets: at most 5 % end to end, summary log at most 10x IPM's.
mpiP walks the stack for a call site at every call by default, which petacomm does only
with ``--callsites``: ``mpip-k0`` runs mpiP without call sites (``MPIP="-k 0"``), and with
any peer the in-process figures are also measured for petacomm with ``--callsites 1``, so
that each is compared with the peer doing the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from petacomm.errors import PetacommError, refuse_repeats
from petacomm.files import refuse_empty_names, write_text_atomically
from petacomm.units import decimal_int

TARGET_SLOWDOWN_PERCENT = 2.0
TARGET_NS_PER_CALL = 50.0
TARGET_END_TO_END_PERCENT = 5.0
PEERS = {"ipm": "libipm.so", "mpip": "libmpiP.so", "mpip-k0": "libmpiP.so"}
# Peers run another way: (the peer whose build they use, its environment settings).
PEER_VARIANTS = {"mpip-k0": ("mpip", {"MPIP": "-k 0"})}
# petacomm's call-site depth when it is measured beside peers that record call sites.
CALLSITES_BESIDE_PEERS = 1


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
    p.add_argument(
        "--keys",
        default="16,12000,37000",
        metavar="K1,K2,...",
        help="distinct keys of the keys sweeps [16,12000,37000]; 'none' skips them",
    )
    p.add_argument(
        "--peers",
        default=None,
        metavar="LIST",
        help="also measure these peer profilers (ipm, mpip, mpip-k0: mpiP without call sites) "
        "and run the many-keys program end to end under each (scripts/build-profiler-peer.sh "
        "builds them)",
    )
    p.add_argument(
        "--end-to-end-ranks", type=int, default=4, help="ranks of the many-keys program [4]"
    )
    p.add_argument(
        "--end-to-end-reps", type=int, default=3, help="runs per tool, alternating (best) [3]"
    )
    p.add_argument(
        "--end-to-end-compute-us",
        type=float,
        default=500.0,
        help="compute per many-keys iteration, us [500]",
    )
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.set_defaults(func=run)


# The compute per iteration at most (a second).
MAX_COMPUTE_US = 1e6
MAX_C_INT = (1 << 31) - 1


def _check(args) -> None:
    import math

    from petacomm.launch import MAX_LOCAL_RANKS

    for name in ("ranks", "iterations", "calls", "reps"):
        value = getattr(args, name)
        if value < 1:
            raise PetacommError(f"--{name}: must be a positive integer, got {value}")
    if args.reps > 101:
        raise PetacommError(f"--reps: at most 101, got {args.reps}")
    # The program reads them with atoi: 4294967297 iterations ran as 1.
    for name in ("iterations", "calls"):
        if getattr(args, name) > MAX_C_INT:
            raise PetacommError(f"--{name}: at most {MAX_C_INT}, got {getattr(args, name)}")
    for option, value in (
        ("--compute-us", args.compute_us),
        ("--end-to-end-compute-us", args.end_to_end_compute_us),
    ):
        if not (math.isfinite(value) and 0 <= value <= MAX_COMPUTE_US):
            raise PetacommError(
                f"{option}: must be a number of microseconds from 0 to {MAX_COMPUTE_US:g}, "
                f"got {value}"
            )
    _key_counts(args.keys)
    if args.peers is not None and not _peer_names(args.peers):
        raise PetacommError(f"--peers: no peer named (known: {', '.join(PEERS)})")
    for peer in _peer_names(args.peers or ""):
        if peer not in PEERS:
            raise PetacommError(f"--peers: unknown peer {peer!r} (known: {', '.join(PEERS)})")
    refuse_repeats(_peer_names(args.peers or ""), "--peers")
    for name in ("end_to_end_ranks", "end_to_end_reps"):
        if getattr(args, name) < 1:
            raise PetacommError(f"--{name.replace('_', '-')}: must be a positive integer")
    if args.end_to_end_reps > 101:  # as --reps: each is a whole run of every tool
        raise PetacommError(f"--end-to-end-reps: at most 101, got {args.end_to_end_reps}")
    for option, value in (("--ranks", args.ranks), ("--end-to-end-ranks", args.end_to_end_ranks)):
        if value > MAX_LOCAL_RANKS:
            raise PetacommError(
                f"{option}: at most {MAX_LOCAL_RANKS} ranks on one machine, got {value}"
            )
    from petacomm.profile.run import check_library, check_writable

    refuse_empty_names([("--profiler-lib", args.profiler_lib), ("--mpiexec", args.mpiexec)])
    if args.profiler_lib:
        check_library(Path(args.profiler_lib))
    if args.json is not None:
        if not args.json:
            raise PetacommError("--json: empty file name")
        check_writable(Path(args.json), "--json")


def _key_counts(text: str) -> list[int]:
    if text.strip().lower() == "none":
        return []
    try:
        counts = [decimal_int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise PetacommError(f"--keys: not a list of counts: {text!r}") from None
    if not counts or any(not 1 <= k <= 40960 for k in counts) or len(counts) > 16:
        raise PetacommError(f"--keys: up to 16 counts of 1 to 40960, got {text!r}")
    refuse_repeats(counts, "--keys")  # a count twice was measured and shown twice
    return counts


def _peer_names(text: str) -> list[str]:
    return [p.strip().lower() for p in text.split(",") if p.strip()]


def find_peer(name: str, libmpi) -> tuple[Path | None, str]:
    """The peer profiler ``name`` built for ``libmpi`` (scripts/build-profiler-peer.sh), or
    None and why not."""
    from petacomm.profile.builder import cache_root

    built = PEER_VARIANTS.get(name, (name, {}))[0]
    root = cache_root() / "peers"
    for record in sorted(root.glob(f"{built}-*/peer.json")):
        try:
            info = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        lib = record.parent / info.get("library", f"lib/{PEERS[name]}")
        if lib.is_file() and (libmpi is None or Path(info.get("libmpi", "")) == libmpi):
            return lib, ""
    return None, (
        f"not built for {libmpi or 'this MPI'} in {root} (build it with "
        f"scripts/build-profiler-peer.sh {built} SOURCE --mpicc MPICC)"
    )


def _overhead_args(args) -> list[str]:
    extra = [
        "--iterations",
        str(args.iterations),
        "--calls",
        str(args.calls),
        "--reps",
        str(args.reps),
        "--compute-us",
        str(args.compute_us),
    ]
    counts = _key_counts(args.keys)
    if counts:
        extra += ["--keys", ",".join(str(k) for k in counts)]
    return extra


def _figures(raw: dict) -> dict:
    mix_with, mix_without = raw["mix_mpi"]["min_s"], raw["mix_pmpi"]["min_s"]
    calls_with, calls_without = raw["calls_mpi"]["min_s"], raw["calls_pmpi"]["min_s"]
    n_calls = raw["calls_iterations"] * raw["calls_per_iteration"]
    n_mix = raw["iterations"] * raw["mix_calls_per_iteration"]
    return {
        "ranks": raw["ranks"],
        "mix_with_profiler_s": mix_with,
        "mix_without_profiler_s": mix_without,
        "mix_slowdown_percent": 100.0 * (mix_with / mix_without - 1.0),
        "mix_median_slowdown_percent": 100.0
        * (raw["mix_mpi"]["median_s"] / raw["mix_pmpi"]["median_s"] - 1.0),
        "mix_ns_per_call": 1e9 * (mix_with - mix_without) / n_mix,
        "calls_with_profiler_s": calls_with,
        "calls_without_profiler_s": calls_without,
        "ns_per_call": 1e9 * (calls_with - calls_without) / n_calls,
        # Median of paired differences: robust to the noise of a shared machine.
        "keys_ns_per_call": {
            str(k["keys"]): 1e9 * k["difference"]["median_s"] / k["calls"]
            for k in raw.get("keys", [])
        },
        "raw": raw,
    }


def _run_json(argv: list[str], env: dict, what: str, cwd: Path | None = None) -> dict:
    from petacomm.launch import run_job

    try:
        done = run_job(argv, timeout=3600, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise PetacommError(f"{what} did not finish within an hour (stopped)") from None
    if done.returncode != 0:
        raise PetacommError(f"{what} exited {done.returncode}:\n{done.stderr[-2000:]}")
    line = next((x for x in done.stdout.splitlines() if x.startswith("{")), None)
    if line is None:
        raise PetacommError(f"{what} printed no result:\n{done.stdout[-2000:]}")
    return json.loads(line)


def measure(args) -> dict:
    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path

    _check(args)
    program = program_path("petacomm-prof-overhead")
    launcher = find_mpiexec(args.mpiexec)
    launcher.check_can_run()
    command = launcher.command(args.ranks, [str(program), *_overhead_args(args)])
    with tempfile.TemporaryDirectory() as tmp:
        plan = _prepared_run(args, command, Path(tmp) / "overhead.json")
        raw = _run_json(plan.argv, plan.env, "petacomm-prof-overhead")
        if not raw["profiler_active"]:
            raise PetacommError("the profiler was not active in the benchmark run (not preloaded?)")
        # Best of the repetitions: on a shared machine noise only ever adds time.
        result = {"profiler": str(plan.library), **_figures(raw)}
        peers = _peer_names(args.peers or "")
        if peers:
            from petacomm.profile.builder import libmpi_of

            libmpi = libmpi_of(plan.library)
            with_sites = _prepared_run(
                args, command, Path(tmp) / "callsites.json", callsites=CALLSITES_BESIDE_PEERS
            )
            result["callsites"] = {
                "depth": CALLSITES_BESIDE_PEERS,
                **_figures(_run_json(with_sites.argv, with_sites.env, "petacomm --callsites")),
            }
            result["peers"] = {}
            for name in peers:
                lib, why = find_peer(name, libmpi)
                if lib is None:
                    result["peers"][name] = {"available": False, "note": why}
                    continue
                argv = launcher.command(
                    args.ranks, [str(program), *_overhead_args(args)], _peer_launch(name, lib)
                )
                # In the scratch directory: the peers write their logs in the working one.
                peer_raw = _run_json(
                    argv, dict(os.environ), f"petacomm-prof-overhead under {name}", cwd=Path(tmp)
                )
                result["peers"][name] = {
                    "available": True,
                    "library": str(lib),
                    **_figures(peer_raw),
                }
            result["end_to_end"] = end_to_end(args, launcher, Path(tmp), peers, libmpi)
    return result


def _peer_launch(name: str, lib: Path) -> list[str]:
    """mpiexec options (Open MPI's) that preload the peer and pass its settings."""
    settings = PEER_VARIANTS.get(name, (name, {}))[1]
    return [
        "-x",
        f"LD_PRELOAD={lib}",
        *(a for k, v in settings.items() for a in ("-x", f"{k}={v}")),
    ]


def _log_bytes(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())


def end_to_end(args, launcher, tmp: Path, peers: list[str], libmpi) -> dict:
    """The many-keys program plain, under `petacomm profile` (normal and summary detail) and
    under each available peer, alternating, best of --end-to-end-reps: wall s, log bytes."""
    import shutil
    import sys
    import time

    from petacomm.native import program_path

    program = program_path("petacomm-prof-manykeys")
    # One calibration for all runs: each run calibrating its own compute made one do half
    # the work of the others when the calibration was descheduled.
    calibration = tmp / "e2e-calibration"
    calibration.mkdir()
    units = _run_json(
        launcher.command(
            args.end_to_end_ranks,
            [str(program), "--compute-us", str(args.end_to_end_compute_us), "--iterations", "1"],
        ),
        dict(os.environ),
        "many-keys program (calibration)",
        cwd=calibration,
    )["compute_units"]
    body = [str(program), "--compute-units", str(units)]
    plain = launcher.command(args.end_to_end_ranks, body)
    petacomm = shutil.which("petacomm") or str(Path(sys.executable).parent / "petacomm")
    # Each tool: its work directory -> (argv, environment) of one run.
    env = dict(os.environ)
    tools: dict[str, callable] = {"plain": lambda d: (plain, env)}
    chosen = ["--profiler-lib", args.profiler_lib] if args.profiler_lib else []
    for detail in ("normal", "summary"):
        tools[f"petacomm ({detail})"] = lambda d, detail=detail: ([
            petacomm, "profile", "--no-banner", "--detail", detail, "-o", str(d / "log.json"),
            *chosen, "--", *plain,
        ], env)  # fmt: skip
    if peers:
        # The job `petacomm profile` launches, launched directly, as the peers are: the
        # same profiler and settings without the command's own start (Python, its checks).
        def preloaded(d):
            plan = _prepared_run(args, plain, d / "log.json", detail="summary")
            return plan.argv, plan.env

        tools["petacomm (summary, preload)"] = preloaded
    for name in peers:
        lib, _ = find_peer(name, libmpi)
        if lib is not None:
            tools[name] = lambda d, lib=lib, name=name: (
                launcher.command(args.end_to_end_ranks, body, _peer_launch(name, lib)),
                env,
            )
    figures: dict[str, dict] = {name: {"wall_s": [], "log_bytes": 0} for name in tools}
    for rep in range(args.end_to_end_reps):
        order = list(tools) if rep % 2 == 0 else list(reversed(tools))
        for name in order:
            work = tmp / f"e2e-{rep}-{name.replace(' ', '_').strip('()')}"
            work.mkdir()
            argv, run_env = tools[name](work)
            t0 = time.monotonic()
            # In its own directory: the peers write their logs in the working directory.
            raw = _run_json(argv, run_env, f"many-keys program ({name})", cwd=work)
            figures[name]["wall_s"].append(time.monotonic() - t0)
            figures[name]["finalize_s"] = min(
                figures[name].get("finalize_s", float("inf")), raw["finalize_s"]
            )
            figures[name]["keys_per_rank"] = raw["keys_per_rank"]
            figures[name]["log_bytes"] = _log_bytes(work)
    base = min(figures["plain"]["wall_s"])
    for f in figures.values():
        f["best_wall_s"] = min(f["wall_s"])
        f["slowdown_percent"] = 100.0 * (f["best_wall_s"] / base - 1.0)
    return {
        "ranks": args.end_to_end_ranks,
        "compute_us": args.end_to_end_compute_us,
        "compute_units": units,
        **figures,
    }


def _prepared_run(args, command: list[str], output: Path, **settings_given):
    """What `petacomm profile -o OUTPUT [--SETTING VALUE ...] -- COMMAND` would run, prepared
    without running it (petacomm.profile.run.ProfileRun): every other profiler setting at
    its default (prof-settings.json), no banner, the profiler --profiler-lib names."""
    from petacomm.profile import run as profile_run
    from petacomm.profile import settings

    options = argparse.Namespace(
        **settings.namespace_defaults(), profiler_lib=args.profiler_lib, mpicc=None, timeout=None
    )
    vars(options).update(settings_given, output=str(output), no_banner=True)
    return profile_run.prepare(command, options)


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
    if r["keys_ns_per_call"]:
        print(
            "keys sweeps (cheap collectives on MPI_COMM_SELF cycling through K distinct keys; "
            "median of 41 paired sweeps):"
        )
        for keys, ns in r["keys_ns_per_call"].items():
            verdict = "ok" if ns <= TARGET_NS_PER_CALL else "ABOVE TARGET"
            print(f"  {int(keys):>6} keys  added per call {ns:6.1f} ns  ({verdict})")
    if "peers" in r:
        _print_peers(r)
    if args.json:
        write_text_atomically(args.json, json.dumps(r, indent=2) + "\n", "--json")
        print(f"figures written to {args.json}")
    return 0


def _print_peers(r: dict) -> None:
    print("peers (the same in-process measurements under each profiler):")
    keys = list(r["keys_ns_per_call"])
    head = f"  {'profiler':<18} {'mix slowdown':>13} {'ns/call':>8}"
    head += "".join(f" {('ns@' + k + ' keys'):>14}" for k in keys)
    print(head)
    sites = f"petacomm --callsites {r['callsites']['depth']}"
    rows = [("petacomm", r), (sites, r["callsites"])] + list(r["peers"].items())
    for name, f in rows:
        if not f.get("available", True):
            print(f"  {name:<18} skipped: {f['note']}")
            continue
        line = f"  {name:<18} {f['mix_slowdown_percent']:>+11.2f} % {f['ns_per_call']:>8.1f}"
        line += "".join(f" {f['keys_ns_per_call'].get(k, float('nan')):>14.1f}" for k in keys)
        print(line)
    e = r["end_to_end"]
    tools = [k for k in e if isinstance(e[k], dict)]
    keys_per_rank = e["plain"]["keys_per_rank"]
    print(
        f"many-keys program end to end ({e['ranks']} ranks, {keys_per_rank} distinct keys per "
        f"rank, {e['compute_us']:g} us compute per iteration; best of the runs, wall of the "
        "whole command):"
    )
    print(f"  {'tool':<28} {'wall':>10} {'slowdown':>10} {'finalize':>10} {'log':>12}")
    for name in tools:
        f = e[name]
        log = "-" if name == "plain" else f"{f['log_bytes'] / 1024:.1f} KiB"
        print(
            f"  {name:<28} {f['best_wall_s']:>8.3f} s {f['slowdown_percent']:>+8.2f} % "
            f"{1e3 * f['finalize_s']:>7.1f} ms {log:>12}"
        )
    print(
        f"  (targets: petacomm <= {TARGET_END_TO_END_PERCENT:g} % end to end; summary log "
        "<= 10x IPM's; finalize is rank 0's MPI_Finalize, the MPI library's own included)"
    )
