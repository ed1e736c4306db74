"""``petacomm netbench``: measure this machine and write its alpha-beta machine model.

Runs the native benchmark ``petacomm-netbench`` under mpiexec, turns its raw repetitions
into min/median/max per size, fits the Hockney model piecewise per operation, prints the
measurements and the fits as fixed-width tables, writes the versioned model file and,
when asked, a log-log plot.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from petacomm.errors import PetacommError, refuse_repeats
from petacomm.files import refuse_empty_names
from petacomm.units import decimal_int

# Largest power-of-two message whose byte count fits MPI's int count argument.
MAX_MESSAGE_BYTES = 1 << 30
# Without a batch allocation, the job runs on this machine: more ranks than this many per
# core is a typing error (-n 100000), not a measurement.
MAX_LOCAL_RANKS_PER_CORE = 16
ALLOCATION_VARIABLES = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "COBALT_JOBID", "FLUX_JOB_ID")
MAX_REPEATS = 1_000_000  # -x, -i, -r: beyond this a run would not end in any useful time
# --max-buffer: the program holds it in an unsigned 64-bit integer; the bound keeps it signed.
MAX_BUFFER_BYTES = (1 << 63) - 1

OPERATIONS = (
    "pingpong",
    "allreduce",
    "allgather",
    "alltoall",
    "alltoallv",
    "bcast",
    "reduce_scatter_block",
)
# Series names in the raw file: the ping-pong is split by where its partner runs.
RAW_SERIES = ("pingpong.intra", "pingpong.inter", *OPERATIONS[1:])
_PROGRESS = re.compile(r"^petacomm-netbench progress (\d+) (\d+) (\S+) (\d+)$")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "netbench",
        help="measure point-to-point and collective costs; write the machine model",
        description="Measures ping-pong (same node, and across nodes when the job spans "
        "nodes) and MPI collectives over message sizes, fits t = alpha + n*beta piecewise "
        "(eager/rendezvous breakpoints found from the data) and writes the machine model "
        "that petacomm's planners read. Every argument is checked before anything runs.",
    )
    parser.add_argument("-n", "--ranks", default="4", help="number of MPI ranks (default 4)")
    parser.add_argument(
        "-m",
        dest="sizes",
        default="8:64M",
        help="message sizes: the powers of two from MIN to MAX (8:64M)",
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
        help="machine model file to write (default: $PETACOMM_MODEL, else "
        "machine-model.json in the user data directory, see docs/netbench.md)",
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
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress display on standard error"
    )
    parser.set_defaults(func=run)


def _positive_int(text: str, argument: str, minimum: int = 1, maximum: int | None = None) -> int:
    try:
        value = decimal_int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise PetacommError(f"{argument}: must be {kind}, got '{text}'")
    if maximum is not None and value > maximum:
        raise PetacommError(f"{argument}: must be at most {maximum:,}, got '{text}'")
    return value


def _check_local_ranks(ranks: int) -> None:
    """Refuses rank counts this machine cannot hold when no batch allocation is visible."""
    if any(os.environ.get(name) for name in ALLOCATION_VARIABLES):
        return
    cores = os.cpu_count() or 1
    limit = MAX_LOCAL_RANKS_PER_CORE * cores
    if ranks > limit:
        raise PetacommError(
            f"-n/--ranks: {ranks:,} ranks on this machine's {cores} cores (no batch allocation: "
            f"none of {', '.join(ALLOCATION_VARIABLES)} is set); at most {limit} here "
            f"({MAX_LOCAL_RANKS_PER_CORE} per core), or run inside an allocation"
        )


def _check_plot_format(path: str) -> None:
    """--plot: the file name's extension must be a format matplotlib writes (checked before
    the benchmark, not after it)."""
    suffix = Path(path).suffix.lower().lstrip(".")
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise PetacommError(
            f"--plot: unknown image format {('.' + suffix) if suffix else '(no extension)'!r} "
            f"in '{path}' (use one of {', '.join('.' + f for f in sorted(formats))})"
        )


@dataclass
class Settings:
    ranks: int
    low: int
    high: int
    warmup: int
    iterations: int
    repetitions: int
    max_buffer: int
    ops: list[str]
    output: Path


def check_arguments(args) -> Settings:
    """Every argument of the command, checked before anything runs."""
    from petacomm.files import check_output_path
    from petacomm.model.machine import default_model_path
    from petacomm.units import parse_byte_count, parse_size_range

    ranks = _positive_int(args.ranks, "-n/--ranks", maximum=(1 << 31) - 1)
    low, high = parse_size_range(args.sizes, "-m")
    if high > MAX_MESSAGE_BYTES:
        raise PetacommError(
            f"-m: MAX must be at most 1 GiB (MPI counts are int), got '{args.sizes}'"
        )
    if 1 << (low - 1).bit_length() > high:  # the program measured nothing, once launched
        raise PetacommError(
            f"-m: the sizes are the powers of two from MIN to MAX, and none lies in '{args.sizes}'"
        )
    warmup = _positive_int(args.warmup, "-x", minimum=0, maximum=MAX_REPEATS)
    iterations = _positive_int(args.iterations, "-i", maximum=MAX_REPEATS)
    repetitions = _positive_int(args.repetitions, "-r", maximum=MAX_REPEATS)
    max_buffer = parse_byte_count(args.max_buffer, "--max-buffer")
    if max_buffer < 1:
        raise PetacommError(f"--max-buffer: must be at least 1 byte, got '{args.max_buffer}'")
    if max_buffer > MAX_BUFFER_BYTES:  # 1e308 was refused by the program, after the launch
        raise PetacommError(
            f"--max-buffer: at most {MAX_BUFFER_BYTES} bytes, got '{args.max_buffer}'"
        )
    ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    unknown = [op for op in ops if op not in OPERATIONS]
    if unknown or not ops:
        raise PetacommError(
            f"--ops: unknown operation '{unknown[0] if unknown else args.ops}' "
            f"(choose from {', '.join(OPERATIONS)})"
        )
    refuse_repeats(ops, "--ops")
    if args.mpiexec is not None and not args.mpiexec.strip():
        raise PetacommError("--mpiexec: empty launcher name")
    inputs = [("--raw", args.raw)]
    refuse_empty_names([*inputs, ("--output", args.output)])  # '' named the directory '.'
    output = Path(args.output) if args.output is not None else default_model_path()
    if args.output is None:  # the default place is created (a path given must exist)
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise PetacommError(
                f"--output: cannot create the default model directory '{output.parent}' "
                f"({err.strerror}; pass --output FILE)"
            ) from None
    check_output_path(output, "--output", inputs)
    outputs = [("--output", output)]
    for argument, path in (("--plot", args.plot), ("--keep-raw", args.keep_raw)):
        if path is not None:
            check_output_path(path, argument, inputs + outputs)
            outputs.append((argument, path))
    if args.plot is not None:
        _check_plot_format(args.plot)
    if args.raw is None:
        _check_local_ranks(ranks)
    return Settings(ranks, low, high, warmup, iterations, repetitions, max_buffer, ops, output)


def run(args) -> int:
    from petacomm.files import write_text_atomically
    from petacomm.model.machine import save

    settings = check_arguments(args)
    if args.raw is not None:
        raw = read_raw(Path(args.raw), "--raw")
        launcher_text = ""
    else:
        flags = ["-m", f"{settings.low}:{settings.high}", "-x", str(settings.warmup)]
        flags += ["-i", str(settings.iterations), "-r", str(settings.repetitions)]
        flags += ["--ops", ",".join(settings.ops), "--max-buffer", str(settings.max_buffer)]
        raw, launcher_text = run_native_benchmark(
            settings.ranks, flags, args.mpiexec, quiet=args.quiet
        )
        if args.keep_raw is not None:
            write_text_atomically(args.keep_raw, json.dumps(raw, indent=1) + "\n", "--keep-raw")
    model = model_from_raw(raw)
    model.settings = {
        "warmup": raw.get("warmup", settings.warmup),
        "iterations": raw.get("iterations", settings.iterations),
        "repetitions": raw.get("repetitions", settings.repetitions),
        "min_bytes": settings.low,
        "max_bytes": settings.high,
    }
    if launcher_text:
        model.machine["launcher"] = launcher_text
    path = save(model, settings.output, inputs=[("--raw", args.raw)])
    if args.plot is not None:
        from petacomm.model.plot import plot_model

        plot_model(model, args.plot)
    if args.json:
        print(json.dumps(model.to_dict(), indent=1))
    else:
        print(format_report(model))
        print(f"\nmachine model written to {path}")
        if args.plot is not None:
            print(f"plot written to {args.plot}")
    return 0


def _check_launcher_matches_library(launcher) -> None:
    """Refuses a launcher of another MPI than the one petacomm-netbench was built with: its
    ranks would each start alone (MPICH's mpiexec starting an Open MPI program)."""
    from petacomm.launch import VENDOR_NAMES, native_mpi_vendor

    built_with = native_mpi_vendor()
    if "unknown" in (built_with, launcher.vendor) or built_with == launcher.vendor:
        return
    raise PetacommError(
        f"--mpiexec: {launcher.path} is {VENDOR_NAMES[launcher.vendor]}'s launcher but "
        f"petacomm-netbench was built with {VENDOR_NAMES[built_with]}: its ranks would not "
        f"form one job (give the launcher of {VENDOR_NAMES[built_with]}, see petacomm doctor)"
    )


def run_native_benchmark(
    ranks: int, flags: list[str], mpiexec: str | None = None, quiet: bool = False
) -> tuple[dict, str]:
    """Runs petacomm-netbench under mpiexec with a progress display; returns its raw JSON
    and the launcher's description."""
    import subprocess
    import tempfile

    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path
    from petacomm.progress import Progress

    launcher = find_mpiexec(mpiexec)
    launcher.check_can_run()
    _check_launcher_matches_library(launcher)
    program = program_path("petacomm-netbench")
    with tempfile.TemporaryDirectory(prefix="petacomm-netbench-") as scratch:
        raw_path = Path(scratch) / "raw.json"
        argv = launcher.command(
            ranks, [str(program), *flags, "--progress", "--json", str(raw_path)]
        )
        output: list[str] = []
        with (
            Progress("netbench", quiet=quiet) as progress,
            tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errors,
        ):
            progress.status(f"starting {ranks} ranks")
            try:
                child = subprocess.Popen(
                    argv, stdout=subprocess.PIPE, stderr=errors, text=True, errors="replace"
                )
            except OSError as err:
                raise PetacommError(f"mpiexec: cannot run '{argv[0]}': {err.strerror}") from err
            try:
                started = False
                for line in child.stdout:
                    match = _PROGRESS.match(line.strip())
                    if not match:
                        output.append(line.rstrip("\n"))
                        continue
                    done, total, op, size = match.groups()
                    if not started:
                        progress.start(int(total), "sizes measured")
                        started = True
                    progress.advance(detail=f"{op} {_size_text(int(size))}")
                returncode = child.wait()
            except BaseException:
                child.terminate()
                child.wait()
                raise
            errors.seek(0)
            stderr = errors.read()
        if returncode != 0 or not raw_path.exists():
            tail = "\n".join((stderr or "\n".join(output)).strip().splitlines()[-6:])
            raise PetacommError(
                f"the benchmark failed (exit code {returncode}): {' '.join(argv)}\n{tail}"
            )
        raw = read_raw(raw_path, "the benchmark's output")
    if raw["ranks"] != ranks:
        raise PetacommError(
            f"--mpiexec: the benchmark ran as {raw['ranks']}-rank job(s) instead of one job of "
            f"{ranks} ranks: {launcher.path} does not start programs of the MPI "
            "petacomm-netbench was built with as one job (see petacomm doctor)"
        )
    return raw, f"{launcher.path} ({launcher.vendor})"


def _size_text(nbytes: int) -> str:
    from petacomm.units import format_exact_size

    return format_exact_size(nbytes)


def read_raw(path: Path, origin: str) -> dict:
    """A raw petacomm-netbench file, checked field by field (PetacommError naming it)."""
    from petacomm.files import loads_json, read_text_file

    text = read_text_file(path, origin)
    try:
        raw = loads_json(text, parse_constant=_not_a_number)
    except ValueError as err:
        raise PetacommError(f"{origin}: {path} is not valid JSON ({err})") from None
    if not isinstance(raw, dict) or raw.get("tool") != "petacomm-netbench":
        raise PetacommError(f"{origin}: {path} is not petacomm-netbench output")
    validate_raw(raw, f"{origin}: {path}")
    return raw


def _not_a_number(name: str):
    raise ValueError(f"{name} is not a number")


def validate_raw(raw: dict, origin: str) -> None:
    """Checks the fields model_from_raw reads; PetacommError naming the first bad one."""
    import statistics

    def fail(where: str, what: str):
        raise PetacommError(f"{origin}: invalid at {where}: {what}")

    def whole(value, where: str, minimum: int):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            fail(where, f"expected an integer >= {minimum}, got {value!r}")

    whole(raw.get("ranks"), "ranks", 1)
    series = raw.get("series")
    if not isinstance(series, list):
        fail("series", "expected a list")
    first_series = {}  # operation -> index of its series
    for i, entry in enumerate(series):
        where = f"series/{i}"
        if not isinstance(entry, dict):
            fail(where, "expected an object")
        op = entry.get("op")
        if op not in RAW_SERIES:
            fail(f"{where}/op", f"unknown operation {op!r}")
        if op in first_series:  # the model holds one fit per operation: one would be lost
            fail(f"{where}/op", f"a second {op} series (the first is series/{first_series[op]})")
        first_series[op] = i
        whole(entry.get("participants"), f"{where}/participants", 1)
        points = entry.get("points")
        if not isinstance(points, list):
            fail(f"{where}/points", "expected a list")
        for j, point in enumerate(points):
            at = f"{where}/points/{j}"
            if not isinstance(point, dict):
                fail(at, "expected an object")
            whole(point.get("bytes"), f"{at}/bytes", 1)
            whole(point.get("iterations"), f"{at}/iterations", 1)
            seconds = point.get("seconds")
            if not isinstance(seconds, list) or not all(
                isinstance(t, int | float) and not isinstance(t, bool) and 0 <= t < 1e9
                for t in seconds
            ):
                fail(f"{at}/seconds", "expected a list of times in seconds (>= 0)")
        timed = [point["seconds"] for point in points if point["seconds"]]
        if timed and not any(statistics.median(seconds) > 0 for seconds in timed):
            # model_from_raw fits positive medians only: the series would vanish unsaid.
            fail(where, f"the {op} series' median time is 0 at every size (nothing measured)")
    nodes = raw.get("node_of_rank", [0])
    if not isinstance(nodes, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in nodes
    ):
        fail("node_of_rank", "expected a list of integers")
    hosts = raw.get("hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        fail("hosts", "expected a list of host names")
    if not isinstance(raw.get("mpi_library", ""), str):
        fail("mpi_library", "expected a string")


def model_from_raw(raw: dict):
    """Statistics per size (over repetitions) and piecewise fits on the medians."""
    import statistics

    from petacomm.model.fit import fit_piecewise
    from petacomm.model.machine import MachineModel, OperationModel, Piece, Point

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
        "mpi_library": _library_version(raw.get("mpi_library", "")),
    }
    return MachineModel(operations, source="netbench", machine=machine)


def _library_version(text: str) -> str:
    """MPI_Get_library_version's string as a C string: up to its first NUL (the length some
    libraries give counts the terminating NUL, which the native program copied into its
    JSON as \\u0000 and the model kept), without surrounding whitespace."""
    return text.split("\0", 1)[0].strip()


def format_report(model) -> str:
    from petacomm.units import format_exact_size

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
    sizes = sorted({pt.nbytes for op in model.operations.values() for pt in op.points})
    # Blocks of as many operations as fit in 100 columns, one after another.
    per_block = max(1, (100 - 10) // width)
    for start in range(0, len(names), per_block):
        block = names[start : start + per_block]
        lines.append(f"{'Size':>10}" + "".join(f"{name:>{width}}" for name in block))
        for size in sizes:
            row = f"{format_exact_size(size):>10}"
            for name in block:
                points = model.operations[name].points
                point = next((pt for pt in points if pt.nbytes == size), None)
                if point is None:
                    row += f"{'-':>{width}}"
                else:
                    cell = f"{_us(point.median_s)} [{_us(point.min_s)}-{_us(point.max_s)}]"
                    row += f"{cell:>{width}}"
            lines.append(row)
        if start + per_block < len(names):
            lines.append("")
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
            # A space before every column: a value wider than its column (the bandwidth of
            # a fit with a tiny positive beta, 1e12 GB/s) must not run into its neighbour.
            lines.append(
                f"{name:<22}{op.p:>4} {span:>23} {piece.alpha_s * 1e6:>11.3f} {bandwidth:>14}"
                f" {piece.r2:>7.4f} {piece.points:>7}"
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
