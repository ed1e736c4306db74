"""Runs programs under mpiexec for the tests and collects every rank's output.

The harness (and only the harness: never the library) sets Open MPI's run-as-root
variables, and oversubscribes so that 7 or 8 ranks run on a 2-core machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

from petacomm.launch import find_mpiexec, split_rank_output

# Rank counts every multi-rank feature is tested at: one, odd, and non-powers of two.
RANK_COUNTS = (1, 2, 3, 4, 7, 8)


def mpi_test_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    # Oversubscription through the environment also covers programs started by our CLI.
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
    env.update(extra or {})
    return env


@dataclass
class MpiResult:
    returncode: int
    stdout: str
    stderr: str
    argv: list[str]
    by_rank: dict[int, list[str]] = field(default_factory=dict)

    def rank_lines(self, rank: int) -> list[str]:
        return self.by_rank.get(rank, [])


def mpiexec_argv(ranks: int) -> list[str]:
    """``mpiexec -n RANKS`` (oversubscribed with Open MPI), for a program to follow."""
    launcher = find_mpiexec()
    extra = ["--oversubscribe"] if launcher.vendor == "openmpi" else []
    return [str(launcher.path), "-n", str(ranks), *extra]


def mpirun(
    ranks: int,
    program: list[str],
    *,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    check: bool = True,
    tag_output: bool = True,
) -> MpiResult:
    """Runs ``program`` on ``ranks`` ranks; raises AssertionError with all output on failure."""
    argv = mpiexec_argv(ranks)
    if tag_output:
        argv += find_mpiexec().tag_output_flags()
    argv += program
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=mpi_test_env(env), check=False
    )
    by_rank = split_rank_output(done.stdout + "\n" + done.stderr) if tag_output else {}
    result = MpiResult(done.returncode, done.stdout, done.stderr, argv, by_rank)
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} exited {done.returncode}\n--- stdout\n{done.stdout}"
            f"\n--- stderr\n{done.stderr}"
        )
    return result


def mpirun_python(ranks: int, script: str, *args: str, **kwargs) -> MpiResult:
    """Runs a Python script (a path) with this interpreter on ``ranks`` ranks."""
    return mpirun(ranks, [sys.executable, script, *args], **kwargs)
