"""Real third-party MPI applications from Debian, unmodified, under the profiler: NetPIPE
(package netpipe-openmpi, /usr/bin/NPopenmpi), HPCC (package hpcc, /usr/bin/hpcc), LAMMPS
(package lammps, /usr/bin/lmp) and Quantum ESPRESSO (package quantum-espresso, Fortran:
/usr/bin/pw.x), all built against Debian's Open MPI.

NetPIPE prints every message size it measures and how many round trips it timed at that size
("N bytes  R times"); each printed point is the best of TRIALS = 3 trials (netpipe.h), so per
size each of the 2 ranks sends and receives 3 R messages. The profile must say exactly that.
Sizes 1 and 4 are skipped: NetPIPE's own synchronisation messages have those sizes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import DEBIAN_MPICC, DEBIAN_MPIEXEC, petacomm
from mpi_harness import mpi_test_env
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


def counted_under_plain_counter(tmp_path, launch, program) -> tuple[dict, dict]:
    """Runs ``launch + program`` with the plain PMPI counter (programs/pmpi_call_counter.c,
    written apart from the profiler) preloaded; returns its calls and its send bytes, each
    {rank: Counter}."""
    counter = tmp_path / "libcount.so"
    source = Path(__file__).parent / "programs" / "pmpi_call_counter.c"
    subprocess.run(
        [str(DEBIAN_MPICC), "-shared", "-fPIC", "-O2", str(source), "-o", str(counter),
         "-lmpi_mpifh"],
        check=True,
    )  # fmt: skip
    done = subprocess.run(
        [*launch, "-x", f"LD_PRELOAD={counter}", *program],
        cwd=tmp_path, env=mpi_test_env(), capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    calls, sent = {}, {}
    for line in done.stderr.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("COUNT", "BYTES"):
            rank, pairs = int(words[1]), words[2:]
            into = (calls if words[0] == "COUNT" else sent).setdefault(rank, Counter())
            into.update({pairs[i]: int(pairs[i + 1]) for i in range(0, len(pairs), 2)})
    assert calls, done.stderr[-2000:]
    return calls, sent


def counted_under_profiler(tmp_path, launch, program, env, ranks=4):
    """Runs ``launch + program`` under ``petacomm profile --detail full``; returns the
    command's result and, from its log, each rank's calls and bytes, each {rank: Counter}."""
    log = tmp_path / "profile.json"
    done = petacomm(
        "profile", "-o", str(log), "--no-banner", "--detail", "full", "--", *launch, *program,
        env=env, timeout=600,
    )  # fmt: skip
    profile = load(log)
    assert profile.complete and profile.ranks == ranks
    calls = {rank: Counter() for rank in range(ranks)}
    nbytes = {rank: Counter() for rank in range(ranks)}
    for entry in profile.entry_rows:
        calls[entry["rank"]][entry["call"]] += entry["count"]
        nbytes[entry["rank"]][entry["call"]] += entry["bytes"]
    return done, calls, nbytes


def test_hpcc_call_counts_equal_a_plain_pmpi_counter(debian_profiler, tmp_path):
    """HPCC (its Debian example input, 4 ranks) run once under a plain PMPI counter written
    apart from the profiler and once under the profiler: every counted call, summed over
    ranks, the same. (Which rank does which part of HPCC's tests changes from run to run, so
    totals, not per-rank figures, are compared.) The profiler used to count 24,919 MPI_Isend
    calls here where the counter, IPM and mpiP count 18,935: Open MPI recycles the request
    objects of sends that complete at once."""
    hpcc = require_program("hpcc", "HPCC: apt-get install hpcc")
    shutil.copy("/usr/share/doc/hpcc/examples/_hpccinf.txt", tmp_path / "hpccinf.txt")
    launch = [str(DEBIAN_MPIEXEC), "-n", "4", "--oversubscribe", "--wdir", str(tmp_path)]
    calls, _ = counted_under_plain_counter(tmp_path, launch, [hpcc])
    reference = Counter()  # update, not +, keeps the calls counted 0 times (checked too)
    for per_rank in calls.values():
        reference.update(per_rank)
    assert reference["MPI_Isend"] > 10000, reference
    _, profiled, _ = counted_under_profiler(tmp_path, launch, [hpcc], debian_profiler)
    total = Counter()
    for per_rank in profiled.values():
        total.update(per_rank)
    # HPCC's MPI_Send/MPI_Recv totals change between runs even without any profiler (3,719
    # and 3,724 in two runs under the counter alone): they are left out; every other counted
    # call is the same in every run.
    varying = ("MPI_Send", "MPI_Recv")
    counted = {c: n for c, n in total.items() if c in reference and c not in varying}
    assert counted == {c: n for c, n in reference.items() if n and c not in varying}


# A Lennard-Jones melt (LAMMPS's classic benchmark), 4,000 atoms for 100 steps: ghost-atom
# exchanges with MPI_Irecv/MPI_Send/MPI_Wait whose sizes follow the atoms, thermo reductions.
LAMMPS_MELT = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 10 0 10 0 10
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 50
run 100
"""


def test_lammps_calls_and_bytes_equal_a_plain_pmpi_counter(debian_profiler, tmp_path):
    """LAMMPS (C++, 4 ranks) under the plain PMPI counter and under the profiler: the same
    calls and the same bytes sent on every rank (its decomposition and velocities are fixed,
    so a rank does the same work in every run; 2026-11-27: 820 MPI_Send per rank, 12.47-12.49
    MB)."""
    lmp = require_program("lmp", "LAMMPS: apt-get install lammps")
    (tmp_path / "in.melt").write_text(LAMMPS_MELT)
    launch = [str(DEBIAN_MPIEXEC), "-n", "4", "--oversubscribe", "--wdir", str(tmp_path)]
    program = [lmp, "-in", "in.melt", "-log", "none"]
    calls, sent = counted_under_plain_counter(tmp_path, launch, program)
    assert calls[0]["MPI_Send"] > 500 and sent[0]["MPI_Send"] > 1_000_000, (calls, sent)
    _, profiled, nbytes = counted_under_profiler(tmp_path, launch, program, debian_profiler)
    for rank in range(4):
        counted = Counter({c: n for c, n in profiled[rank].items() if c in calls[rank]})
        assert counted == +calls[rank], rank
        bytes_sent = Counter({c: nbytes[rank][c] for c in ("MPI_Send", "MPI_Isend")})
        assert bytes_sent == +sent[rank], rank


# Silicon, two atoms, LDA: a norm-conserving pseudopotential made by QE's own atomic code
# (ld1.x; Debian ships no pseudopotentials), then five SCF iterations of pw.x.
QE_PSEUDO = """&input
   title='Si', zed=14., rel=0, config='[Ne] 3s2 3p2', iswitch=3, dft='PZ'
/
&inputp
   pseudotype=1, file_pseudopw='Si.pz-tm.UPF', author='petacomm-test', lloc=-1,
   rcloc=2.2, tm=.true.
/
2
3S  1  0  2.00  0.00  2.00  2.00  0.0
3P  2  1  2.00  0.00  2.20  2.20  0.0
"""
QE_SCF = """&control
   calculation='scf', prefix='si', pseudo_dir='./', outdir='./tmp'
/
&system
   ibrav=2, celldm(1)=10.2, nat=2, ntyp=1, ecutwfc=16.0
/
&electrons
   conv_thr=1.0d-8
/
ATOMIC_SPECIES
 Si 28.086 Si.pz-tm.UPF
ATOMIC_POSITIONS alat
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS automatic
 4 4 4 1 1 1
"""


def test_quantum_espresso_fortran_collectives_equal_a_plain_counter(debian_profiler, tmp_path):
    """Quantum ESPRESSO's pw.x (Fortran, `mpif.h` bindings, which call PMPI_* directly in
    Open MPI) on 4 ranks, under the plain counter (it wraps the Fortran bindings of
    MPI_Barrier, MPI_Bcast, MPI_Allreduce and MPI_Alltoall too) and under the profiler: those
    four calls, C and Fortran together, the same on every rank (2026-11-27: 3,925 barriers,
    5,925-8,775 broadcasts, 3,086 allreduces, 1,807 all-to-alls per rank)."""
    ld1 = require_program("ld1.x", "Quantum ESPRESSO: apt-get install quantum-espresso")
    pw = require_program("pw.x", "Quantum ESPRESSO: apt-get install quantum-espresso")
    subprocess.run([ld1], input=QE_PSEUDO, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert (tmp_path / "Si.pz-tm.UPF").exists()
    (tmp_path / "si.scf.in").write_text(QE_SCF)
    launch = [str(DEBIAN_MPIEXEC), "-n", "4", "--oversubscribe", "--wdir", str(tmp_path)]
    program = [pw, "-in", "si.scf.in"]
    calls, _ = counted_under_plain_counter(tmp_path, launch, program)
    both = ("MPI_Barrier", "MPI_Bcast", "MPI_Allreduce", "MPI_Alltoall")
    assert all(calls[rank][call] > 1000 for rank in range(4) for call in both), calls
    done, profiled, _ = counted_under_profiler(tmp_path, launch, program, debian_profiler)
    assert "convergence has been achieved" in done.stdout
    for rank in range(4):
        counted = Counter({call: profiled[rank][call] for call in both})
        assert counted == Counter({call: calls[rank][call] for call in both}), rank
