"""``petacomm bench halo``: halo exchange strategies side by side at several rank counts.

For each rank count one run of ``petacomm-halo`` exchanges with every strategy at every
message size (every received face is checked, as always); the table gives the time of one
exchange (mean over ranks, microseconds) per strategy, the fastest strategy and its
speedup over MPI_Sendrecv. The node-aware strategy (the node layer, node.h) runs at each
virtual node size of ``--node-sizes`` (0: the whole shared-memory node, "node"; k: nodes of
k ranks, "nodek", so faces between them go through the gateways). ``--mapping FILE`` (a
file ``petacomm map`` wrote, one per rank count) places the logical ranks as the file says.
Timings are noisy on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import json

from petacomm.bench import MAX_REPS, bounded_int, launched_ranks, name_list, positive_int_list
from petacomm.errors import PetacommError
from petacomm.files import refuse_empty_names
from petacomm.units import is_whole_number, parse_byte_count, parse_size_range

SCHEMA_VERSION = 1
SHORT_NAMES = {
    "sendrecv": "sendrecv",
    "nonblocking": "nonblock",
    "neighbor-cart": "nbr-cart",
    "neighbor-graph": "nbr-graph",
    "persistent": "persist",
}
FLAT_VARIANTS = tuple(SHORT_NAMES)  # the MPI strategies; "node" is the node-aware one
COLUMNS = 5  # strategies per table block: rows stay within 100 columns


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "halo",
        help="halo exchange strategies (Sendrecv, non-blocking, neighbourhood, persistent, "
        "node-aware)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--ranks", default="4,8", help="rank counts (default 4,8)")
    parser.add_argument("--dims", default="2,3", help="grid dimensionalities (default 2,3)")
    parser.add_argument("--stencil", default="star,box", help="star, box (default both)")
    parser.add_argument("--periodic", default="yes", help="no, yes or 0/1 flags (default yes)")
    parser.add_argument("--variants", help="strategies (default: all that apply)")
    parser.add_argument(
        "--node-sizes",
        default="0,1,2",
        help="virtual node sizes for the node-aware strategy (0: whole node; default 0,1,2; "
        "none: not run)",
    )
    parser.add_argument("-m", dest="sizes", default="8:64K", help="sizes MIN:MAX (8:64K)")
    parser.add_argument("-i", dest="iterations", default="50", help="timed exchanges (50)")
    parser.add_argument("-x", dest="warmup", default="5", help="warm-up exchanges (5)")
    parser.add_argument(
        "--mapping", metavar="FILE", help="placement written by petacomm map (one rank count)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--mpiexec", help="MPI launcher (default: found automatically)")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line on standard error while ranks run"
    )
    parser.set_defaults(func=run)


MAX_MESSAGE = 64 << 20  # petacomm-halo's largest face (x 26 faces stays within MPI's counts)


def _whole_number(text: str, option: str, minimum: int, maximum: int) -> int:
    if not is_whole_number(text.strip()):
        raise PetacommError(f"{option}: expected a whole number, got '{text}'")
    return bounded_int(int(text), option, minimum, maximum)


def _pattern_flags(args) -> list[str]:
    """petacomm-halo's pattern and size flags from this command's options, checked here:
    the program refused them only once launched."""
    dims = name_list(args.dims, "--dims")
    for d in dims:
        if d not in ("1", "2", "3"):
            raise PetacommError(f"--dims: expected 1, 2 or 3 dimensions, got '{d}'")
    stencils = name_list(args.stencil, "--stencil")
    for stencil in stencils:
        if stencil not in ("star", "box"):
            raise PetacommError(f"--stencil: expected star or box, got '{stencil}'")
    periodic = name_list(args.periodic, "--periodic")
    for flags in periodic:
        if flags in ("no", "open", "yes", "periodic"):
            continue
        if flags.strip("01") or {str(len(flags))} != set(dims):
            raise PetacommError(
                f"--periodic: expected no, yes or one 0/1 digit per dimension of --dims "
                f"{args.dims}, got '{flags}'"
            )
    low, high = (
        parse_size_range(args.sizes, "-m")
        if ":" in args.sizes
        else (1, parse_byte_count(args.sizes, "-m"))
    )
    if high < low:  # MAX alone: from 1 byte
        raise PetacommError(f"-m: need 0 < MIN <= MAX, got '{args.sizes}'")
    if high > MAX_MESSAGE:
        raise PetacommError(f"-m: at most {MAX_MESSAGE >> 20} MiB per face, got '{args.sizes}'")
    return [
        "--dims", ",".join(dims), "--stencil", ",".join(stencils),
        "--periodic", ",".join(periodic),
        "-m", f"{low}:{high}",
        "-i", _whole_number(args.iterations, "-i", 1, MAX_REPS),
        "-x", _whole_number(args.warmup, "-x", 0, MAX_REPS),
    ]  # fmt: skip


def run(args) -> int:
    from petacomm.bench.native_app import node_sizes_option, run_app_json
    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path

    counts = positive_int_list(args.ranks, "--ranks")
    launched_ranks(counts, "--ranks")
    passed = _pattern_flags(args)
    node_sizes = node_sizes_option(args.node_sizes)
    refuse_empty_names([("--mapping", args.mapping)])  # '' was taken for no --mapping
    if args.mapping is not None and len(counts) != 1:
        raise PetacommError(
            f"--mapping: a mapping places one rank count, but --ranks gives {args.ranks}"
        )
    if args.json is not None:
        from petacomm.files import check_output_path

        check_output_path(args.json, "--json", [("--mapping", args.mapping)])
    program = str(program_path("petacomm-halo"))
    launcher = find_mpiexec(args.mpiexec)
    launcher.check_can_run()
    if args.variants is not None:  # '' meant all and ',' reached the program
        chosen = name_list(args.variants, "--variants")
    else:
        chosen = [*FLAT_VARIANTS, "node"]
    if not node_sizes:
        chosen = [v for v in chosen if v != "node"]
        if not chosen:
            raise PetacommError("--node-sizes: none, but --variants names only node")
    passed += ["--variants", ",".join(chosen)]
    if node_sizes and "node" in chosen:
        passed += ["--node-size", ",".join(map(str, node_sizes))]
    if args.mapping:
        passed += ["--mapping", args.mapping]
    runs = [
        (
            count,
            run_app_json(launcher, program, count, passed, label="bench halo", quiet=args.quiet),
        )
        for count in counts
    ]
    variants = []
    for _, doc in runs:
        for config in doc["configurations"]:
            for row in config["results"]:
                if row["variant"] not in variants:
                    variants.append(row["variant"])
    rows = []
    for count, doc in runs:
        for config in doc["configurations"]:
            for size in sorted({r["bytes"] for r in config["results"]}):
                times = {r["variant"]: r["avg_us"] for r in config["results"] if r["bytes"] == size}
                best = min(times, key=times.get)
                speedup = times["sendrecv"] / times[best] if "sendrecv" in times else None
                rows.append(
                    {"ranks": count, "grid": config["grid"], "periodic": config["periodic"],
                     "stencil": config["stencil"], "bytes": size, "avg_us": times,
                     "best": best, "speedup_over_sendrecv": speedup}
                )  # fmt: skip
    print("halo exchange: us per exchange (mean over ranks); every received face verified")
    blocks = [variants[i : i + COLUMNS] for i in range(0, len(variants), COLUMNS)] or [[]]
    for number, block in enumerate(blocks):
        last = number == len(blocks) - 1
        header = f"{'ranks':>5} {'grid':<8} {'st':<4} {'bytes':>8}"
        header += "".join(f" {SHORT_NAMES.get(v, v):>9}" for v in block)
        print(header + (f"  {'best':<9} {'x sendrecv':>10}" if last else ""))
        for row in rows:
            grid = "x".join(map(str, row["grid"])) + ("p" if any(row["periodic"]) else "")
            times = row["avg_us"]
            cells = "".join(f" {times[v]:9.2f}" if v in times else f" {'-':>9}" for v in block)
            line = f"{row['ranks']:>5} {grid:<8} {row['stencil']:<4} {row['bytes']:>8}{cells}"
            if last:
                speedup = row["speedup_over_sendrecv"]
                ratio = f"{speedup:9.2f}x" if speedup else f"{'-':>10}"
                line += f"  {SHORT_NAMES.get(row['best'], row['best']):<9} {ratio}"
            print(line)
        if not last:
            print()
    print(
        "  grid: p = periodic; st: stencil; node: node-aware layer (nodek: virtual nodes of k "
        "ranks);\n  best: the fastest strategy; x sendrecv: its speedup over it"
    )
    for count, doc in runs:
        for config in doc["configurations"]:
            grid = "x".join(map(str, config["grid"])) + ("p" if any(config["periodic"]) else "")
            seen = {}
            for r in config["results"]:
                if "messages_in_node_per_exchange" in r:
                    seen.setdefault(r["variant"], r["messages_in_node_per_exchange"])
            if seen:
                total = config["messages_per_exchange"] + config["self_messages_per_exchange"]
                inside = ", ".join(f"{v} {n}" for v, n in seen.items())
                print(
                    f"  {count} ranks, {grid} {config['stencil']}: messages in node per "
                    f"exchange (of {total}): {inside}"
                )
    if args.json is not None:
        from petacomm.files import write_text_atomically

        results = {
            "schema": "petacomm-bench-halo",
            "schema_version": SCHEMA_VERSION,
            "rows": rows,
            "runs": [{"ranks": count, "halo": doc} for count, doc in runs],
        }
        write_text_atomically(args.json, json.dumps(results, indent=1) + "\n", "--json")
    return 0
