"""``petacomm netbench``: measure this machine and write its alpha-beta machine model.

Runs the native benchmark ``petacomm-netbench`` under mpiexec, turns its raw repetitions
into min/median/max per size, fits the Hockney model piecewise per operation, prints the
measurements and the fits as fixed-width tables, writes the versioned model file and,
when asked, a log-log plot.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.files import write_text_atomically
from petacomm.model.fit import fit_piecewise
from petacomm.model.machine import (
    MachineModel,
    OperationModel,
    Piece,
    Point,
    default_model_path,
    save,
)
from petacomm.units import format_exact_size, parse_byte_count, parse_size_range

# Largest power-of-two message whose byte count fits MPI's int count argument.
MAX_MESSAGE_BYTES = 1 << 30

OPERATIONS = (
    "pingpong",
    "allreduce",
    "allgather",
    "alltoall",
    "alltoallv",
    "bcast",
    "reduce_scatter_block",
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "netbench",
        help="measure point-to-point and collective costs; write the machine model",
        description="Measures ping-pong (same node, and across nodes when the job spans "
        "nodes) and MPI collectives over message sizes, fits t = alpha + n*beta piecewise "
        "(eager/rendezvous breakpoints found from the data) and writes the machine model "
        "that petacomm's planners read.",
    )
    parser.add_argument("-n", "--ranks", default="4", help="number of MPI ranks (default 4)")
    parser.add_argument(
        "-m", dest="sizes", default="8:64M", help="message sizes MIN:MAX, powers of two (8:64M)"
    )
    parser.add_argument("-x", dest="warmup", default="10", help="warm-up iterations per size")
    parser.add_argument(
        "-i", dest="iterations", default="100", help="timed iterations per repetition (100)"
    )
    parser.add_argument(
        "-r", dest="repetitions", default="5", help="repetitions per size: min/median/max (5)"
    )
    parser.add_argument(
        "--ops",
        default=",".join(OPERATIONS),
        help="comma-separated subset of: " + ", ".join(OPERATIONS),
    )
    parser.add_argument(
        "--max-buffer",
        default="64M",
        help="skip collective sizes needing more than this per-rank buffer (64M)",
    )
    parser.add_argument(
        "-o",
        "--output",
        help=f"machine model file to write (default {default_model_path()})",
    )
    parser.add_argument("--plot", metavar="FILE.png", help="also draw a log-log plot")
    parser.add_argument("--mpiexec", help="MPI launcher to use (default: see petacomm doctor)")
    parser.add_argument(
        "--raw",
        metavar="FILE",
        help="fit an existing raw netbench JSON instead of running the benchmark",
    )
    parser.add_argument("--keep-raw", metavar="FILE", help="also keep the raw measurements here")
    parser.add_argument("--json", action="store_true", help="print the model as JSON, no tables")
    parser.set_defaults(func=run)


def _positive_int(text: str, argument: str, minimum: int = 1) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise PetacommError(f"{argument}: must be {kind}, got '{text}'")
    return value


def _check_writable(path: Path, argument: str) -> None:
    """Fails before the benchmark runs, so no measurement time is wasted."""
    if path.is_dir():
        raise PetacommError(f"{argument}: '{path}' is a directory")
    parent = path.parent
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise PetacommError(f"{argument}: cannot write '{path}' (directory not writable)")
    if path.exists() and not os.access(path, os.W_OK):
        raise PetacommError(f"{argument}: cannot write '{path}' (file not writable)")


def run(args) -> int:
    ranks = _positive_int(args.ranks, "-n/--ranks")
    low, high = parse_size_range(args.sizes, "-m")
    if high > MAX_MESSAGE_BYTES:
        raise PetacommError(
            f"-m: MAX must be at most 1 GiB (MPI counts are int), got '{args.sizes}'"
        )
    warmup = _positive_int(args.warmup, "-x", minimum=0)
    iterations = _positive_int(args.iterations, "-i")
    repetitions = _positive_int(args.repetitions, "-r")
    max_buffer = parse_byte_count(args.max_buffer, "--max-buffer")
    ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    unknown = [op for op in ops if op not in OPERATIONS]
    if unknown or not ops:
        raise PetacommError(
            f"--ops: unknown operation '{unknown[0] if unknown else args.ops}' "
            f"(choose from {', '.join(OPERATIONS)})"
        )
    output = Path(args.output) if args.output else default_model_path()
    _check_writable(output, "--output")
    if args.plot:
        _check_writable(Path(args.plot), "--plot")
    if args.keep_raw:
        _check_writable(Path(args.keep_raw), "--keep-raw")

    if args.raw:
        raw = _read_raw(Path(args.raw))
        launcher_text = ""
    else:
        flags = ["-m", f"{low}:{high}", "-x", str(warmup), "-i", str(iterations)]
        flags += ["-r", str(repetitions), "--ops", ",".join(ops), "--max-buffer", str(max_buffer)]
        raw, launcher_text = run_native_benchmark(ranks, flags, args.mpiexec)
        if args.keep_raw:
            write_text_atomically(args.keep_raw, json.dumps(raw, indent=1) + "\n", "--keep-raw")
    model = model_from_raw(raw)
    model.settings = {
        "warmup": raw.get("warmup", warmup),
        "iterations": raw.get("iterations", iterations),
        "repetitions": raw.get("repetitions", repetitions),
        "min_bytes": low,
        "max_bytes": high,
    }
    if launcher_text:
        model.machine["launcher"] = launcher_text
    path = save(model, output)
    if args.plot:
        from petacomm.model.plot import plot_model

        plot_model(model, args.plot)
    if args.json:
        print(json.dumps(model.to_dict(), indent=1))
    else:
        print(format_report(model))
        print(f"\nmachine model written to {path}")
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def run_native_benchmark(
    ranks: int, flags: list[str], mpiexec: str | None = None
) -> tuple[dict, str]:
    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path

    launcher = find_mpiexec(mpiexec)
    launcher.check_can_run()
    program = program_path("petacomm-netbench")
    with tempfile.TemporaryDirectory(prefix="petacomm-netbench-") as scratch:
        raw_path = Path(scratch) / "raw.json"
        argv = launcher.command(ranks, [str(program), *flags, "--json", str(raw_path)])
        try:
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
        except OSError as err:
            raise PetacommError(f"mpiexec: cannot run '{argv[0]}': {err.strerror}") from err
        if done.returncode != 0 or not raw_path.exists():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
            raise PetacommError(
                f"the benchmark failed (exit code {done.returncode}): {' '.join(argv)}\n{tail}"
            )
        raw = _read_raw(raw_path)
    return raw, f"{launcher.path} ({launcher.vendor})"


def _read_raw(path: Path) -> dict:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as err:
        raise PetacommError(f"--raw: {path} not found") from err
    except (OSError, json.JSONDecodeError) as err:
        raise PetacommError(f"--raw: cannot read {path}: {err}") from err
    if not isinstance(raw, dict) or raw.get("tool") != "petacomm-netbench":
        raise PetacommError(f"--raw: {path} is not petacomm-netbench output")
    return raw


def model_from_raw(raw: dict) -> MachineModel:
    """Statistics per size (over repetitions) and piecewise fits on the medians."""
    operations: dict[str, OperationModel] = {}
    for series in raw["series"]:
        points = [
            Point(
                int(pt["bytes"]),
                int(pt["iterations"]),
                min(pt["seconds"]),
                statistics.median(pt["seconds"]),
                max(pt["seconds"]),
            )
            for pt in series["points"]
            if pt["seconds"]
        ]
        points = [pt for pt in points if pt.median_s > 0]
        if len(points) < 2:
            continue
        fits = fit_piecewise([pt.nbytes for pt in points], [pt.median_s for pt in points])
        pieces = [Piece.from_fit(fit) for fit in fits]
        operations[series["op"]] = OperationModel(
            series["op"], int(series["participants"]), pieces, points
        )
    if not operations:
        raise PetacommError("the benchmark produced no usable measurements (too few sizes?)")
    nodes = sorted(set(raw.get("node_of_rank", [0])))
    per_node = [raw.get("node_of_rank", [0]).count(node) for node in nodes]
    machine = {
        "hosts": raw.get("hosts", []),
        "ranks": int(raw["ranks"]),
        "nodes": len(nodes),
        "ranks_per_node": per_node,
        "mpi_library": raw.get("mpi_library", "").strip(),
    }
    return MachineModel(operations, source="netbench", machine=machine)


def format_report(model: MachineModel) -> str:
    names = list(model.operations)
    lines = []
    machine = model.machine
    library = machine.get("mpi_library", "").split(",")[0]
    lines.append(
        f"petacomm netbench: {machine.get('ranks')} ranks on {machine.get('nodes')} node(s) "
        f"({', '.join(machine.get('hosts', [])[:4])}); {library}"
    )
    reps = model.settings.get("repetitions", "?")
    lines.append(
        f"\nTime per operation, µs: median [min-max] of {reps} repetitions, each the max over ranks"
    )
    width = max(24, max(len(name) for name in names) + 2)
    lines.append(f"{'Size':>10}" + "".join(f"{name:>{width}}" for name in names))
    sizes = sorted({pt.nbytes for op in model.operations.values() for pt in op.points})
    for size in sizes:
        row = f"{format_exact_size(size):>10}"
        for name in names:
            point = next((pt for pt in model.operations[name].points if pt.nbytes == size), None)
            if point is None:
                row += f"{'-':>{width}}"
            else:
                cell = f"{_us(point.median_s)} [{_us(point.min_s)}-{_us(point.max_s)}]"
                row += f"{cell:>{width}}"
        lines.append(row)
    lines.append("\nHockney fits t = alpha + n*beta (least squares on relative error, piecewise)")
    header = (
        f"{'operation':<22}{'p':>4}{'sizes':>24}{'alpha (µs)':>12}{'1/beta (GB/s)':>15}"
        f"{'R²':>8}{'points':>8}"
    )
    lines.append(header)
    lines.append("-" * len(header))
    for name in names:
        op = model.operations[name]
        for piece in op.pieces:
            span = f"{format_exact_size(piece.from_bytes)} - {format_exact_size(piece.to_bytes)}"
            bandwidth = "inf" if piece.beta_s_per_byte <= 0 else f"{piece.bandwidth_gb_s:.3f}"
            lines.append(
                f"{name:<22}{op.p:>4}{span:>24}{piece.alpha_s * 1e6:>12.3f}{bandwidth:>15}"
                f"{piece.r2:>8.4f}{piece.points:>8}"
            )
    return "\n".join(lines)


def _us(seconds: float) -> str:
    """Microseconds with three significant figures (or more for large values)."""
    value = seconds * 1e6
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"
