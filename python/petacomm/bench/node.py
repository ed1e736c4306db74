"""``petacomm bench node``: the node-aware messaging layer against MPI send/recv and memcpy.

Launches the native petacomm-node-bench under mpiexec. Every series is measured in the same
run, interleaved per repetition, and reported as the median over repetitions (the machine is
shared and noisy: compare the ratios, not the absolute figures):

  intra-node   ranks 0 and 1, the whole machine one node: one-way latency (ping-pong / 2)
               and bandwidth (a window of non-blocking messages, then an acknowledgement) of
               the layer with private buffers (two copies, pipelined through slots) and with
               node-heap buffers (one copy), of MPI on the same ranks, and a single-threaded
               memcpy of the same size on rank 0.
  inter-node   two ranks on different virtual nodes (--inter-node-size): every message goes
               through both gateways; the messages and bytes each gateway forwarded and
               delivered are counted and printed beside the number the pair sent.

Targets (printed as met or not): intra-node bandwidth >= 70 % of memcpy and >= MPI for
messages >= 1 MiB (node-heap buffers); small-message latency (<= 1 KiB) within 1.5x of MPI.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from petacomm.bench import bounded_int, launched_ranks
from petacomm.errors import PetacommError
from petacomm.files import check_output_path, write_text_atomically
from petacomm.progress import run_showing_progress
from petacomm.units import format_exact_size, parse_size_range

SCHEMA_VERSION = 1
BANDWIDTH_TARGET = 0.70  # of memcpy, for messages >= 1 MiB
LATENCY_TARGET = 1.5  # x MPI, for messages <= 1 KiB


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "node",
        help="node-aware messaging layer vs MPI send/recv vs memcpy (latency, bandwidth)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--ranks", type=int, default=4, help="MPI ranks (>= 2, default 4)")
    parser.add_argument(
        "--sizes",
        default="1:4MiB",
        help="message sizes MIN:MAX: MIN, 2 MIN, 4 MIN, ... up to MAX (default 1:4MiB)",
    )
    parser.add_argument(
        "--iterations", type=int, default=200, help="round trips per latency point (default 200)"
    )
    parser.add_argument("--reps", type=int, default=5, help="repetitions per series (default 5)")
    parser.add_argument(
        "--window", type=int, default=32, help="messages in flight per bandwidth round (default 32)"
    )
    parser.add_argument(
        "--inter-node-size",
        type=int,
        default=0,
        help="virtual node size of the inter-node phase (default: ranks / 2)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--mpiexec", help="MPI launcher (default: found automatically)")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line on standard error while ranks run"
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    bounded_int(args.ranks, "--ranks", 2)
    launched_ranks([args.ranks], "--ranks")
    low, high = parse_size_range(args.sizes, "--sizes")
    if high > 1 << 30:
        raise PetacommError(f"--sizes: at most 1 GiB per message, got '{args.sizes}'")
    # petacomm-node-bench's bounds, which it checked only once launched
    bounded_int(args.iterations, "--iterations", 1, 1000000)
    bounded_int(args.reps, "--reps", 1, 1000)
    bounded_int(args.window, "--window", 1, 4096)
    if args.inter_node_size:  # 0: the default, half the ranks
        bounded_int(args.inter_node_size, "--inter-node-size", 1)
        if args.inter_node_size >= args.ranks:  # one node: no inter-node series was measured
            raise PetacommError(
                f"--inter-node-size: {args.inter_node_size} ranks per node leave the "
                f"{args.ranks} ranks on one node; the inter-node phase needs two (at most "
                f"{args.ranks - 1})"
            )
    if args.json is not None:  # before running ('' was ignored; a directory refused last)
        check_output_path(args.json, "--json")
    flags = ["--sizes", f"{low}:{high}", "--iterations", str(args.iterations)]
    flags += ["--reps", str(args.reps), "--window", str(args.window)]
    if args.inter_node_size:
        flags += ["--inter-node-size", str(args.inter_node_size)]
    raw = run_native(args.ranks, flags, args.mpiexec, quiet=args.quiet)
    results = summarize(raw)
    print(format_report(results))
    if args.json is not None:
        write_text_atomically(args.json, json.dumps(results, indent=2) + "\n", "--json")
    return 0


def run_native(ranks: int, flags: list[str], mpiexec: str | None, quiet: bool = False) -> dict:
    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path

    launcher = find_mpiexec(mpiexec)
    launcher.check_can_run()
    program = program_path("petacomm-node-bench")
    # Open MPI 5 prints an osc/ucx error for every shared window where UCX has no transport
    # (open-mpi/ompi#14086); the layer uses osc/sm, so that component is left out.
    extra = ["--mca", "osc", "^ucx"] if launcher.vendor == "openmpi" else []
    with tempfile.TemporaryDirectory(prefix="petacomm-node-bench-") as tmp:
        raw_path = Path(tmp) / "raw.json"
        argv = launcher.command(ranks, [str(program), *flags, "--json", str(raw_path)], extra)
        done = run_showing_progress(
            "bench node", f"petacomm-node-bench on {ranks} ranks", argv, quiet=quiet
        )
        if done.returncode != 0 or not raw_path.exists():
            raise PetacommError(
                f"petacomm-node-bench on {ranks} ranks failed (exit {done.returncode}):\n"
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        try:
            return json.loads(raw_path.read_text())
        except json.JSONDecodeError as err:
            raise PetacommError(f"petacomm-node-bench wrote invalid JSON: {err}") from err


def _medians(series: dict[str, list[list[float]]]) -> dict[str, list[float]]:
    return {name: [statistics.median(reps) for reps in points] for name, points in series.items()}


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def summarize(raw: dict) -> dict:
    """Medians, ratios, gateway totals and the target verdicts from the native raw file."""
    intra, inter = raw["intra"], raw["inter"]
    im, xm = _medians(intra["series"]), _medians(inter["series"])
    rows = []
    for i, size in enumerate(intra["sizes"]):
        row = {"bytes": size}
        row.update({name: values[i] for name, values in im.items()})
        row["latency_ratio"] = _ratio(row["layer_latency"], row["mpi_latency"])
        row["heap_vs_memcpy"] = _ratio(row["layer_bw_window"], row["memcpy_bw"])
        row["private_vs_memcpy"] = _ratio(row["layer_bw_private"], row["memcpy_bw"])
        row["heap_vs_mpi"] = _ratio(row["layer_bw_window"], row["mpi_bw"])
        rows.append(row)
    inter_rows = []
    for i, size in enumerate(inter["sizes"]):
        row = {"bytes": size}
        row.update({name: values[i] for name, values in xm.items()})
        row["latency_ratio"] = _ratio(row["layer_latency"], row["mpi_latency"])
        row["bandwidth_ratio"] = _ratio(row["layer_bw"], row["mpi_bw"])
        inter_rows.append(row)
    gateways = [r for r in inter["ranks"] if r["gateway"]]
    forwarded = sum(r["forwarded_messages"] for r in gateways)
    large = [r for r in rows if r["bytes"] >= 1 << 20]
    small = [r for r in rows if r["bytes"] <= 1024]
    targets = {
        "bandwidth_vs_memcpy": _verdict([r["heap_vs_memcpy"] for r in large], BANDWIDTH_TARGET),
        "bandwidth_vs_mpi": _verdict([r["heap_vs_mpi"] for r in large], 1.0),
        "latency_vs_mpi": _verdict([r["latency_ratio"] for r in small], LATENCY_TARGET, False),
    }
    return {
        "schema": "petacomm-bench-node",
        "schema_version": SCHEMA_VERSION,
        "ranks": raw["ranks"],
        "units": {"latency": "s (one way)", "bandwidth": "B/s", "memory": "B"},
        "repetitions": len(next(iter(intra["series"].values()))[0]) if intra["sizes"] else 0,
        "intra": {"pair": intra["pair"], "rows": rows},
        "inter": {
            "pair": inter["pair"],
            "node_size": inter["node_size"],
            "rows": inter_rows,
            "pair_messages": inter["layer_messages"],
            "gateway_forwarded_messages": forwarded,
            "ranks": inter["ranks"],
        },
        "memory": raw["memory"],
        "targets": targets,
    }


def _verdict(values: list[float | None], bound: float, at_least: bool = True) -> dict:
    """Met when every measured ratio is >= bound (at_least) or <= bound; worst is the one
    furthest on the wrong side."""
    measured = [v for v in values if v is not None]
    if not measured:
        return {"measured": False, "met": None, "worst": None, "bound": bound}
    worst = min(measured) if at_least else max(measured)
    met = worst >= bound if at_least else worst <= bound
    return {"measured": True, "met": met, "worst": worst, "bound": bound}


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:9.2f}"


def _mbs(rate: float) -> str:
    return f"{rate / 1e6:9.0f}"


def _x(value: float | None) -> str:
    return f"{value:6.2f}" if value is not None else "     -"


def format_report(results: dict) -> str:
    lines = [
        f"petacomm bench node: {results['ranks']} ranks, medians of {results['repetitions']} "
        "repetitions (a shared machine: compare ratios)",
        "",
        f"intra-node, ranks {results['intra']['pair'][0]} <-> {results['intra']['pair'][1]}: "
        "latency one way (us), bandwidth (MB/s = 1e6 B/s)",
        f"{'size':>9} {'lat layer':>9} {'lat MPI':>9} {'x MPI':>6} {'BW priv':>9} "
        f"{'BW heap':>9} {'BW MPI':>9} {'memcpy':>9} {'heap/cpy':>8} {'heap/MPI':>8}",
    ]
    for r in results["intra"]["rows"]:
        lines.append(
            f"{format_exact_size(r['bytes']):>9} {_us(r['layer_latency'])} "
            f"{_us(r['mpi_latency'])} {_x(r['latency_ratio'])} {_mbs(r['layer_bw_private'])} "
            f"{_mbs(r['layer_bw_window'])} {_mbs(r['mpi_bw'])} {_mbs(r['memcpy_bw'])} "
            f"  {_x(r['heap_vs_memcpy'])}   {_x(r['heap_vs_mpi'])}"
        )
    inter = results["inter"]
    lines += [
        "",
        f"inter-node, ranks {inter['pair'][0]} -> gateway -> gateway -> "
        f"{inter['pair'][1]} (virtual node size {inter['node_size']})",
    ]
    lines.append(
        f"{'size':>9} {'lat layer':>9} {'lat MPI':>9} {'x MPI':>6} {'BW layer':>9} "
        f"{'BW MPI':>9} {'x MPI':>6}"
    )
    for r in inter["rows"]:
        lines.append(
            f"{format_exact_size(r['bytes']):>9} {_us(r['layer_latency'])} "
            f"{_us(r['mpi_latency'])} {_x(r['latency_ratio'])} {_mbs(r['layer_bw'])} "
            f"{_mbs(r['mpi_bw'])} {_x(r['bandwidth_ratio'])}"
        )
    lines += [
        "",
        "gateways in the inter-node phase (messages, bytes of payload; MPI messages, bytes):",
        f"{'rank':>5} {'node':>5} {'forwarded':>10} {'fwd bytes':>13} {'delivered':>10} "
        f"{'dlv bytes':>13} {'MPI sent':>9} {'MPI bytes':>13}",
    ]
    for r in inter["ranks"]:
        if r["gateway"]:
            lines.append(
                f"{r['rank']:>5} {r['node']:>5} {r['forwarded_messages']:>10} "
                f"{r['forwarded_bytes']:>13} {r['delivered_messages']:>10} "
                f"{r['delivered_bytes']:>13} {r['mpi_messages_sent']:>9} {r['mpi_bytes_sent']:>13}"
            )
    lines.append(
        f"  the pair sent {inter['pair_messages']} messages; the gateways forwarded "
        f"{inter['gateway_forwarded_messages']}"
    )
    lines += ["", "memory per rank (intra-node layer): segment of the window, private state (B)"]
    for m in results["memory"]:
        lines.append(
            f"  rank {m['rank']:>3} (local {m['local_rank']:>2}): segment {m['segment_bytes']:>11}"
            f"  private {m['private_bytes']:>8}"
        )
    t = results["targets"]
    lines += [
        "",
        _target_line("BW heap >= 70% of memcpy (>= 1 MiB)", t["bandwidth_vs_memcpy"], "x memcpy"),
        _target_line("BW heap >= MPI (>= 1 MiB)", t["bandwidth_vs_mpi"], "x MPI"),
        _target_line("latency <= 1.5x MPI (<= 1 KiB)", t["latency_vs_mpi"], "x MPI, worst"),
    ]
    return "\n".join(lines)


def _target_line(name: str, verdict: dict, unit: str) -> str:
    if not verdict["measured"]:
        return f"target {name}: not measured (no such sizes in --sizes)"
    state = "met" if verdict["met"] else "NOT met"
    return f"target {name}: {state} ({verdict['worst']:.2f} {unit})"
