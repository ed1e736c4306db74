"""``petacomm bench sparse-reduce``: the strategies of SparseReducePlan side by side.

For each key-set generator and rank count the command launches itself under mpiexec; every
strategy is built on the same keys and executed on the same values: setup time (max over
ranks), execute time (median over repetitions of the max over ranks), messages and bytes
sent per rank per execution, plan memory, speedup over dense-allreduce, and the planner's
predictions and choice. ``--model-only P`` computes the plan statistics for P ranks from
the generators (no ranks run) and prints the predicted cost per strategy.
``--peers petscsf`` runs petacomm (``auto`` and every strategy) and two PetscSF variants
(petsc4py) in one job on the same keys, values and MPI (Debian Open MPI: petacomm is built
against ``--mpicc`` once, cached, and the ranks run under ``--python``); see
petacomm.bench.sparse_reduce_peers for the variants.
``--node-size K`` runs the ranks in virtual nodes of K consecutive ranks
(PETACOMM_NODE_SIZE) and prints the messages between nodes per execution: node-aware's from
its plan, directory's counted from the keys (pairs of ranks on different nodes sharing one);
with ``--model-only`` it prices node-aware for nodes of K ranks (default 1).
``--setup-scaling 2,4,8`` builds every strategy's plan repeatedly at each rank count with the
same keys per rank and prints the setup time per strategy — compute (each rank's thread CPU
time outside the MPI calls that wait for other ranks, max over ranks; not inflated when ranks
share cores) and wall — with the ratio between the largest and smallest rank count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from petacomm.bench import MAX_REPS, bounded_int, launched_ranks, positive_int_list
from petacomm.errors import PetacommError, refuse_repeats
from petacomm.files import write_text_atomically

SCHEMA_VERSION = 1
# --k, values per key at most: each rank holds keys x k of them, and 10^11 was launched
MAX_COMPONENTS = 1024
MARK = "XCHGBENCH "
GENERATOR_DEFAULTS = {
    "cmb": {"nside": 128, "samples_per_rank": 20000},
    "uniform": {"keys_per_rank": 10000},
    "banded": {"keys_per_rank": 10000, "halo": 1000},
    "zipf": {"keys_per_rank": 10000},
}
MODEL_ONLY_RANKS = 1 << 18
PEER_FAMILIES = {"petscsf": ("petscsf-range", "petscsf-holder")}
# The peers' toolchain unless --mpicc / --python name another: Debian's Open MPI and Python.
PEER_MPICC, PEER_PYTHON = "mpicc.openmpi", "/usr/bin/python3"
PEER_MODULES = ("numpy", "petsc4py")  # besides mpi4py


def _names(text: str, allowed, what: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in allowed]
    if not names:
        raise PetacommError(f"{what}: empty list (expected some of {', '.join(allowed)})")
    if unknown:
        raise PetacommError(f"{what}: unknown {', '.join(unknown)} (expected {', '.join(allowed)})")
    refuse_repeats(names, what)
    return names


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sparse-reduce",
        help="sparse key/value reduction strategies side by side (MADmap pattern)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--ranks", default="2,4,8", help="rank counts (default 2,4,8)")
    parser.add_argument(
        "--generator", default="cmb", help="cmb, uniform, banded, zipf (comma list)"
    )
    parser.add_argument(
        "--strategies", help="strategies to run (comma list; default: every registered one)"
    )
    parser.add_argument("--reps", type=int, default=20, help="timed executions (default 20)")
    parser.add_argument("--k", type=int, default=3, help="components per key (default 3)")
    parser.add_argument("--dtype", default="float64", help="value dtype (default float64)")
    parser.add_argument("--keys-per-rank", type=int, help="uniform/banded keys per rank")
    parser.add_argument("--samples-per-rank", type=int, help="cmb samples per rank")
    parser.add_argument("--total-samples", type=int, help="cmb: split this many samples")
    parser.add_argument("--nside", type=int, help="cmb HEALPix nside")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--transport", default="p2p", help="p2p, neighbor or alltoallv")
    parser.add_argument("--model-only", metavar="P", help="predict for P ranks (comma list)")
    parser.add_argument(
        "--node-size",
        type=int,
        metavar="K",
        help="virtual nodes of K ranks (PETACOMM_NODE_SIZE) and messages between nodes",
    )
    parser.add_argument(
        "--setup-scaling",
        metavar="P",
        help="setup time per strategy at these rank counts (comma list), fixed keys per rank",
    )
    parser.add_argument(
        "--setup-reps", type=int, default=5, help="plans built per strategy (default 5)"
    )
    parser.add_argument("--model", metavar="FILE", help="machine model (default: netbench's)")
    parser.add_argument(
        "--smpi",
        metavar="BUILD",
        help="--setup-scaling in SimGrid SMPI simulated time, with libpetacomm and its "
        "petacomm-xchg-setup-bench driver from this build tree (configured with CC=smpicc "
        "CXX=smpicxx -DPETACOMM_SMPI=ON)",
    )
    parser.add_argument(
        "--peers",
        metavar="NAMES",
        help="also run these peers on the same keys in the same job: petscsf (PetscSF through "
        "petsc4py, range-owned and lowest-holder roots)",
    )
    parser.add_argument(
        "--python",
        help="with --peers: the Python whose mpi4py and petsc4py run the ranks "
        f"(default {PEER_PYTHON})",
    )
    parser.add_argument(
        "--mpicc",
        help=f"with --peers: petacomm is built against this MPI (default {PEER_MPICC})",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--mpiexec",
        help="MPI launcher (default: found automatically; with --peers: the one beside --mpicc)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress on standard error (--model-only)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def _generator_params(args, name: str) -> dict:
    params = dict(GENERATOR_DEFAULTS[name])
    if name == "cmb":
        for option in ("samples_per_rank", "total_samples", "nside"):
            if getattr(args, option) is not None:
                params[option] = getattr(args, option)
        if args.model_only and args.total_samples is None:
            params.setdefault("total_samples", 1 << 22)
            params["nside"] = 512 if args.nside is None else args.nside
    elif args.keys_per_rank is not None:
        params["keys_per_rank"] = args.keys_per_rank
    params["seed"] = args.seed
    return params


def run(args) -> int:
    from petacomm.datasets import GENERATORS

    generators = _names(args.generator, GENERATORS, "--generator")
    registered = registered_strategies()
    strategies = (
        _names(args.strategies, registered, "--strategies")
        if args.strategies is not None  # an empty list is refused, not taken as every one
        else list(registered)
    )
    bounded_int(args.reps, "--reps", 1, MAX_REPS)
    bounded_int(args.k, "--k", 1, MAX_COMPONENTS)
    import numpy as np

    from petacomm.xchg import TRANSPORTS, _capi

    if args.dtype not in _capi.DTYPES:
        raise PetacommError(f"--dtype: unknown {args.dtype} (expected {', '.join(_capi.DTYPES)})")
    if args.transport not in TRANSPORTS:
        raise PetacommError(f"--transport: unknown {args.transport}")
    elem_bytes = np.dtype(args.dtype).itemsize * args.k
    if args.worker:
        return _worker(json.loads(args.worker))
    _check_before_launch(args, generators)
    results = {"schema": "petacomm-bench-sparse-reduce", "schema_version": SCHEMA_VERSION}
    bounded_int(args.setup_reps, "--setup-reps", 1, MAX_REPS)
    if args.node_size is not None:
        bounded_int(args.node_size, "--node-size")
    if args.model_only:
        results["model_only"] = _model_only(args, generators, elem_bytes)
    elif args.setup_scaling and args.smpi:
        results["setup_scaling_smpi"] = _setup_scaling_smpi(args, generators, strategies)
    elif args.setup_scaling:
        results["setup_scaling"] = _setup_scaling(args, generators, strategies)
    elif args.peers:
        results["peers"] = _measure_peers(args, generators, strategies, _peer_toolchain(args))
    else:
        results["runs"] = _measure(args, generators, strategies)
    if args.json is not None:
        _write_json(Path(args.json), results)
    return 0


def _check_before_launch(args, generators) -> None:
    """Arguments that would otherwise fail only inside the launched ranks (--nside 0)."""
    from petacomm.datasets import make
    from petacomm.files import check_output_path

    for option, value in (
        ("--model-only", args.model_only),
        ("--setup-scaling", args.setup_scaling),
    ):
        if value is not None:  # an empty list was taken as the option not given
            positive_int_list(value, option)
    for name in generators:
        try:
            make(name, 1, **_generator_params(args, name))
        except ValueError as err:
            field = str(err).split(":", 1)[0]
            raise PetacommError(f"--{field.replace('_', '-')}: {err}") from None
    if not (args.model_only or args.setup_scaling):
        hint = " (--model-only predicts any count)"
        launched_ranks(positive_int_list(args.ranks, "--ranks"), "--ranks", hint)
    if args.peers is not None:
        _names(args.peers, PEER_FAMILIES, "--peers")
        if args.model_only or args.setup_scaling:
            raise PetacommError(
                "--peers: runs measured executions; not with --model-only or --setup-scaling"
            )
    else:
        for option, value in (("--python", args.python), ("--mpicc", args.mpicc)):
            if value is not None:  # a run without peers would ignore it
                raise PetacommError(f"{option}: only used with --peers")
    if args.json is not None:
        check_output_path(args.json, "--json", [("--model", args.model)])
    if args.model is not None:  # read by every rank: a bad file named before any starts
        _load_model(args.model)


# ---- measured runs -----------------------------------------------------------------------
def _launch(args, name: str, ranks: int, config: dict, env: dict | None = None) -> dict:
    from petacomm.launch import find_mpiexec, run_job

    launcher = find_mpiexec(args.mpiexec)
    launcher.check_can_run()
    argv = [sys.executable, "-m", "petacomm.cli", "bench", "sparse-reduce"]
    argv += ["--worker", json.dumps(config)]
    started = time.monotonic()
    done = run_job(launcher.command(ranks, argv), env=env)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if done.returncode != 0 or not lines:
        raise PetacommError(
            f"{name} on {ranks} ranks failed (exit {done.returncode}):\n"
            f"{(done.stderr or done.stdout).strip()[-2000:]}"
        )
    run = json.loads(lines[-1][len(MARK) :])
    run["wall_seconds"] = time.monotonic() - started
    return run


def _measure(args, generators, strategies) -> list[dict]:
    runs = []
    for name in generators:
        for ranks in positive_int_list(args.ranks, "--ranks"):
            config = {
                "generator": name,
                "params": _generator_params(args, name),
                "ranks": ranks,
                "strategies": strategies,
                "reps": args.reps,
                "k": args.k,
                "dtype": args.dtype,
                "transport": args.transport,
                "model": args.model,
                "node_size": args.node_size,
            }
            env = None
            if args.node_size is not None:
                env = dict(os.environ, PETACOMM_NODE_SIZE=str(args.node_size))
            run = _launch(args, name, ranks, config, env)
            runs.append(run)
            _print_run(run)
    return runs


# ---- peers ---------------------------------------------------------------------------------
def _peer_toolchain(args) -> dict:
    """The peers' MPI compiler, launcher and Python and the MPI library its mpi4py links,
    checked before anything runs; ``{"skipped": note}`` when the default ones are not
    installed here. A --mpicc, --mpiexec or --python the user named that cannot serve is an
    error naming it (it was a skip note and exit status 0)."""
    import shutil

    from petacomm.bench.transpose import mpi4py_library, mpi_toolchain, named_program

    python = library = None
    if args.python is not None:
        python = named_program(args.python, "--python")
        library = mpi4py_library(python, PEER_MODULES)
    if args.mpicc is None and not shutil.which(PEER_MPICC):
        if args.mpiexec is not None:  # named: an error even when the peers are skipped
            named_program(args.mpiexec, "--mpiexec")
        return {
            "skipped": f"{PEER_MPICC} not found (the peers need the MPI that petsc4py uses; "
            "Debian: apt-get install libopenmpi-dev python3-petsc4py, or pass --mpicc)"
        }
    mpicc, mpiexec = mpi_toolchain(PEER_MPICC if args.mpicc is None else args.mpicc, args.mpiexec)
    if python is None:
        python = shutil.which(PEER_PYTHON)
        if not python:
            return {
                "skipped": f"{PEER_PYTHON} not found (Debian: apt-get install python3-petsc4py)"
            }
        try:
            library = mpi4py_library(python, PEER_MODULES)
        except PetacommError as err:
            return {"skipped": str(err).removeprefix("--python: ")}
    return {"mpicc": mpicc, "mpiexec": mpiexec, "python": python, "mpi4py_links": library}


PEERS_WORKER = (
    "import sys; sys.path.append(sys.argv[1]); "
    "from petacomm.bench.sparse_reduce_peers import worker_main; "
    "sys.exit(worker_main(sys.argv[2]))"
)


def _measure_peers(args, generators, strategies, tools: dict) -> dict:
    """The peers' runs with the toolchain ``tools`` (_peer_toolchain's)."""
    import pickle

    import numpy as np

    import petacomm
    from petacomm.bench.sparse_reduce_peers import MARK as PEERS_MARK
    from petacomm.bench.transpose import _check_same_mpi, build_for
    from petacomm.datasets import make
    from petacomm.launch import describe_launcher, run_job

    if "skipped" in tools:
        print(f"--peers {args.peers}: skipped, {tools['skipped']}")
        return {"skipped": tools["skipped"]}
    peers = [
        v for name in _names(args.peers, PEER_FAMILIES, "--peers") for v in PEER_FAMILIES[name]
    ]
    mpicc, mpiexec, python = tools["mpicc"], tools["mpiexec"], tools["python"]
    native = build_for(mpicc, family="xchg")
    _check_same_mpi(python, native, tools["mpi4py_links"])
    launcher = describe_launcher(mpiexec)
    launcher.check_can_run()
    model = _load_model(args.model)
    if model.source == "defaults":
        print(
            "note: no measured machine model: auto prices the strategies with the built-in\n"
            "  cluster defaults (`petacomm netbench` measures this machine's in seconds; or "
            "--model FILE)"
        )
    package_root = str(Path(petacomm.__file__).resolve().parent.parent)
    env = dict(os.environ, PETACOMM_NATIVE_DIR=str(native))
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")  # oversubscribed: no spinning ranks
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    runs = []
    for name in generators:
        params = _generator_params(args, name)
        for ranks in positive_int_list(args.ranks, "--ranks"):
            generator = make(name, ranks, **params)
            with tempfile.TemporaryDirectory(prefix="petacomm-peers-") as work:
                work = Path(work)
                for r in range(ranks):
                    np.save(work / f"keys_{r}.npy", np.unique(generator.keys(r)))
                with open(work / "model.pickle", "wb") as f:
                    pickle.dump(model, f)
                config = {
                    "work": str(work),
                    "k": args.k,
                    "reps": args.reps,
                    "warmup": 2,
                    "setup_reps": args.setup_reps,
                    "key_range": generator.key_range,
                    "strategies": ["auto", *strategies],
                    "transport": args.transport,
                    "peers": peers,
                }
                argv = launcher.command(
                    ranks, [python, "-c", PEERS_WORKER, package_root, json.dumps(config)]
                )
                done = run_job(argv, env=env)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith(PEERS_MARK)]
            if done.returncode != 0 or not lines:
                raise PetacommError(
                    f"--peers: {name} on {ranks} ranks failed (exit {done.returncode}):\n"
                    f"{(done.stderr or done.stdout).strip()[-2000:]}"
                )
            run = json.loads(lines[-1][len(PEERS_MARK) :])
            run.update(generator=name, params=params, key_range=generator.key_range)
            _summarise_peers_run(run)
            _print_peers_run(run)
            runs.append(run)
    _print_peers_summary(runs)
    return {"mpicc": mpicc, "mpiexec": mpiexec, "python": python, "runs": runs}


def _summarise_peers_run(run: dict) -> None:
    """Per contender the median and the best (minimum) of its setup and execute samples, and
    for each statistic the ratios the targets are about (in place). On a shared machine the
    best is the less noisy estimate: a repetition no rank was descheduled in."""
    import numpy as np

    # Contenders whose results differ from the independent reference are in the tables,
    # flagged, and in no ratio.
    rows = {c["name"]: c for c in run["contenders"] if c["agrees"]}
    for c in run["contenders"]:
        for what in ("setup", "execute", "setup_without_glue"):
            if f"{what}_seconds" in c:
                c[f"{what}_median"] = float(np.median(c[f"{what}_seconds"]))
                c[f"{what}_best"] = float(np.min(c[f"{what}_seconds"]))
    sf = [rows[n] for n in rows if n.startswith("petscsf")]
    auto = rows.get("petacomm:auto")
    run["ratios"] = {}
    for stat in ("median", "best"):
        ratios = {}
        if sf and auto is not None:
            for what in ("execute", "setup"):
                faster = min(c[f"{what}_{stat}"] for c in sf)
                ratios[f"{what}_vs_faster_sf"] = auto[f"{what}_{stat}"] / faster
            if all("setup_without_glue_seconds" in c for c in sf):
                faster = min(c[f"setup_without_glue_{stat}"] for c in sf)
                ratios["setup_vs_faster_sf_without_glue"] = auto[f"setup_{stat}"] / faster
        if auto is not None and run.get("auto"):
            candidates = [
                rows[f"petacomm:{n}"] for n in run["auto"]["candidates"] if f"petacomm:{n}" in rows
            ]
            if candidates:
                fastest = min(candidates, key=lambda c: c[f"execute_{stat}"])
                ratios["auto_vs_fastest_candidate"] = (
                    auto[f"execute_{stat}"] / fastest[f"execute_{stat}"]
                )
                ratios["fastest_candidate"] = fastest["name"].split(":", 1)[1]
                # The decision alone: the strategy auto chose, measured by name, against the
                # fastest (1.00x when it chose the fastest; auto/fastest adds the noise of
                # timing the same strategy in two plans).
                chosen = rows.get(f"petacomm:{run['auto']['choice']}")
                if chosen is not None:
                    ratios["choice_vs_fastest_candidate"] = (
                        chosen[f"execute_{stat}"] / fastest[f"execute_{stat}"]
                    )
        run["ratios"][stat] = ratios


def _print_peers_run(run: dict) -> None:
    title = (
        f"{run['generator']} on {run['ranks']} ranks ({run['mpi_library']}): key range "
        f"{run['key_range']} keys, distinct keys per rank max {run['distinct_keys_max']}, "
        f"values {run['k']} x float64"
    )
    print("\n" + textwrap.fill(title, 100, subsequent_indent="  "))
    sf = [c for c in run["contenders"] if c["name"].startswith("petscsf")]

    def faster(field: str) -> float:
        return min((c[field] for c in sf), default=float("nan"))

    print(
        f"{'contender':<26} {'setup ms':>9} {'best ms':>8} {'exec us':>9} {'best us':>9} "
        f"{'setup/SF':>8} {'exec/SF':>8}"
    )
    for c in run["contenders"]:
        flag = "" if c["agrees"] else "  (results differ!)"
        print(
            f"{c['name']:<26} {c['setup_median'] * 1e3:9.2f} {c['setup_best'] * 1e3:8.2f} "
            f"{c['execute_median'] * 1e6:9.1f} {c['execute_best'] * 1e6:9.1f} "
            f"{c['setup_best'] / faster('setup_best'):7.2f}x "
            f"{c['execute_best'] / faster('execute_best'):7.2f}x{flag}"
        )
    best = run["ratios"]["best"]
    if run.get("auto"):
        line = f"auto chose {run['auto']['choice']}"
        if "fastest_candidate" in best:
            line += (
                f"; fastest of its candidates (best): {best['fastest_candidate']}, auto/fastest "
                f"{best['auto_vs_fastest_candidate']:.2f}x"
            )
            if "choice_vs_fastest_candidate" in best:
                line += (
                    f"\n  ({run['auto']['choice']} timed by name / {best['fastest_candidate']}: "
                    f"{best['choice_vs_fastest_candidate']:.2f}x)"
                )
        print(line)
    for c in sf:
        if "setup_without_glue_best" in c:
            print(
                f"  {c['name']} setup less its numpy work: "
                f"{c['setup_without_glue_median'] * 1e3:.2f} ms, "
                f"best {c['setup_without_glue_best'] * 1e3:.2f} ms"
            )
    print("(setup: plan or star-forest creation, discovery included; exec: one reduce + broadcast;")
    print(" each sample the max over ranks; median and best (minimum) over builds/repetitions;")
    print(" /SF: best vs the faster PetscSF variant's best; results checked against numpy's sums)")


def _print_peers_summary(runs: list[dict]) -> None:
    if not runs or not any("execute_vs_faster_sf" in r["ratios"]["best"] for r in runs):
        return
    print("\nauto vs the faster PetscSF variant, and vs the fastest strategy it could have picked")
    print(
        f"{'keys':<7} {'ranks':>5} | {'exec/SF':>7} {'(med)':>6} | {'setup/SF':>8} {'(med)':>6} | "
        f"{'auto/best':>9} {'(med)':>6} | {'choice/best':>11} {'(med)':>6}  fastest"
    )
    for run in runs:
        best, median = run["ratios"]["best"], run["ratios"]["median"]
        if "execute_vs_faster_sf" not in best:
            continue
        nan = float("nan")
        print(
            f"{run['generator']:<7} {run['ranks']:>5} | {best['execute_vs_faster_sf']:6.2f}x "
            f"{median['execute_vs_faster_sf']:5.2f}x | {best['setup_vs_faster_sf']:7.2f}x "
            f"{median['setup_vs_faster_sf']:5.2f}x | "
            f"{best.get('auto_vs_fastest_candidate', nan):8.2f}x "
            f"{median.get('auto_vs_fastest_candidate', nan):5.2f}x | "
            f"{best.get('choice_vs_fastest_candidate', nan):10.2f}x "
            f"{median.get('choice_vs_fastest_candidate', nan):5.2f}x  "
            f"{best.get('fastest_candidate', '-')}"
        )
    print("(ratios of the best samples, and of the medians; below 1.00x petacomm is faster;")
    print(" choice/best: the strategy auto chose, timed by name, over the fastest candidate)")
    glue = [r for r in runs if "setup_vs_faster_sf_without_glue" in r["ratios"]["best"]]
    if glue:
        print(
            "auto's setup vs the faster PetscSF variant's without its numpy work (the SF "
            "setups in C would lie\nbetween; numpy's per-call cost is what a C caller saves):"
        )
        for run in glue:
            best, median = run["ratios"]["best"], run["ratios"]["median"]
            print(
                f"{run['generator']:<7} {run['ranks']:>5} | setup/SF "
                f"{best['setup_vs_faster_sf']:.2f}x ({median['setup_vs_faster_sf']:.2f}x), "
                "without the SF's numpy work "
                f"{best['setup_vs_faster_sf_without_glue']:.2f}x "
                f"({median['setup_vs_faster_sf_without_glue']:.2f}x)"
            )
    differ = [
        f"{r['generator']} at {r['ranks']}: {c['name']}"
        for r in runs
        for c in r["contenders"]
        if not c["agrees"]
    ]
    if differ:
        print("RESULTS DIFFER from numpy's sums (left out of every ratio): " + "; ".join(differ))


def _load_model(path):
    from petacomm.model.machine import model_option_error
    from petacomm.xchg.cost import load_model

    try:
        model = load_model(path)
        model.required_point_to_point_operation()  # the planner prices messages by it
        return model
    except PetacommError as err:
        raise model_option_error(err, path) from None


def _build_plan(config: dict, comm, keys, strategy: str, dtype, k: int, model):
    """One plan of the benchmark's configuration (the same for timing and setup scaling)."""
    from petacomm.xchg import SparseReducePlan

    return SparseReducePlan(
        comm,
        keys,
        strategy=strategy,
        transport=config["transport"],
        dtype=dtype,
        k=k,
        model=model,
    )


def _worker(config: dict) -> int:
    import numpy as np
    from mpi4py import MPI

    from petacomm.datasets import make
    from petacomm.xchg import SparseReducePlan

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    generator = make(config["generator"], size, **config["params"])
    keys = np.unique(generator.keys(rank))  # the local map: one entry per distinct key
    model = _load_model(config.get("model"))
    if config.get("mode") == "setup":
        return _setup_worker(config, comm, keys, generator, model)
    k, dtype, reps = config["k"], np.dtype(config["dtype"]), config["reps"]
    values0 = np.random.default_rng([7, rank]).uniform(0.5, 1.5, (keys.size, k)).astype(dtype)

    def max_over_ranks(seconds: float) -> float:
        return comm.allreduce(seconds, op=MPI.MAX)

    rows, reference = [], None
    for strategy in config["strategies"]:
        comm.Barrier()
        start, cpu_start = MPI.Wtime(), time.process_time()
        plan = _build_plan(config, comm, keys, strategy, dtype, k, model)
        setup = max_over_ranks(MPI.Wtime() - start)
        setup_cpu = max_over_ranks(time.process_time() - cpu_start)
        values = values0.copy()
        plan.execute(values)
        if reference is None:
            reference = values.copy()
        agrees = bool(comm.allreduce(int(np.allclose(values, reference, rtol=1e-9)), op=MPI.MIN))
        times = []
        for _ in range(reps):
            values[...] = values0
            comm.Barrier()
            start = MPI.Wtime()
            plan.execute(values)
            times.append(max_over_ranks(MPI.Wtime() - start))
        stats = plan.stats(dtype, k)
        info = plan.describe()
        between = info.get("inter_node_messages")  # strategies that know nodes
        rows.append(
            {
                "strategy": strategy,
                "setup_seconds": setup,
                "setup_cpu_seconds": setup_cpu,
                "execute_seconds": float(np.median(times)),
                "messages_per_rank": stats["messages"],
                "bytes_per_rank": stats["bytes"],
                "memory_bytes": stats["memory_bytes"],
                "agrees_with_first": agrees,
                "discovery_bytes": info["statistics"]["discovery_bytes"],
                "predicted_execute_seconds": info["strategies"]
                .get(info["strategy"], {})
                .get("predicted_execute_seconds"),
                "inter_node_messages": None if between is None else comm.allreduce(between),
            }
        )
        plan.free()
    auto = SparseReducePlan(
        comm, keys, strategy="auto", transport=config["transport"], dtype=dtype, k=k, model=model
    )
    described = auto.describe()
    auto.free()
    if rank == 0:
        run = {
            "generator": config["generator"],
            "params": config["params"],
            "ranks": size,
            "k": k,
            "dtype": dtype.name,
            "key_range": generator.key_range,
            "distinct_keys_per_rank": described["statistics"]["n_unique"],
            "partners_per_rank": described["statistics"]["partners"],
            "multiplicity": described["statistics"]["multiplicity"],
            "strategies": rows,
            "planner": {
                "choice": described["strategy"],
                "reason": described["reason"],
                "predicted": {
                    name: entry.get("predicted_execute_seconds")
                    for name, entry in described["strategies"].items()
                },
                "candidates": [
                    name for name, entry in described["strategies"].items() if entry["candidate"]
                ],
            },
        }
        if config.get("node_size"):
            from petacomm.xchg.offline import messages_between_nodes

            run["node_size"] = config["node_size"]
            run["counted_between_nodes"] = messages_between_nodes(
                generator.all_keys(), config["node_size"]
            )
        print(MARK + json.dumps(run), flush=True)
    return 0


RUN_HEADER = (
    f"{'strategy':<15} {'setup ms':>8} {'cpu ms':>7} {'exec us':>9} {'msgs':>5} {'bytes':>10} "
    f"{'mem KiB':>8} {'speedup':>7} {'pred us':>8}"
)


def _print_run(run: dict) -> None:
    per_rank = run["distinct_keys_per_rank"]
    title = (
        f"{run['generator']} on {run['ranks']} ranks: key range {run['key_range']} keys, "
        f"{per_rank['avg']:.0f} distinct keys per rank (max {per_rank['max']:.0f}), "
        f"partners per rank {run['partners_per_rank']['avg']:.1f}, "
        f"values {run['k']} x {run['dtype']}"
    )
    print("\n" + textwrap.fill(title, 100, subsequent_indent="  "))
    dense = next((r for r in run["strategies"] if r["strategy"] == "dense-allreduce"), None)
    predicted = run["planner"]["predicted"]
    print(RUN_HEADER)
    for row in run["strategies"]:
        speedup = dense["execute_seconds"] / row["execute_seconds"] if dense else float("nan")
        pred = predicted.get(row["strategy"])
        flag = "" if row["agrees_with_first"] else "  (results differ!)"
        print(
            f"{row['strategy']:<15} {row['setup_seconds'] * 1e3:8.2f} "
            f"{row['setup_cpu_seconds'] * 1e3:7.2f} "
            f"{row['execute_seconds'] * 1e6:9.1f} {row['messages_per_rank']['max']:5.0f} "
            f"{row['bytes_per_rank']['max']:10.0f} {row['memory_bytes']['max'] / 1024:8.1f} "
            f"{speedup:6.1f}x {pred * 1e6 if pred is not None else float('nan'):8.1f}{flag}"
        )
    if run.get("node_size"):
        counted = run["counted_between_nodes"]
        known = [r for r in run["strategies"] if r.get("inter_node_messages") is not None]
        print(f"messages between nodes per execution, all ranks (nodes of {run['node_size']}):")
        for row in known:
            print(f"  {row['strategy']}: {row['inter_node_messages']:.0f} (its plans)")
        print(f"  directory: {counted['ranks']} (counted from the keys: pairs of ranks on")
        print(f"  different nodes sharing a key); pairs of nodes sharing a key: {counted['nodes']}")
    reason = f"planner (auto) chose {run['planner']['choice']}: {run['planner']['reason']}"
    print(textwrap.fill(reason, 100, subsequent_indent="  "))
    print("(setup: wall and CPU time of plan creation, max over ranks; exec: median over")
    print(" repetitions of the max over ranks; msgs/bytes: sent per rank per execution, max over")
    print(" ranks, allreduce figures are Rabenseifner's; mem: plan memory per rank, max;")
    print(" speedup: exec time vs dense-allreduce; pred: the planner's predicted exec time)")


# ---- setup scaling -----------------------------------------------------------------------
def _setup_scaling(args, generators, strategies) -> list[dict]:
    counts = positive_int_list(args.setup_scaling, "--setup-scaling")
    # Nothing should spin on a shared core: Open MPI yields in its progress loop (the
    # library's own NBX loop always yields) and BLAS keeps no spinning worker threads.
    # Kept if the caller set them.
    env = dict(os.environ)
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    out = []
    for name in generators:
        runs = []
        for ranks in counts:
            config = {
                "mode": "setup",
                "generator": name,
                "params": _generator_params(args, name),
                "ranks": ranks,
                "strategies": strategies,
                "reps": args.setup_reps,
                "k": args.k,
                "dtype": args.dtype,
                "transport": args.transport,
                "model": args.model,
            }
            runs.append(_launch(args, name, ranks, config, env))
        entry = {"generator": name, "params": _generator_params(args, name), "runs": runs}
        entry["ratios"] = _setup_ratios(runs, strategies)
        out.append(entry)
        _print_setup_scaling(entry, strategies)
    return out


_SMPI_PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="c" prefix="node-" suffix="" radical="0-{last}" speed="1Gf" bw="10GBps"
             lat="1us" bb_bw="100GBps" bb_lat="0"/>
  </zone>
</platform>
"""


def registered_strategies() -> tuple[str, ...]:
    """Every strategy of the native registry (strategy_names without "auto")."""
    from petacomm.xchg import strategy_names

    return strategy_names()[1:]


def _setup_scaling_smpi(args, generators, strategies) -> list[dict]:
    """Setup time per strategy in SMPI's simulated time: one host per rank (1 us, 10 GB/s
    links), compute bursts timed on this machine at host speed = platform speed, so the
    simulated compute equals the measured one and ranks never share a core. The driver is
    native/src/xchg/bench/setup_bench.c, built in the SMPI tree."""
    import shutil

    import numpy as np

    from petacomm.datasets import make

    build = Path(args.smpi)
    library = build / "lib"
    driver = build / "bin" / "petacomm-xchg-setup-bench"
    if not (library / "libpetacomm.so").exists() or not (build / "CMakeCache.txt").exists():
        raise PetacommError(f"--smpi: no SMPI build of libpetacomm in {build}")
    if not driver.exists():
        raise PetacommError(
            f"--smpi: {driver} is missing (build the petacomm-xchg-setup-bench target there)"
        )
    smpirun = shutil.which("smpirun")
    if smpirun is None:
        raise PetacommError("--smpi: smpirun (SimGrid) is not on PATH")
    counts = positive_int_list(args.setup_scaling, "--setup-scaling")
    out = []
    with tempfile.TemporaryDirectory(prefix="petacomm-smpi-") as work:
        work = Path(work)
        platform = work / "platform.xml"
        platform.write_text(_SMPI_PLATFORM.format(last=max(counts) - 1))
        hosts = work / "hosts"
        hosts.write_text("".join(f"node-{i}\n" for i in range(max(counts))))
        for name in generators:
            params = _generator_params(args, name)
            runs = []
            for ranks in counts:
                generator = make(name, ranks, **params)
                for r in range(ranks):
                    keys = np.unique(generator.keys(r)).astype(np.int64)
                    keys.tofile(work / f"p{ranks}_r{r}.bin")
                done = subprocess.run(
                    [smpirun, "-np", str(ranks), "-platform", str(platform)]
                    + ["-hostfile", str(hosts), "--cfg=smpi/host-speed:1Gf"]
                    + ["--cfg=smpi/display-timing:no", str(driver), str(work)]
                    + [str(args.setup_reps)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                rows = [
                    json.loads(line[len("XCHGSMPI ") :])
                    for line in done.stdout.splitlines()
                    if line.startswith("XCHGSMPI ")
                ]
                if done.returncode != 0 or len(rows) != len(registered_strategies()):
                    raise PetacommError(
                        f"--smpi: {name} on {ranks} ranks failed (exit {done.returncode}):\n"
                        f"{(done.stderr or done.stdout).strip()[-2000:]}"
                    )
                runs.append({"ranks": ranks, "strategies": rows})
            entry = {"generator": name, "params": params, "runs": runs}
            first, last = runs[0]["strategies"], runs[-1]["strategies"]
            entry["ratios"] = {
                a["strategy"]: b["simulated_seconds"] / a["simulated_seconds"]
                for a, b in zip(first, last, strict=True)
            }
            out.append(entry)
            ps = [r["ranks"] for r in runs]
            print(f"\nsetup scaling in SMPI simulated time, {name} {params}")
            print(
                f"{'strategy':<16}"
                + "".join(f" {'p=' + str(p):>8}" for p in ps)
                + f" {str(ps[-1]) + '/' + str(ps[0]):>7}"
            )
            for strategy in strategies:
                cells = [
                    next(x for x in r["strategies"] if x["strategy"] == strategy) for r in runs
                ]
                print(
                    f"{strategy:<16}"
                    + "".join(f" {c['simulated_seconds'] * 1e3:8.2f}" for c in cells)
                    + f" {entry['ratios'][strategy]:6.2f}x"
                )
            print("(ms, median over builds of the max over ranks; one simulated host per rank)")
    return out


def _setup_worker(config: dict, comm, keys, generator, model) -> int:
    import numpy as np
    from mpi4py import MPI

    dtype, k = np.dtype(config["dtype"]), config["k"]
    rows = []
    for strategy in config["strategies"]:
        samples = []
        for _ in range(config["reps"] + 1):  # the first build warms caches and is dropped
            comm.Barrier()
            start = MPI.Wtime()
            plan = _build_plan(config, comm, keys, strategy, dtype, k, model)
            wall = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
            setup = plan.stats(dtype, k)["setup"]
            plan.free()
            samples.append(
                {
                    "wall_seconds": wall,
                    "compute_seconds": setup["compute_seconds"]["max"],
                    "compute_avg_seconds": setup["compute_seconds"]["avg"],
                    "mpi_seconds": setup["mpi_seconds"]["max"],
                }
            )
        samples = samples[1:]
        row = {"strategy": strategy, "samples": samples}
        for field in ("wall_seconds", "compute_seconds", "compute_avg_seconds", "mpi_seconds"):
            row[field] = float(np.median([s[field] for s in samples]))
        rows.append(row)
    unique = comm.allreduce(int(keys.size), op=MPI.MAX)
    if comm.rank == 0:
        run = {
            "generator": config["generator"],
            "params": config["params"],
            "ranks": comm.size,
            "key_range": generator.key_range,
            "distinct_keys_per_rank_max": unique,
            "strategies": rows,
        }
        print(MARK + json.dumps(run), flush=True)
    return 0


def _setup_ratios(runs: list[dict], strategies) -> dict:
    first, last = runs[0], runs[-1]
    ratios = {}
    for name in strategies:
        a = next(r for r in first["strategies"] if r["strategy"] == name)
        b = next(r for r in last["strategies"] if r["strategy"] == name)
        ratios[name] = {
            field: (b[field] / a[field] if a[field] > 0 else float("nan"))
            for field in ("compute_seconds", "wall_seconds")
        }
    return ratios


def _print_setup_scaling(entry: dict, strategies) -> None:
    runs = entry["runs"]
    p_first, p_last = runs[0]["ranks"], runs[-1]["ranks"]
    keys = ", ".join(str(r["distinct_keys_per_rank_max"]) for r in runs)
    print(
        f"\nsetup scaling, {entry['generator']} {entry['params']}: max distinct keys per rank "
        f"{keys} at {', '.join(str(r['ranks']) for r in runs)} ranks"
    )
    ps = [r["ranks"] for r in runs]
    ratio = f"{p_last}/{p_first}"
    header = f"{'strategy':<16}" + "".join(f" {'p=' + str(p):>8}" for p in ps) + f" {ratio:>7}"
    print(f"{'':<16} {'compute ms (max over ranks)':<{9 * len(ps) + 8}} | wall ms")
    print(header + " |" + "".join(f" {'p=' + str(p):>8}" for p in ps) + f" {ratio:>7}")
    for name in strategies:
        rows = [next(x for x in r["strategies"] if x["strategy"] == name) for r in runs]
        r = entry["ratios"][name]
        print(
            f"{name:<16}"
            + "".join(f" {x['compute_seconds'] * 1e3:8.2f}" for x in rows)
            + f" {r['compute_seconds']:6.2f}x |"
            + "".join(f" {x['wall_seconds'] * 1e3:8.2f}" for x in rows)
            + f" {r['wall_seconds']:6.2f}x"
        )
    print("(median over builds; compute: a rank's thread CPU time in plan creation outside the")
    print(" MPI calls that wait for other ranks, max over ranks; wall: plan creation, max over")
    print(" ranks, includes waiting for ranks that share a core)")


# ---- model only --------------------------------------------------------------------------
def _model_only(args, generators, elem_bytes: int) -> list[dict]:
    from petacomm.datasets import make
    from petacomm.progress import Progress
    from petacomm.xchg import offline
    from petacomm.xchg.cost import cost_params, p2p_curve

    model = _load_model(args.model)
    out = []
    for name in generators:
        for p in positive_int_list(args.model_only, "--model-only"):
            if p > MODEL_ONLY_RANKS:
                raise PetacommError(f"--model-only: at most {MODEL_ONLY_RANKS} ranks, got {p}")
            params = _generator_params(args, name)
            started = time.monotonic()
            generator = make(name, p, **params)
            node_size = args.node_size or 1  # node-aware priced for nodes of this size
            with Progress("bench sparse-reduce", quiet=args.quiet) as progress:
                progress.start(p, f"{name} key sets of {p} ranks")
                keysets = generator.all_keys()  # cmb: the scan in one pass, not rank by rank
                progress.advance(p)
                progress.status(f"{name} on {p} ranks: sharing statistics and predictions")
                try:
                    stats = offline.statistics(keysets, node_size=node_size)
                except ValueError as err:
                    raise PetacommError(f"--model-only {p}: {err}") from None
            predicted, decision = offline.decide(
                stats,
                cost_params(model, p),
                elem_bytes=elem_bytes,
                transport=args.transport,
                p2p=p2p_curve(model),
            )
            entry = {
                "generator": name,
                "params": params,
                "ranks": p,
                "node_size": node_size,
                "key_range": generator.key_range,
                "distinct_keys_per_rank_max": int(stats.field("n_unique").max()),
                "partners_per_rank_max": int(stats.field("pair_partners").max()),
                "predicted": predicted,
                "planner": {"choice": decision["choice"], "reason": decision["reason"]},
                "candidates": [c["name"] for c in decision["candidates"] if c["candidate"]],
                "seconds_to_compute": time.monotonic() - started,
                "peak_rss_bytes": _peak_rss_bytes(),
                "model": getattr(model, "source", "unknown"),
            }
            out.append(entry)
            _print_model(entry, elem_bytes)
    return out


def _peak_rss_bytes() -> int:
    """This process's peak resident memory so far (getrusage: KiB on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _print_model(entry: dict, elem_bytes: int) -> None:
    predicted = entry["predicted"]
    dense = predicted["dense-allreduce"]["execute_seconds"]
    title = (
        f"{entry['generator']} on {entry['ranks']} ranks (predicted, {elem_bytes} B per key, "
        f"model: {entry['model']}, nodes of {entry['node_size']} ranks): key range "
        f"{entry['key_range']} keys, max distinct keys per "
        f"rank {entry['distinct_keys_per_rank_max']}, max partners {entry['partners_per_rank_max']}"
    )
    print("\n" + textwrap.fill(title, 100, subsequent_indent="  "))
    print(
        f"{'strategy':<16} {'execute us':>11} {'setup ms':>9} {'msgs/rank':>10} "
        f"{'bytes/rank':>12} {'speedup':>8}"
    )
    for name, p in predicted.items():
        extra = (
            f"  (threshold {p['hub_threshold']}, {p['hub_keys']} hubs)" if "hub_keys" in p else ""
        )
        print(
            f"{name:<16} {p['execute_seconds'] * 1e6:11.1f} {p['setup_seconds'] * 1e3:9.2f} "
            f"{p['messages']:10.0f} {p['bytes']:12.0f} {dense / p['execute_seconds']:7.1f}x{extra}"
        )
    planner = entry["planner"]
    print(f"best predicted: {planner['choice']}")
    print(f"  (auto's candidates: {', '.join(entry['candidates'])})")
    print(textwrap.fill(planner["reason"], 100, initial_indent="  ", subsequent_indent="  "))
    print(
        f"computed in {entry['seconds_to_compute']:.1f} s (keys generated, statistics, "
        f"prediction); peak RSS of the command {entry['peak_rss_bytes'] / 2**20:.0f} MiB"
    )
    print("(execute: predicted time of one execution, max over ranks; setup: plan creation;")
    print(" msgs/bytes: sent per rank per execution; speedup: execute time vs dense-allreduce)")


def _write_json(path: Path, results: dict) -> None:
    write_text_atomically(path, json.dumps(results, indent=1), "--json")
