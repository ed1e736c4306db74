"""How often every rank's data survives a job that dies: a measurement, not a test.

    python tests/prof/survival.py [--ranks 4] [--runs 5] [--profiler-lib LIB]

Runs native/tests/prof/prof_abort (from the build tree tests use) under the profiler, killed
each way: MPI_Abort on rank 0, SIGTERM to mpiexec while the ranks wait in MPI_Recv, a
segmentation fault on rank 1; then counts the ranks whose partial data holds the 3
MPI_Allreduce every rank made. Prints one line per run and a summary with units (ranks).
The figures of docs/profiler.md ("Runs that never reach MPI_Finalize") come from it.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # mpi_harness
sys.path.insert(0, str(Path(__file__).resolve().parent))  # conftest

from conftest import native_build_tree  # noqa: E402
from mpi_harness import mpi_test_env, mpiexec_argv  # noqa: E402


def survivors(log: Path, ranks: int) -> int:
    from petacomm.errors import PetacommError
    from petacomm.profile import load

    try:
        profile = load(log)
    except PetacommError:
        return 0
    done = dict.fromkeys(range(ranks), 0)
    for e in profile.entry_rows or []:
        if e["call"] == "MPI_Allreduce":
            done[e["rank"]] += e["count"]
    return sum(n == 3 for n in done.values())


def one_run(program: Path, lib: Path, log: Path, ranks: int, kind: str) -> int:
    env = {"LD_PRELOAD": str(lib), "PETACOMM_PROF_OUTPUT": str(log), "PETACOMM_PROF_BANNER": "0"}
    argv = [*mpiexec_argv(ranks), "-x", "LD_PRELOAD", "-x", "PETACOMM_PROF_OUTPUT"]
    argv += ["-x", "PETACOMM_PROF_BANNER", str(program), "hang" if kind == "sigterm" else kind]
    child = subprocess.Popen(
        argv, env=mpi_test_env(env), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    if kind == "sigterm":
        waiting = 0
        while waiting < ranks:
            line = child.stdout.readline()
            if not line:
                break
            waiting += "waiting" in line
        child.send_signal(signal.SIGTERM)
    child.communicate(timeout=300)
    return survivors(log, ranks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4, help="MPI ranks [4]")
    parser.add_argument("--runs", type=int, default=5, help="runs per kind of death [5]")
    parser.add_argument("--profiler-lib", type=Path, help="profiler to measure [the build's]")
    args = parser.parse_args()
    tree = native_build_tree()
    if tree is None:
        parser.error("no build tree with prof_abort: run scripts/setup.sh")
    lib = args.profiler_lib or tree / "lib" / "libpetacomm-prof.so"
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("abort", "sigterm", "segv"):
            counts = []
            for i in range(args.runs):
                log = Path(tmp) / f"{kind}{i}.json"
                counts.append(one_run(tree / "bin" / "prof_abort", lib, log, args.ranks, kind))
                print(f"{kind} run {i}: {counts[-1]} of {args.ranks} ranks kept their data")
            totals[kind] = counts
    for kind, counts in totals.items():
        whole = sum(c == args.ranks for c in counts)
        print(
            f"{kind}: {sum(counts)} of {args.ranks * len(counts)} ranks; every rank in {whole} of "
            f"{len(counts)} runs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
