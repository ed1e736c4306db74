"""Mapping what the profiler measured: a profiled mpi4py program's communication matrix
becomes the pattern that `petacomm map --from-profile` places."""

import json
import subprocess
import sys
import textwrap

import pytest

from mpi_harness import mpi_test_env, mpiexec_argv
from petacomm.topology.measured import read_profile_log

# Rank r sends 1000*(r+1) bytes to r+1 and 10 bytes to r+2 (mod p): a known matrix.
PROGRAM = textwrap.dedent(
    """
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    r, p = comm.rank, comm.size
    for shift, size in ((1, 1000 * (r + 1)), (2, 10)):
        dst, src = (r + shift) % p, (r - shift) % p
        incoming = 1000 * (src + 1) if shift == 1 else 10
        comm.Sendrecv(np.zeros(size, np.uint8), dst, recvbuf=np.zeros(incoming, np.uint8),
                      source=src)
    """
)


@pytest.mark.mpi
def test_profiled_program_maps(tmp_path):
    ranks = 4
    script = tmp_path / "pattern.py"
    script.write_text(PROGRAM)
    log = tmp_path / "run.json"
    mpiexec = mpiexec_argv(ranks)
    petacomm = [sys.executable, "-m", "petacomm.cli"]
    done = subprocess.run(
        [
            *petacomm,
            "profile",
            "-o",
            str(log),
            "--no-banner",
            "--",
            *mpiexec,
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    matrix = read_profile_log(log).matrix()
    expected = {(r, (r + 1) % ranks): 1000 * (r + 1) for r in range(ranks)}
    expected.update({(r, (r + 2) % ranks): 10 for r in range(ranks)})
    assert {(int(i), int(j)): matrix[i, j] for i, j in zip(*matrix.nonzero(), strict=True)} == (
        expected
    )

    mapped = subprocess.run(
        [
            *petacomm,
            "map",
            "--network",
            "torus:2x2",
            "--cores-per-node",
            "1",
            "--from-profile",
            str(log),
            "--candidates",
            "all",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert mapped.returncode == 0, mapped.stderr
    ranking = json.loads(mapped.stdout)
    assert ranking["nranks"] == ranks and ranking["pattern"].startswith("profile ")
