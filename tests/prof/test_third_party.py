"""A real third-party MPI application from Debian, unmodified: NetPIPE (package
netpipe-openmpi, /usr/bin/NPopenmpi, built against Debian's Open MPI).

NetPIPE prints every message size it measures and how many round trips it timed at that size
("N bytes  R times"); each printed point is the best of TRIALS = 3 trials (netpipe.h), so per
size each of the 2 ranks sends and receives 3 R messages. The profile must say exactly that.
Sizes 1 and 4 are skipped: NetPIPE's own synchronisation messages have those sizes.
"""

from __future__ import annotations

import re

import pytest

from conftest import DEBIAN_MPIEXEC, petacomm
from petacomm.profile import analysis, load
from prerequisites import require_program

pytestmark = pytest.mark.mpi
TRIALS = 3
PATTERN = r"^\s*\d+:\s+(\d+) bytes\s+(\d+) times"


def test_netpipe_profile_matches_its_own_report(debian_profiler, tmp_path):
    netpipe = require_program("NPopenmpi", "NetPIPE: apt-get install netpipe-openmpi")
    log, out = tmp_path / "netpipe.json", tmp_path / "np.out"
    done = petacomm(
        "profile", "-o", str(log), "--no-banner", "--",
        str(DEBIAN_MPIEXEC), "-n", "2", "--oversubscribe",
        netpipe, "-u", "4096", "-n", "25", "-p", "0", "-o", str(out),
        env=debian_profiler, timeout=300,
    )  # fmt: skip
    points = {
        int(m.group(1)): int(m.group(2))
        for m in re.finditer(PATTERN, done.stdout + done.stderr, re.MULTILINE)
    }
    assert len(points) > 10, done.stdout
    profile = load(log)
    assert profile.ranks == 2
    for call in ("MPI_Send", "MPI_Recv"):
        by_size = {b.size: (b.count, b.bytes) for b in analysis.sizes(profile, call)}
        for size, repeats in points.items():
            if size in (1, 4):
                continue
            messages = 2 * TRIALS * repeats
            assert by_size.get(size) == (messages, messages * size), (call, size)
    # Ping-pong: each rank sends to the other only.
    peers = analysis.peer_totals(profile)
    assert {k[2] for k in peers if k[0] == 0 and k[1] == "MPI_Send"} == {1}
    assert {k[2] for k in peers if k[0] == 1 and k[1] == "MPI_Send"} == {0}
