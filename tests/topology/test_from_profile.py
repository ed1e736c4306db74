"""Mapping what the profiler measured: a profiled mpi4py program's communication matrix
becomes the pattern that `petacomm map --from-profile` places."""

import json
import re
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


def _profile_log(peer_rows, ranks=3) -> dict:
    """A minimal complete profile log (schema petacomm.profile v1) with these partner
    records: (rank, call, peer, count, bytes)."""
    calls = ["MPI_Send", "MPI_Allreduce"]
    return {
        "schema": "petacomm.profile",
        "schema_version": 1,
        "complete": True,
        "command": ["./app"],
        "ranks": ranks,
        "wall_ns": 1000,
        "calls": calls,
        "call_kinds": ["send", "collective"],
        "rank_summary": {
            "columns": ["rank", "host", "wall_ns", "mpi_ns", "io_ns", "rss_kib"],
            "rows": [[r, "h", 1000, 10, 0, 1] for r in range(ranks)],
        },
        "region_summary": {
            "columns": ["rank", "region", "parent", "entries", "wall_ns", "mpi_ns", "io_ns"],
            "rows": [],
        },
        "call_summary": {
            "columns": ["region", "call", "size", "size_max", "count", "bytes", "time_ns"],
            "rows": [],
        },
        "peer_summary": {
            "columns": ["rank", "call", "peer", "count", "bytes", "time_ns"],
            "rows": [[r, calls.index(c), p, n, b, 1] for r, c, p, n, b in peer_rows],
        },
    }


def test_bytes_without_a_known_partner_are_reported(tmp_path, capsys):
    from petacomm.cli import main

    log = tmp_path / "run.json"
    rows = [
        (0, "MPI_Send", 1, 2, 600),
        (1, "MPI_Send", 2, 1, 300),
        (2, "MPI_Send", -4, 5, 200),  # coarsened: the call table was full
        (1, "MPI_Send", -5, 1, 100),  # partner outside MPI_COMM_WORLD
        (0, "MPI_Send", -2, 1, 50),  # MPI_PROC_NULL: no traffic at all
        (0, "MPI_Allreduce", -1, 3, 999),  # collectives have no partner
    ]
    log.write_text(json.dumps(_profile_log(rows)))
    pattern = read_profile_log(log)
    matrix = pattern.matrix()
    assert matrix[0, 1] == 600 and matrix[1, 2] == 300 and matrix.sum() == 900
    # 300 of the 1200 point-to-point bytes with a partner code cannot be placed: 25.0 %.
    (note,) = pattern.notes
    assert note.startswith("25.0 % of the profile's point-to-point bytes (300 B of 1.17 KiB)")
    assert "200 B coarsened" in note and "100 B partner outside MPI_COMM_WORLD" in note
    argv = ["map", "--network", "torus:3", "--from-profile", str(log), "--candidates", "TX"]
    assert main(argv) == 0
    assert f"note: {note}" in capsys.readouterr().out.splitlines()
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == [note]
    # Nothing left out: no note.
    log.write_text(json.dumps(_profile_log(rows[:2])))
    assert read_profile_log(log).notes == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # A rank of -1 was credited to the last rank; a partner past the last rank was
        # dropped without a note; negative bytes were subtracted.
        (lambda log: log["peer_summary"]["rows"][0].__setitem__(0, -1), "row 0: rank -1"),
        (lambda log: log["peer_summary"]["rows"][0].__setitem__(2, 3), "row 0: peer 3"),
        (lambda log: log["peer_summary"]["rows"][1].__setitem__(4, -300), "row 1: bytes -300"),
        (lambda log: log["peer_summary"]["rows"][1].__setitem__(4, "300"), "row 1: bytes '300'"),
        (lambda log: log["rank_summary"]["rows"][2].__setitem__(2, 1.5), "row 2: wall_ns 1.5"),
        (lambda log: log["rank_summary"]["rows"][1].__setitem__(1, 7), "row 1: host 7 is not"),
        # Calls past a short call_kinds were taken for "misc" and their bytes left out.
        (lambda log: log.__setitem__("call_kinds", ["send"]), "call_kinds has 1 entries for 2"),
    ],
)
def test_log_values_the_matrix_cannot_place_are_refused(tmp_path, change, message):
    log = tmp_path / "run.json"
    data = _profile_log([(0, "MPI_Send", 1, 2, 600), (1, "MPI_Send", 2, 1, 300)])
    log.write_text(json.dumps(data))
    assert read_profile_log(log).matrix().sum() == 900  # the unchanged log reads
    change(data)
    log.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=re.escape(message)):
        read_profile_log(log)


def test_a_log_without_partner_bytes_is_refused(tmp_path):
    log = tmp_path / "run.json"
    log.write_text(json.dumps(_profile_log([(0, "MPI_Allreduce", -1, 3, 999)])))
    with pytest.raises(ValueError, match="holds no point-to-point or one-sided bytes"):
        read_profile_log(log)


def test_partial_logs_say_which_ranks_the_matrix_lacks(tmp_path, monkeypatch):
    from petacomm.profile import log as profile_log

    path = tmp_path / "run.json"
    path.write_text(json.dumps(_profile_log([(0, "MPI_Send", 1, 2, 600)])))
    real = profile_log.load

    def partial(where):  # the same log, as partial logs with rank 2's file unreadable
        profile = real(where)
        profile.complete, profile.missing_ranks = False, [2]
        profile.notes = ["skipped rank-2.live: truncated"]
        return profile

    monkeypatch.setattr(profile_log, "load", partial)
    assert read_profile_log(path).notes == [
        "partial logs: no log from ranks 2 (1 of 3): their sends are not in the matrix",
        "partial logs: skipped rank-2.live: truncated",
    ]
