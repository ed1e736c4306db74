"""``petacomm bench sweep3d``: the KBA block-size trade-off, measured against the pipeline
model.

Small K blocks (mk) start the downstream ranks early (short pipeline fill) but send many
small messages; large blocks send few messages but keep ranks idle while the pipeline
fills. For each mk the command runs ``petacomm-sweep3d`` once with every transport given
and prints the measured time per iteration next to the model's prediction: per-block
compute from a one-rank calibration, per-message cost from the machine model that
``petacomm netbench`` wrote (or the built-in defaults), 8 x blocks + 2(Px-1) + 4(Py-1)
pipeline stages per iteration. Each mk runs ``--rounds`` times (rounds interleaved over
the block sizes) and the fastest round of each (mk, transport) is shown: shared machines
are noisy, compare within one run.

Then, at the block size that measured fastest, the flat transports against the node-aware
one (the node layer, node.h) at each virtual node size of ``--node-sizes`` (0: the whole
shared-memory node; k: nodes of k ranks, so faces between them go through the gateways).
"""

from __future__ import annotations

import argparse
import json

from petacomm.bench import bounded_int, launched_ranks, name_list
from petacomm.errors import PetacommError, refuse_repeats
from petacomm.files import refuse_empty_names
from petacomm.units import is_whole_number

SCHEMA_VERSION = 1
MAX_EXTENT = 1 << 20  # cells per axis petacomm-sweep3d takes (its --grid)
TRANSPORTS = ("blocking", "nonblocking", "node")  # petacomm-sweep3d's (transport_*.cpp)
# Runs per block size at most: each is a launch of the program.
MAX_ROUNDS = 100


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep3d",
        help="Sweep3D wavefront: measured time per iteration vs the pipeline model over mk",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-n", "--ranks", type=int, default=4, help="MPI ranks (default 4)")
    parser.add_argument("--grid", default="32x32x32", help="global cells IxJxK (default 32x32x32)")
    parser.add_argument(
        "--mk", default="all", help="K block sizes, a comma list or all divisors of K (default)"
    )
    parser.add_argument("--angles", type=int, default=6, help="directions per octant (default 6)")
    parser.add_argument("--mmi", type=int, default=3, help="directions per block (default 3)")
    parser.add_argument("--iterations", type=int, default=5, help="source iterations (default 5)")
    parser.add_argument("--rounds", type=int, default=2, help="runs per mk, best kept (2)")
    parser.add_argument("--procs", default="auto", help="process grid PxxPy (default auto)")
    parser.add_argument(
        "--transports",
        default="blocking,nonblocking",
        help="transports side by side (default blocking,nonblocking)",
    )
    parser.add_argument(
        "--node-sizes",
        default="0,1,2",
        help="virtual node sizes for the node-aware transport (0: whole node; default 0,1,2; "
        "none: skip that table)",
    )
    parser.add_argument("--model", metavar="FILE", help="machine model (default: netbench's)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--mpiexec", help="MPI launcher (default: found automatically)")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line on standard error while ranks run"
    )
    parser.set_defaults(func=run)


def _grid(text: str) -> tuple[int, int, int]:
    parts = text.split("x")
    if len(parts) != 3 or not all(is_whole_number(p) and int(p) > 0 for p in parts):
        raise PetacommError(f"--grid: expected IxJxK such as 32x32x32, got '{text}'")
    if max(int(p) for p in parts) > MAX_EXTENT:  # "all" of --mk counts the divisors of K
        raise PetacommError(f"--grid: at most {MAX_EXTENT} cells per axis, got '{text}'")
    return tuple(int(p) for p in parts)  # type: ignore[return-value]


def _process_grids(text: str, ranks: int, grid: tuple[int, int, int]) -> None:
    """Refuses a ``--procs`` that petacomm-sweep3d would refuse once launched: auto and all
    need some Px x Py = ranks with Px <= I and Py <= J; a list, that each of its PxxPy is
    one."""
    cells_i, cells_j, _ = grid
    if text in ("auto", "all"):
        if not any(
            ranks % px == 0 and ranks // px <= cells_j for px in range(1, min(cells_i, ranks) + 1)
        ):
            raise PetacommError(
                f"--procs: {text}, but no Px x Py = {ranks} ranks fits the grid "
                f"{'x'.join(map(str, grid))} (Px <= I and Py <= J)"
            )
        return
    items = text.split(",")
    for item in items:
        parts = item.split("x")
        if len(parts) != 2 or not all(is_whole_number(p) and int(p) > 0 for p in parts):
            raise PetacommError(
                f"--procs: expected auto, all or PxxPy items such as 4x2, got '{text}'"
            )
        px, py = map(int, parts)
        if px * py != ranks:
            raise PetacommError(f"--procs: {item} makes {px * py} ranks, but --ranks is {ranks}")
        if px > cells_i or py > cells_j:
            raise PetacommError(
                f"--procs: {item} leaves ranks without cells (I = {cells_i}, J = {cells_j})"
            )
    refuse_repeats(items, "--procs")


def _block_sizes(text: str, k: int) -> list[int]:
    if text == "all":
        return [m for m in range(1, k + 1) if k % m == 0]
    try:
        sizes = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise PetacommError(
            f"--mk: expected a comma list of integers or all, got '{text}'"
        ) from None
    for m in sizes:
        if m < 1 or k % m:
            raise PetacommError(f"--mk: {m} does not divide K = {k}")
    if not sizes:
        raise PetacommError("--mk: empty list")
    refuse_repeats(sizes, "--mk")  # each block size was run, and shown, twice
    return sizes


def message_cost_argument(model) -> str:
    """The machine model's point-to-point pieces as petacomm-sweep3d's --message-cost (the
    first piece made to start at 0 bytes)."""
    pieces = sorted(model.point_to_point_pieces(), key=lambda p: p.from_bytes)
    items = []
    for i, p in enumerate(pieces):
        start = 0 if i == 0 else p.from_bytes
        items.append(f"{start}:{p.alpha_s!r}:{p.beta_s_per_byte!r}")
    return ",".join(items)


def _fastest(docs: list[dict]) -> dict:
    """One run's document whose every case is the fastest of that case over the rounds."""
    best = dict(docs[0])
    best["cases"] = [
        min(cases, key=lambda c: c["time_per_iteration_s"])
        for cases in zip(*(d["cases"] for d in docs), strict=True)
    ]
    return best


def run(args) -> int:
    from petacomm.bench.native_app import node_sizes_option, run_app_json
    from petacomm.launch import find_mpiexec
    from petacomm.model.machine import load_or_default, model_option_error
    from petacomm.native import program_path

    bounded_int(args.ranks, "--ranks")
    launched_ranks([args.ranks], "--ranks")
    # petacomm-sweep3d's bounds
    bounded_int(args.angles, "--angles", 1, 1 << 16)
    bounded_int(args.mmi, "--mmi", 1)
    if args.angles % args.mmi:
        raise PetacommError(f"--mmi: {args.mmi} does not divide --angles {args.angles}")
    bounded_int(args.iterations, "--iterations", 1, 1 << 30)
    bounded_int(args.rounds, "--rounds", 1, MAX_ROUNDS)
    grid = _grid(args.grid)
    _process_grids(args.procs, args.ranks, grid)
    block_sizes = _block_sizes(args.mk, grid[2])
    node_sizes = node_sizes_option(args.node_sizes)
    transports = name_list(args.transports, "--transports")
    for name in transports:  # refused by the program only once launched
        if name not in TRANSPORTS:
            raise PetacommError(
                f"--transports: unknown '{name}' (expected some of {', '.join(TRANSPORTS)})"
            )
    refuse_empty_names([("--model", args.model)])  # '' read the directory '.'
    try:
        model = load_or_default(args.model)
        model.required_point_to_point_operation()  # the messages' cost
    except PetacommError as err:
        raise model_option_error(err, args.model) from None
    if args.json is not None:
        from petacomm.files import check_output_path

        check_output_path(args.json, "--json", [("--model", args.model)])
    program = str(program_path("petacomm-sweep3d"))
    launcher = find_mpiexec(args.mpiexec)
    launcher.check_can_run()
    cost = message_cost_argument(model)
    common = [
        "--grid", args.grid, "--angles", args.angles, "--mmi", args.mmi,
        "--iterations", args.iterations, "--procs", args.procs,
        "--message-cost", cost, "--quiet",
    ]  # fmt: skip
    rounds = [
        [
            run_app_json(
                launcher,
                program,
                args.ranks,
                [*common, "--transport", ",".join(transports), "--mk", mk],
                label=f"bench sweep3d: mk {mk}",
                quiet=args.quiet,
            )
            for mk in block_sizes
        ]
        for _ in range(args.rounds)
    ]
    runs = [_fastest([r[i] for r in rounds]) for i in range(len(block_sizes))]
    first = runs[0]
    procs = "x".join(map(str, first["cases"][0]["procs"]))
    print(
        f"sweep3d on {args.ranks} ranks ({procs}), grid {args.grid}, {args.angles} directions "
        f"per octant in blocks of {args.mmi}\n{args.iterations} iterations per run, best of "
        f"{args.rounds} run(s) per mk and transport"
    )
    print(f"message cost: {model.source} model ({cost.count(',') + 1} piece(s))")
    print(
        f"{'mk':>4} {'blocks':>6}  {'transport':<12} {'ms/iter':>9} {'pred ms':>9} "
        f"{'meas/pred':>9} {'fill':>5} {'msgs/it':>8} {'free ms':>8} {'eff-inf %':>9} {'S3D %':>6}"
    )
    rows = []
    for mk, doc in zip(block_sizes, runs, strict=True):
        for case in doc["cases"]:
            m = case["model"]
            row = {
                "mk": mk,
                "k_blocks": doc["problem"]["k_blocks"],
                "transport": case["transport"],
                "procs": case["procs"],
                "time_per_iteration_s": case["time_per_iteration_s"],
                "predicted_s": m["predicted_s"],
                "measured_over_predicted": m["measured_over_predicted"],
                "fill_stages": m["fill_stages"],
                "steady_stages": m["steady_stages"],
                "messages_per_iteration": case["messages_per_iteration"],
                "bytes_per_iteration": case["bytes_per_iteration"],
                "predicted_no_network_s": m["predicted_no_network_s"],
                "sweep3d_pipeline_efficiency": m["sweep3d_pipeline_efficiency"],
                "comm_share_mean": case["comm_share_mean"],
            }
            rows.append(row)
            print(
                f"{mk:>4} {row['k_blocks']:>6}  {row['transport']:<12} "
                f"{1e3 * row['time_per_iteration_s']:9.3f} {1e3 * row['predicted_s']:9.3f} "
                f"{row['measured_over_predicted']:9.2f} {row['fill_stages']:>5} "
                f"{row['messages_per_iteration']:8.0f} {1e3 * row['predicted_no_network_s']:8.3f} "
                f"{100 * row['predicted_no_network_s'] / row['time_per_iteration_s']:9.1f} "
                f"{100 * row['sweep3d_pipeline_efficiency']:6.1f}"
            )
    measured = min(rows, key=lambda r: r["time_per_iteration_s"])
    predicted = min(rows, key=lambda r: r["predicted_s"])
    print(
        "  ms/iter: slowest rank; pred: (steady + fill stages) x (block compute + face messages);"
        "\n  free ms: the same pipeline with free messages; eff-inf: free ms / ms/iter (efficiency"
        "\n  against an infinitely fast network); S3D %: Sweep3D's pipeline efficiency"
        f"\n  faces sent: {rows[0]['bytes_per_iteration'] / 1024:.1f} KiB per iteration, every mk"
    )
    print(
        f"best mk: measured {measured['mk']} ({measured['transport']}, "
        f"{1e3 * measured['time_per_iteration_s']:.3f} ms), predicted {predicted['mk']} "
        f"({1e3 * predicted['predicted_s']:.3f} ms)"
    )
    node_rows = []
    if node_sizes:
        node_rows = _flat_vs_node(args, transports, launcher, program, common, measured, node_sizes)
    if args.json is not None:
        from petacomm.files import write_text_atomically

        results = {
            "schema": "petacomm-bench-sweep3d",
            "schema_version": SCHEMA_VERSION,
            "ranks": args.ranks,
            "grid": list(grid),
            "message_cost": cost,
            "model_source": model.source,
            "rows": rows,
            "runs": runs,
            "node_rows": node_rows,
        }
        write_text_atomically(args.json, json.dumps(results, indent=1) + "\n", "--json")
    return 0


def _flat_vs_node(args, transports, launcher, program, common, best, node_sizes) -> list[dict]:
    """The flat ``transports`` and the node-aware one at each virtual node size, at the block
    size that measured fastest; prints the table and returns its rows."""
    from petacomm.bench.native_app import run_app_json

    flat = [t for t in transports if t != "node"]
    argv = [*common, "--transport", ",".join([*flat, "node"]), "--mk", best["mk"]]
    argv += ["--node-size", ",".join(map(str, node_sizes))]
    label = f"bench sweep3d: flat vs node at mk {best['mk']}"
    doc = _fastest(
        [
            run_app_json(launcher, program, args.ranks, argv, label=label, quiet=args.quiet)
            for _ in range(args.rounds)
        ]
    )
    base = doc["cases"][0]
    print(
        f"\nflat vs node-aware at mk {best['mk']} (fastest above); node size 0: the whole "
        "shared-memory node"
    )
    print(
        f"{'transport':<12} {'node size':>9} {'ms/iter':>9} {'meas/pred':>9} {'msgs/it':>8} "
        f"{'in node':>8} {'x ' + base['transport']:>14}"
    )
    rows = []
    for case in doc["cases"]:
        node = case["node_size"] >= 0
        row = {
            "transport": case["transport"],
            "node_size": case["node_size"] if node else None,
            "time_per_iteration_s": case["time_per_iteration_s"],
            "measured_over_predicted": case["model"]["measured_over_predicted"],
            "messages_per_iteration": case["messages_per_iteration"],
            "messages_in_node_per_iteration": case["messages_in_node_per_iteration"]
            if node
            else None,
            "speedup": base["time_per_iteration_s"] / case["time_per_iteration_s"],
        }
        rows.append(row)
        size = ("whole" if case["node_size"] == 0 else str(case["node_size"])) if node else "-"
        in_node = f"{row['messages_in_node_per_iteration']:8.0f}" if node else f"{'-':>8}"
        print(
            f"{row['transport']:<12} {size:>9} {1e3 * row['time_per_iteration_s']:9.3f} "
            f"{row['measured_over_predicted']:9.2f} {row['messages_per_iteration']:8.0f} "
            f"{in_node} {row['speedup']:13.2f}x"
        )
    print("  in node: faces sent between ranks of one (virtual) node, per iteration")
    return rows
