"""``petacomm bench mapmaker``: the map-maker's PCG iteration time per reduction strategy,
side by side at several rank counts — the 2011 study's headline (dense allreduce against
the sparse exchange of shared pixels) measured on this machine.

Each rank count is one run of ``petacomm-mapmaker`` that builds the scan once and solves it
with every strategy in turn, ``--rounds`` times over (interleaved), for exactly
``--iterations`` PCG iterations each; per strategy the round with the lowest mean iteration
time is reported (shared machines are noisy: compare within one run, not across runs).
Times are the mean per iteration of the slowest rank; bytes and messages are per execution
of the reduction (3 float64 per pixel), max over ranks.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from petacomm.bench import bounded_int, launched_ranks, positive_int_list
from petacomm.errors import PetacommError, refuse_repeats
from petacomm.progress import run_showing_progress

SCHEMA_VERSION = 1


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "mapmaker",
        help="map-maker PCG iteration time per reduction strategy (dense vs sparse)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--ranks", default="4,8", help="rank counts (default 4,8)")
    parser.add_argument(
        "--strategies",
        help="SparseReducePlan strategies, a comma list (default: every registered strategy, "
        "in registry order: dense-allreduce first)",
    )
    parser.add_argument("--nside", type=int, default=64, help="HEALPix nside (default 64)")
    parser.add_argument(
        "--samples", type=int, default=400000, help="samples per detector (default 400000)"
    )
    parser.add_argument("--detectors", type=int, default=4, help="detectors (default 4)")
    parser.add_argument("--noise", default="1/f", help="none, white or 1/f (default 1/f)")
    parser.add_argument(
        "--iterations", type=int, default=20, help="PCG iterations per solve (default 20)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="solves per strategy (default 2)")
    parser.add_argument("--transport", default="p2p", help="p2p, neighbor or alltoallv")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--mpiexec", help="MPI launcher (default: found automatically)")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line on standard error while ranks run"
    )
    parser.set_defaults(func=run)


# petacomm-mapmaker's bounds (its --nside, --samples, --detectors, --max-iter); --rounds,
# ours: every round solves once per strategy, and the strategies of all rounds go to the
# program as one argument (99999999 rounds: "Argument list too long", a traceback).
MAX_NSIDE = 1 << 20
BOUNDS = {"samples": 1 << 40, "detectors": 1024, "iterations": 1000000, "rounds": 100}


def _strategies(text: str | None) -> list[str]:
    from petacomm.xchg import STRATEGIES, strategy_names

    if text is None:  # the registry's names (strategy_names() starts with "auto")
        return [name for name in strategy_names() if name != "auto"]
    names = [item for item in text.split(",") if item]
    for name in names:
        if name not in STRATEGIES:
            raise PetacommError(
                f"--strategies: unknown '{name}' (expected some of {', '.join(STRATEGIES)})"
            )
    if not names:
        raise PetacommError("--strategies: expected at least one strategy")
    refuse_repeats(names, "--strategies")
    return names


def run(args) -> int:
    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path

    ranks = positive_int_list(args.ranks, "--ranks")
    launched_ranks(ranks, "--ranks")
    strategies = _strategies(args.strategies)
    for option, maximum in BOUNDS.items():
        bounded_int(getattr(args, option), f"--{option}", 1, maximum)
    nside = bounded_int(args.nside, "--nside", 1, MAX_NSIDE)
    if nside & (nside - 1):
        raise PetacommError(f"--nside: expected a power of two, got {nside}")
    if args.noise not in ("none", "white", "1/f"):
        raise PetacommError(f"--noise: expected none, white or 1/f, got '{args.noise}'")
    from petacomm.xchg import TRANSPORTS

    if args.transport not in TRANSPORTS:
        raise PetacommError(
            f"--transport: expected one of {', '.join(TRANSPORTS)}, got '{args.transport}'"
        )
    if args.json is not None:  # before running ('' was ignored; a directory refused last)
        from petacomm.files import check_output_path

        check_output_path(args.json, "--json")
    program = program_path("petacomm-mapmaker")
    launcher = find_mpiexec(args.mpiexec)
    launcher.check_can_run()
    results = {
        "schema": "petacomm-bench-mapmaker",
        "schema_version": SCHEMA_VERSION,
        "parameters": {
            "nside": args.nside,
            "samples": args.samples,
            "detectors": args.detectors,
            "noise": args.noise,
            "iterations": args.iterations,
            "rounds": args.rounds,
            "transport": args.transport,
        },
        "runs": [],
    }
    print(
        f"map-maker: nside {args.nside}, {args.samples:,} samples x {args.detectors} "
        f"detectors, {args.noise} noise\n{args.iterations} PCG iterations per solve, "
        f"best of {args.rounds} solves per strategy"
    )
    header = (
        f"{'ranks':>5}  {'strategy':<16} {'iter ms':>8} {'calc ms':>8} {'comm ms':>8} "
        f"{'KiB/exec':>9} {'msgs':>6} {'setup ms':>9} {'comm x':>7} {'iter x':>7}"
    )
    print(header)
    for count in ranks:
        rows = _measure(launcher, program, count, strategies, args)
        results["runs"].append({"ranks": count, "strategies": rows})
        _print_rows(count, rows)
    print(
        "  ms: mean per iteration, slowest rank; KiB, msgs: per execute, max over ranks;\n"
        f"  comm x, iter x: speedup over {strategies[0]} at the same rank count"
    )
    if args.json is not None:
        from petacomm.files import write_text_atomically

        write_text_atomically(args.json, json.dumps(results, indent=1) + "\n", "--json")
    return 0


def _measure(launcher, program: Path, ranks: int, strategies: list[str], args) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="petacomm-bench-mapmaker-") as tmp:
        out = Path(tmp) / "run.json"
        argv = [
            str(program),
            f"--nside={args.nside}",
            f"--samples={args.samples}",
            f"--detectors={args.detectors}",
            f"--noise={args.noise}",
            f"--strategy={','.join(strategies * args.rounds)}",
            f"--transport={args.transport}",
            "--tol=0",
            f"--max-iter={args.iterations}",
            "--quiet",
            f"--json={out}",
        ]
        done = run_showing_progress(
            "bench mapmaker",
            f"petacomm-mapmaker on {ranks} ranks ({len(strategies)} strategies)",
            launcher.command(ranks, argv),
            quiet=args.quiet,
        )
        if done.returncode != 0 or not out.exists():
            raise PetacommError(
                f"petacomm-mapmaker on {ranks} ranks failed (exit {done.returncode}):\n"
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        data = json.loads(out.read_text())
    best: dict[str, dict] = {}
    for requested, run in zip(strategies * args.rounds, data["runs"], strict=True):
        if requested not in best or run["time_per_iteration_s"] < best[requested]["iter_s"]:
            best[requested] = {
                "strategy": requested,
                "resolved": run["strategy"],
                "iterations": run["iterations"],
                "iter_s": run["time_per_iteration_s"],
                "calc_s": run["compute_per_iteration_s"],
                "comm_s": run["comm_per_iteration_s"],
                "setup_s": run["setup_s"],
                "bytes_per_execute": run["bytes_per_execute"]["max"],
                "messages_per_execute": run["messages_per_execute"]["max"],
            }
    rows = [best[name] for name in strategies]
    base = rows[0]
    for row in rows:
        row["comm_speedup"] = base["comm_s"] / row["comm_s"] if row["comm_s"] > 0 else None
        row["iter_speedup"] = base["iter_s"] / row["iter_s"] if row["iter_s"] > 0 else None
    return rows


def _print_rows(ranks: int, rows: list[dict]) -> None:
    for row in rows:
        name = row["strategy"]
        if row["resolved"] != name:
            name = f"{name}:{row['resolved']}"

        def speedup(value):
            return f"{value:6.2f}x" if value else f"{'-':>7}"

        print(
            f"{ranks:>5}  {name:<16} {1e3 * row['iter_s']:8.3f} {1e3 * row['calc_s']:8.3f} "
            f"{1e3 * row['comm_s']:8.3f} {row['bytes_per_execute'] / 1024:9.1f} "
            f"{row['messages_per_execute']:6.1f} {1e3 * row['setup_s']:9.2f} "
            f"{speedup(row['comm_speedup'])} {speedup(row['iter_speedup'])}"
        )
