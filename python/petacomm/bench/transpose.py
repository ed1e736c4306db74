"""``petacomm bench transpose``: every transpose strategy against FFTW-MPI and mpi4py-fft
on the same MPI, the same buffers and the same run, with one MPI_Alltoall of the same
bytes as the floor.

The peers come from Debian (libfftw3-mpi-dev, python3-mpi4py-fft) and are built against
Debian's Open MPI, so the race runs there: the command builds petacomm's transpose family
against that MPI once (``--mpicc``, default mpicc.openmpi; cached like ``petacomm profiler
build``'s profilers) and launches one job per rank count with ``--mpiexec`` (default the
launcher beside --mpicc) and ``--python`` (default /usr/bin/python3, whose mpi4py is
Debian's). In each job every contender transposes the same n0 x n1 array, repetition by
repetition in rotating order; the table gives the median and best time (max over ranks),
GB/s (array bytes / median time), the speed ratio to the fastest peer (> 1: faster) and
the ratio to the floor. ``--weak`` adds a weak-scaling table (constant data per rank,
p = 1..8) for xor, pairwise and alltoall. ``--model-only P`` prints the planner's
predictions for P ranks without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from petacomm.bench import MAX_REPS, bounded_int, launched_ranks, positive_int_list
from petacomm.errors import PetacommError, refuse_repeats
from petacomm.files import check_output_path, refuse_empty_names, write_text_atomically
from petacomm.progress import run_showing_progress

SCHEMA_VERSION = 1
PEERS = ("fftw-mpi", "mpi4py-fft")
WEAK_STRATEGIES = ("xor", "pairwise", "alltoall")
WORKER = (
    "import sys; sys.path.append(sys.argv[1]); "
    "from petacomm.bench.transpose_race import worker_main; sys.exit(worker_main(sys.argv[2]))"
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "transpose",
        help="transpose strategies vs FFTW-MPI and mpi4py-fft on the same MPI and run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="2048x2048,4096x1024", help="n0xn1 list")
    parser.add_argument("--ranks", default="2,4", help="rank counts (default 2,4)")
    parser.add_argument("--dtype", default="complex128", help="element type (default complex128)")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed first (default 2)")
    parser.add_argument("--strategies", help="petacomm strategies (default: all but partial)")
    parser.add_argument("--peers", default=",".join(PEERS), help="fftw-mpi,mpi4py-fft or none")
    parser.add_argument("--weak", action="store_true", help="also the weak-scaling table")
    parser.add_argument("--weak-ranks", default="1,2,3,4,5,6,7,8", help="(default 1..8)")
    parser.add_argument("--weak-shape", default="256x4096", help="rows x cols per rank unit")
    parser.add_argument("--mpicc", default="mpicc.openmpi", help="MPI of the race")
    parser.add_argument("--mpiexec", help="launcher (default: the one beside --mpicc)")
    parser.add_argument("--python", default="/usr/bin/python3", help="Python with its mpi4py")
    parser.add_argument("--model", metavar="FILE", help="machine model for auto's costs")
    parser.add_argument("--model-only", metavar="P", help="predictions for P ranks (list)")
    parser.add_argument("--ranks-per-node", type=int, help="--model-only: ranks per node")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line on standard error while ranks run"
    )
    parser.set_defaults(func=run)


# ---- arguments ---------------------------------------------------------------------------
def shape_option(text: str, what: str) -> tuple[int, int]:
    """N0xN1 of a transposed array, given as option ``what``."""
    parts = text.lower().split("x")
    try:
        n0, n1 = (int(p) for p in parts)
    except ValueError:
        raise PetacommError(f"{what}: expected N0xN1, got '{text}'") from None
    if n0 < 1 or n1 < 1:
        raise PetacommError(f"{what}: extents must be positive, got '{text}'")
    if max(n0, n1) >= 1 << 63:  # the planner's int64 took 10^20 modulo 2^64, silently
        raise PetacommError(f"{what}: extents must be below 2^63, got '{text}'")
    return n0, n1


def _strategies(text: str | None) -> list[str]:
    from petacomm.transpose import strategies

    known = strategies()
    names = [s.name for s in known]
    if text is None:
        return [s.name for s in known if not s.needs_mask]
    chosen = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [c for c in chosen if c not in names]
    if unknown or not chosen:
        raise PetacommError(
            f"--strategies: unknown {', '.join(unknown) or 'empty list'} "
            f"(expected {', '.join(names)})"
        )
    refuse_repeats(chosen, "--strategies")
    return chosen


def _peers(text: str) -> list[str]:
    if text.strip() == "none":
        return []
    chosen = [v.strip() for v in text.split(",") if v.strip()]
    if not chosen:  # '' meant no peers, which is 'none'
        raise PetacommError(f"--peers: empty list (none for no peer), got {text!r}")
    unknown = [c for c in chosen if c not in PEERS]
    if unknown:
        raise PetacommError(f"--peers: unknown {', '.join(unknown)} (expected {', '.join(PEERS)})")
    refuse_repeats(chosen, "--peers")
    return chosen


def _cost(model_path: str | None) -> dict:
    from petacomm.model.machine import model_option_error
    from petacomm.transpose._capi import CostParams
    from petacomm.transpose.cost import cost_params, resolve_model

    try:  # resolve_model reads a path, or without one the measured model or the defaults
        params = cost_params(resolve_model(model_path))
    except PetacommError as err:
        raise model_option_error(err, model_path) from None
    return {name: getattr(params, name) for name, _ in CostParams._fields_}


# ---- the toolchain of the race -----------------------------------------------------------
def named_program(value: str, option: str) -> str:
    """The program a user named with ``option`` (a name on PATH or a path), as shutil.which
    gives it; PetacommError naming ``option`` and echoing the value when it cannot be run
    (empty, missing, a directory, not executable)."""
    if not value:
        raise PetacommError(f"{option}: empty program name ''")
    found = shutil.which(value)
    if found and not os.path.isdir(found):
        return found
    if os.path.isdir(value):
        raise PetacommError(f"{option}: '{value}' is a directory, not a program")
    if os.path.exists(value):
        if not os.access(value, os.X_OK):
            raise PetacommError(f"{option}: '{value}' is not executable")
        # executable, but a bare name is looked up on PATH only
        raise PetacommError(
            f"{option}: '{value}' not found on PATH (for the one in this directory: ./{value})"
        )
    where = "" if os.sep in value else " on PATH"
    raise PetacommError(f"{option}: '{value}' not found{where}")


def mpi_toolchain(mpicc: str, mpiexec: str | None) -> tuple[str, str]:
    """(mpicc, mpiexec) of a job on the MPI of ``mpicc``, checked before any build: the
    launcher is ``mpiexec`` when given, else the one beside ``mpicc`` (mpicc.openmpi:
    mpiexec.openmpi). PetacommError naming the option at fault."""
    # Not resolved: wrappers such as Open MPI's opal_wrapper behave by the name they run as.
    mpicc_path = os.path.abspath(named_program(mpicc, "--mpicc"))
    if mpiexec is not None:
        return mpicc_path, named_program(mpiexec, "--mpiexec")
    name = os.path.basename(mpicc_path)
    name = name.replace("mpicc", "mpiexec", 1) if "mpicc" in name else "mpiexec"
    launcher = os.path.join(os.path.dirname(mpicc_path), name)
    if not (os.path.isfile(launcher) and os.access(launcher, os.X_OK)):
        raise PetacommError(
            f"--mpicc: no MPI launcher beside '{mpicc}' (looked for {launcher}); pass --mpiexec"
        )
    return mpicc_path, launcher


def _toolchain(args) -> tuple[str, str, str]:
    return (*mpi_toolchain(args.mpicc, args.mpiexec), named_program(args.python, "--python"))


PROBE_MARK = "petacomm-probe "


def _shortened(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# What a probe may print: a program that prints without end (--python /usr/bin/yes) is
# stopped there, not read into memory until its timeout.
_PROBE_OUTPUT_LIMIT = 1 << 20


def _probe(argv: list[str], timeout: float) -> subprocess.CompletedProcess | None:
    """``argv`` run to its end like ``subprocess.run(capture_output=True, text=True)``,
    or None (the program killed) once its output passes ``_PROBE_OUTPUT_LIMIT`` bytes.
    Raises subprocess.TimeoutExpired after ``timeout`` seconds (the program killed)."""
    import selectors

    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    streams = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as reading:
        for stream in streams:
            reading.register(stream, selectors.EVENT_READ)
        try:
            while reading.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in reading.select(left):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        reading.unregister(key.fileobj)
                    streams[key.fileobj] += chunk
                if sum(map(len, streams.values())) > _PROBE_OUTPUT_LIMIT:
                    return None
            returncode = proc.wait(max(0.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in streams:
                stream.close()
    out, err = (streams[s].decode(errors="replace") for s in (proc.stdout, proc.stderr))
    return subprocess.CompletedProcess(argv, returncode, out, err)


def mpi4py_library(python: str, modules: tuple[str, ...] = (), option: str = "--python") -> Path:
    """The file of the MPI library ``python``'s mpi4py links, asked of ``python`` without
    starting MPI (``modules`` must import too); PetacommError naming ``option`` when it
    cannot import them or does not answer as a Python with mpi4py would."""
    from petacomm.profile.builder import libmpi_of

    wanted = ("mpi4py", *modules)
    code = (
        f"import importlib.util, {', '.join(wanted)}; "
        f"print({PROBE_MARK!r} + importlib.util.find_spec('mpi4py.MPI').origin)"
    )
    try:
        done = _probe([python, "-c", code], timeout=120)
    except subprocess.TimeoutExpired:
        raise PetacommError(
            f"{option}: '{python}' did not answer the probe as a Python with mpi4py would "
            "(no answer in 120 s)"
        ) from None
    except OSError as err:
        raise PetacommError(f"{option}: cannot run '{python}' ({err.strerror})") from None
    if done is None:
        raise PetacommError(
            f"{option}: '{python}' did not answer the probe as a Python with mpi4py would "
            f"(it printed more than {_PROBE_OUTPUT_LIMIT >> 20} MiB)"
        )
    answers = [
        ln[len(PROBE_MARK) :] for ln in done.stdout.splitlines() if ln.startswith(PROBE_MARK)
    ]
    if done.returncode == 0 and answers and Path(answers[-1]).is_file():
        library = libmpi_of(Path(answers[-1]))
        if library is None:
            raise PetacommError(f"{option}: '{python}''s mpi4py ({answers[-1]}) links no MPI")
        return library
    if done.returncode != 0 and "Traceback (most recent call last)" in done.stderr:
        last = done.stderr.strip().splitlines()[-1]
        raise PetacommError(
            f"{option}: '{python}' cannot import {', '.join(wanted)} ({last}; Debian: "
            f"apt-get install {' '.join('python3-' + m for m in wanted)})"
        )
    printed = (done.stdout + done.stderr).strip()
    shown = _shortened(printed) if printed else "nothing"
    raise PetacommError(
        f"{option}: '{python}' did not answer the probe as a Python with mpi4py would "
        f"(exit status {done.returncode}; it printed {shown})"
    )


def build_for(mpicc: str, log=print, family: str = "transpose") -> Path:
    """petacomm's ``family`` (default transpose) built against the MPI of ``mpicc``
    (cached): a directory usable as PETACOMM_NATIVE_DIR."""
    from petacomm.native_build import build_cache, source_tree
    from petacomm.profile.builder import cached_cmake_build, libmpi_of

    def collect(build_dir: Path, work: Path) -> dict:
        for part in ("lib", "bin", "share"):
            if (build_dir / part).is_dir():
                shutil.copytree(build_dir / part, work / part, symlinks=True)
        libmpi = libmpi_of(work / "lib" / "libpetacomm.so")
        return {"libmpi": str(libmpi) if libmpi else None}

    target, info, existed = cached_cmake_build(
        mpicc,
        source_tree(),
        build_cache(),
        defines=(
            f"-DPETACOMM_FAMILIES={family}",
            "-DPETACOMM_BUILD_TESTS=OFF",
            "-DPETACOMM_FORTRAN=OFF",
        ),
        targets=("petacomm",),  # the race needs the library only
        collect=collect,
        record_name="native.json",
        log=log,
    )
    if not existed:
        log(f"built petacomm's {family} family for {mpicc} (links {info.get('libmpi')})")
    return target


def _check_same_mpi(python: str, native: Path, theirs: Path | None = None) -> None:
    """``python``'s mpi4py (``theirs``, probed when not given) and petacomm's build in
    ``native`` link the same MPI library; PetacommError naming --python otherwise."""
    from petacomm.profile.builder import libmpi_of

    theirs = mpi4py_library(python) if theirs is None else theirs
    ours = libmpi_of(native / "lib" / "libpetacomm.so")
    if ours is None or theirs != ours:
        raise PetacommError(
            f"--python: its mpi4py links {theirs}, petacomm was built against {ours}: the race "
            "needs one MPI (pass the matching --mpicc and --python)"
        )


def _launch(
    mpiexec: str, python: str, native: Path, ranks: int, config: dict, quiet: bool = False
) -> dict:
    import petacomm
    from petacomm.bench.transpose_race import MARK
    from petacomm.launch import describe_launcher

    launcher = describe_launcher(mpiexec)
    launcher.check_can_run()
    package_root = str(Path(petacomm.__file__).resolve().parent.parent)
    argv = launcher.command(ranks, [python, "-c", WORKER, package_root, json.dumps(config)])
    env = dict(os.environ, PETACOMM_NATIVE_DIR=str(native))
    started = time.monotonic()
    done = run_showing_progress(
        "bench transpose", f"the race on {ranks} ranks", argv, quiet=quiet, env=env
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if done.returncode != 0 or not lines:
        raise PetacommError(
            f"the race on {ranks} ranks failed (exit {done.returncode}):\n"
            f"{(done.stderr or done.stdout).strip()[-2000:]}"
        )
    run = json.loads(lines[-1][len(MARK) :])
    run["launch_seconds"] = time.monotonic() - started
    return run


# ---- the command -------------------------------------------------------------------------
def run(args) -> int:
    bounded_int(args.reps, "--reps", 1, MAX_REPS)
    bounded_int(args.warmup, "--warmup", 0, MAX_REPS)
    sizes = [shape_option(s, "--sizes") for s in args.sizes.split(",") if s.strip()]
    refuse_repeats([f"{n0}x{n1}" for n0, n1 in sizes], "--sizes")
    if not sizes:
        raise PetacommError("--sizes: expected at least one N0xN1")
    import numpy as np

    from petacomm.transpose._capi import DTYPES

    if args.dtype not in DTYPES:
        raise PetacommError(f"--dtype: unknown {args.dtype} (expected {', '.join(DTYPES)})")
    strategies = _strategies(args.strategies)
    refuse_empty_names([("--model", args.model)])  # '' was taken for no --model
    if args.ranks_per_node is not None:
        bounded_int(args.ranks_per_node, "--ranks-per-node")
    if args.model_only is not None:  # '' was taken for no --model-only: the race ran
        positive_int_list(args.model_only, "--model-only")
    else:  # the race's own options, before the toolchain is built and the first job runs
        ranks = positive_int_list(args.ranks, "--ranks")
        launched_ranks(ranks, "--ranks")
        peers = _peers(args.peers)
        if args.weak:  # they were checked after the whole race
            weak_shape = shape_option(args.weak_shape, "--weak-shape")
            weak_ranks = positive_int_list(args.weak_ranks, "--weak-ranks")
            launched_ranks(weak_ranks, "--weak-ranks")
    if args.json is not None:  # before running; an existing file is kept until the end
        check_output_path(args.json, "--json", [("--model", args.model)])
    results = {"schema": "petacomm-bench-transpose", "schema_version": SCHEMA_VERSION}
    cost = _cost(args.model)
    if args.model_only is not None:
        results["model_only"] = _model_only(args, sizes, np.dtype(args.dtype).itemsize, cost)
    else:
        mpicc, mpiexec, python = _toolchain(args)
        native = build_for(mpicc)
        _check_same_mpi(python, native)
        config = {
            "cases": sizes,
            "dtype": args.dtype,
            "reps": args.reps,
            "warmup": args.warmup,
            "strategies": strategies,
            "peers": peers,
            "cost": cost,
        }
        results.update({"mpicc": mpicc, "mpiexec": mpiexec, "python": python, "runs": []})
        for p in ranks:
            run = _launch(mpiexec, python, native, p, config, quiet=args.quiet)
            results["runs"].append(run)
            for case in run["cases"]:
                _print_case(run, case, args.reps)
        if args.weak:
            results["weak"] = _weak(args, weak_shape, weak_ranks, mpiexec, python, native, cost)
    if args.json is not None:
        write_text_atomically(Path(args.json), json.dumps(results, indent=1), "--json")
    return 0


def _print_case(run: dict, case: dict, reps: int) -> None:
    mib = case["array_bytes"] / (1 << 20)
    print(
        f"\n{case['n0']} x {case['n1']} {case['dtype']} ({mib:.1f} MiB) on {run['ranks']} "
        f"ranks, {run['mpi_library']}"
    )
    rows = {row["name"]: row for row in case["contenders"]}
    peers = [rows[name]["seconds_median"] for name in PEERS if name in rows]
    best_peer = min(peers) if peers else float("nan")
    floor = rows["floor"]["seconds_median"]
    print(
        f"{'contender':<22} {'median ms':>10} {'best ms':>9} {'GB/s':>7} {'vs peer':>8} "
        f"{'vs floor':>9} {'MiB/rank':>9}  ok"
    )
    for row in case["contenders"]:
        t = row["seconds_median"]
        sent = case["bytes_per_rank"].get(row["name"])
        label = "floor (MPI_Alltoall)" if row["name"] == "floor" else row["name"]
        print(
            f"{label:<22} {t * 1e3:10.2f} {row['seconds_best'] * 1e3:9.2f} "
            f"{case['array_bytes'] / t / 1e9:7.2f} {best_peer / t:7.2f}x {t / floor:8.2f}x "
            f"{'' if sent is None else f'{sent / (1 << 20):9.2f}':>9}  "
            f"{'yes' if row['agrees'] else 'NO'}"
        )
    for name, note in case["notes"].items():
        print(f"{name}: not run: {note}")
    print(f"auto (cost model) chose {case['auto']['choice']}: {case['auto']['reason']}")
    print(f"measure chose {case['measure']['choice']}: {case['measure']['reason']}")
    print(
        f"(median/best over {reps} interleaved repetitions of the max over ranks; GB/s: array\n"
        " bytes / median; vs peer: fastest peer's median / this one's (> 1: faster); vs floor:\n"
        " median / MPI_Alltoall's; MiB/rank: sent per transpose; ok: same output as petacomm)"
    )


def _weak(args, shape, counts, mpiexec: str, python: str, native: Path, cost: dict) -> list[dict]:
    rows, cols = shape
    entries = []
    print(
        f"\nweak scaling: {rows} x {cols} {args.dtype} per rank (n0 = {rows} p, n1 = {cols}); "
        f"{', '.join(WEAK_STRATEGIES)}"
    )
    print(f"{'ranks':>5} " + " ".join(f"{s + ' ms':>20}" for s in WEAK_STRATEGIES))
    for p in counts:
        config = {
            "cases": [[rows * p, cols]],
            "dtype": args.dtype,
            "reps": args.reps,
            "warmup": args.warmup,
            "strategies": list(WEAK_STRATEGIES),
            "peers": [],
            "planners": False,
            "cost": cost,
        }
        run = _launch(mpiexec, python, native, p, config, quiet=args.quiet)
        case = run["cases"][0]
        rows_by_name = {r["name"]: r for r in case["contenders"]}
        entry = {"ranks": p, "seconds": {}, "best_seconds": {}}
        cells = []
        for s in WEAK_STRATEGIES:
            row = rows_by_name.get(f"petacomm:{s}")
            entry["seconds"][s] = row["seconds_median"] if row else None
            entry["best_seconds"][s] = row["seconds_best"] if row else None
            text = (
                f"{row['seconds_median'] * 1e3:.2f} ({row['seconds_best'] * 1e3:.2f})"
                if row
                else "-"
            )
            cells.append(f"{text:>20}")
        entries.append(entry)
        print(f"{p:5d} " + " ".join(cells))
    print("(median (best) of the max over ranks; -: xor needs a power-of-two number of ranks)")
    return entries


def _model_only(args, sizes, itemsize: int, cost: dict) -> list[dict]:
    import ctypes

    from petacomm.transpose import _capi

    lib = _capi.library()
    params = _capi.CostParams(**cost)
    out = []
    for p in positive_int_list(args.model_only, "--model-only"):
        per_node = p if args.ranks_per_node is None else args.ranks_per_node
        for n0, n1 in sizes:
            problem = _capi.Problem(p, n0, n1, 1, itemsize, per_node, None, 0)
            needed = ctypes.c_size_t()
            status = lib.petacomm_transpose_model_decide(problem, params, None, 0, needed)
            try:  # the planner's bounds (ranks, ranks per node) named, not a traceback
                _capi.check(lib, status, "model_decide")
            except ValueError as err:
                raise PetacommError(f"--model-only {p}: {err}") from None
            text = ctypes.create_string_buffer(needed.value)
            status = lib.petacomm_transpose_model_decide(problem, params, text, needed.value, None)
            _capi.check(lib, status, "model_decide")
            decision = json.loads(text.value)
            out.append({"ranks": p, "ranks_per_node": per_node, "n0": n0, "n1": n1, **decision})
            print(f"\n{n0} x {n1} ({itemsize} B elements) on {p} ranks, {per_node} per node")
            print(f"{'strategy':<12} {'predicted ms':>13} {'messages':>9} {'MiB sent':>9}")
            for c in decision["candidates"]:
                if not c["applicable"]:
                    print(f"{c['name']:<12} {'-':>13}  {c['not_applicable_because']}")
                    continue
                print(
                    f"{c['name']:<12} {c['predicted_seconds'] * 1e3:13.3f} "
                    f"{c['messages']:9.0f} {c['bytes'] / (1 << 20):9.2f}"
                )
            print(f"planner: {decision['choice']} ({decision['reason']})")
    return out
