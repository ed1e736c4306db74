"""``petacomm bench fftfilter``: the three variants of the NEMORB Fourier filter side by side.

For each rank count the command runs the native mini-app ``petacomm-fftfilter`` (all three
variants in one job, on the same field): plain (complexified c2c along phi, full
transposes), packed (r2c with the packed half-complex format) and packed-partial (also
skipping the modes the filter removes). It prints time per filter (median over
repetitions of the max over ranks), time per phase, bytes and messages sent per rank per
filter, the speedup and byte ratio against plain, and the error against a serial 2-D FFT
reference (every variant must be within 1e-12). The default field is NEMORB's ITER shape
(n_s, n_chi, n_phi) = (512, 2048, 1024) scaled to (32, 512, 256), with the low-pass square
|m| <= n_chi / 8, |n| <= n_phi / 16.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from petacomm.bench import MAX_REPS, bounded_int, launched_ranks
from petacomm.errors import PetacommError, refuse_repeats
from petacomm.files import check_output_path, write_text_atomically
from petacomm.progress import run_showing_progress
from petacomm.units import decimal_int

SCHEMA_VERSION = 1


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "fftfilter",
        help="the NEMORB Fourier filter: plain vs packed vs packed-partial",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--shape", default="32,512,256", help="n_s,n_chi,n_phi (even chi, phi)")
    parser.add_argument("--ranks", default="2,4", help="rank counts (default 2,4)")
    parser.add_argument("--grid", help="p_s,p_chi process grid (default 1,p)")
    parser.add_argument("--modes", help="M,N kept modes (default n_chi/8,n_phi/16)")
    parser.add_argument("--reps", type=int, default=10, help="timed filters (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed filters (default 2)")
    parser.add_argument("--strategy", default="auto", help="plain/packed transposes' strategy")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--mpiexec", help="MPI launcher (default: found automatically)")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line on standard error while ranks run"
    )
    parser.set_defaults(func=run)


def _ints(text: str, count: int, what: str) -> list[int]:
    try:
        values = [decimal_int(v) for v in text.split(",")]
    except ValueError:
        raise PetacommError(
            f"{what}: expected {count} comma-separated integers, got '{text}'"
        ) from None
    if len(values) != count or min(values) < 0:
        raise PetacommError(f"{what}: expected {count} non-negative integers, got '{text}'")
    return values


def _check_strategy(name: str) -> None:
    """The plain and packed variants' transpose strategy, which petacomm-fftfilter refused
    only once launched (packed-partial always transposes with 'partial')."""
    from petacomm.transpose import strategies

    known = strategies()
    names = [s.name for s in known if not s.needs_mask]
    if name != "auto" and name not in names:
        masked = any(s.name == name for s in known)
        why = "the packed-partial variant's own" if masked else "unknown"
        raise PetacommError(
            f"--strategy: {why} '{name}' (expected auto or one of {', '.join(names)})"
        )


def run(args) -> int:
    shape = _ints(args.shape, 3, "--shape")
    if shape[0] < 1 or shape[1] < 2 or shape[2] < 2 or shape[1] % 2 or shape[2] % 2:
        raise PetacommError(f"--shape: n_s >= 1 and even n_chi, n_phi >= 2 expected, got {shape}")
    ranks = _ints(args.ranks, len(args.ranks.split(",")), "--ranks")
    if min(ranks) < 1:
        raise PetacommError(f"--ranks: expected positive integers, got '{args.ranks}'")
    refuse_repeats(ranks, "--ranks")
    launched_ranks(ranks, "--ranks")
    bounded_int(args.reps, "--reps", 1, MAX_REPS)
    bounded_int(args.warmup, "--warmup", 0, MAX_REPS)
    _check_strategy(args.strategy)
    modes = _ints(args.modes, 2, "--modes") if args.modes else None
    grids = {}  # every rank count's, before the first run (a misfit was found after runs)
    for p in ranks:
        grid = grids[p] = _ints(args.grid, 2, "--grid") if args.grid else [1, p]
        if grid[0] * grid[1] != p:
            raise PetacommError(f"--grid: {grid[0]} x {grid[1]} does not make {p} ranks")
    from petacomm.launch import find_mpiexec
    from petacomm.native import program_path

    program = program_path("petacomm-fftfilter")
    launcher = find_mpiexec(args.mpiexec)
    launcher.check_can_run()
    if args.json is not None:  # before running; an existing file is kept until the end
        check_output_path(args.json, "--json")
    results = {"schema": "petacomm-bench-fftfilter", "schema_version": SCHEMA_VERSION, "runs": []}
    for p in ranks:
        grid = grids[p]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "fftfilter.json"
            argv = [str(program), "--shape", ",".join(map(str, shape))]
            argv += ["--grid", f"{grid[0]},{grid[1]}", "--variant", "all"]
            argv += ["--reps", str(args.reps), "--warmup", str(args.warmup)]
            argv += ["--strategy", args.strategy, "--json", str(out)]
            if modes:
                argv += ["--modes", f"{modes[0]},{modes[1]}"]
            done = run_showing_progress(
                "bench fftfilter",
                f"petacomm-fftfilter on {p} ranks",
                launcher.command(p, argv),
                quiet=args.quiet,
                env=dict(os.environ),
            )
            if done.returncode != 0 or not out.exists():
                raise PetacommError(
                    f"petacomm-fftfilter on {p} ranks failed (exit {done.returncode}):\n"
                    f"{(done.stderr or done.stdout).strip()[-2000:]}"
                )
            entry = json.loads(out.read_text())
        results["runs"].append(entry)
        _print(entry)
    if args.json is not None:
        write_text_atomically(Path(args.json), json.dumps(results, indent=1), "--json")
    return 0


def _print(entry: dict) -> None:
    n_s, n_chi, n_phi = entry["shape"]
    print(
        f"\nfield {n_s} x {n_chi} x {n_phi} (s, chi, phi) float64 on {entry['ranks']} ranks "
        f"(grid {entry['grid'][0]} x {entry['grid'][1]}), |m| <= {entry['modes'][0]}, "
        f"|n| <= {entry['modes'][1]}"
    )
    print(
        f"{'variant':<15} {'ms/filter':>9} {'phi ms':>7} {'transp ms':>9} {'chi ms':>7} "
        f"{'KiB/rank':>9} {'msgs':>5} {'speedup':>8} {'bytes':>7} {'error':>9}"
    )
    plain = next(v for v in entry["variants"] if v["variant"] == "plain")
    for v in entry["variants"]:
        phases = v["phase_seconds"]
        ratio = plain["bytes_per_rank"] / v["bytes_per_rank"] if v["bytes_per_rank"] else 0.0
        speedup = plain["seconds_per_filter"] / v["seconds_per_filter"]
        print(
            f"{v['variant']:<15} {v['seconds_per_filter'] * 1e3:9.2f} "
            f"{phases['fft_phi'] * 1e3:7.2f} {phases['transpose'] * 1e3:9.2f} "
            f"{phases['fft_chi'] * 1e3:7.2f} {v['bytes_per_rank'] / 1024:9.1f} "
            f"{v['messages_per_rank']:5.0f} {speedup:7.2f}x "
            f"{ratio:6.2f}x {v['relative_error']:9.1e}"
        )
    print(
        "(ms/filter: median over repetitions of the max over ranks; phases: mean per filter,\n"
        " max over ranks; KiB/rank, msgs: sent per filter by the busiest rank; speedup and bytes:\n"
        " plain's time and bytes / this variant's; error: L2 against a serial 2-D FFT)"
    )
    print(f"verification: {'passed' if entry['verification_passed'] else 'FAILED'}")
