"""Fortran (mpif.h / `use mpi`, Debian's Open MPI) and Python (mpi4py) programs: every call
counted exactly once, regions from both languages."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from expected import fortran_pattern

from conftest import DEBIAN_MPICC, DEBIAN_MPIEXEC, DEBIAN_MPIF90, compile_program, petacomm
from petacomm.profile import analysis, callsites, load
from prerequisites import require

pytestmark = pytest.mark.mpi
HERE = Path(__file__).parent


def calls_by_region(profile) -> dict:
    out = {}
    for row in profile.call_rows:
        if profile.kind(row["call"]) == "posix":
            continue
        key = (row["region"], row["call"], row["size"])
        c, b = out.get(key, (0, 0))
        out[key] = (c + row["count"], b + row["bytes"])
    return out


def check_fortran_profile(profile, ranks: int) -> None:
    """The profile of fortran_pattern.f90 at RANKS ranks is exactly the expected one."""
    want_calls, want_peers = fortran_pattern(ranks)
    assert calls_by_region(profile) == want_calls
    peers = analysis.peer_totals(profile)
    for key, value in want_peers.items():
        assert peers[key] == value, key


# The same communication through `use mpi` and through `use mpi_f08` (other symbols:
# mpi_send_f08_, ierror optional).
FORTRAN_SOURCES = ["fortran_pattern.f90", "fortran_pattern_f08.f90"]


F08_SOURCE = HERE / "programs" / "fortran_pattern_f08.f90"


def check_call_sites_are_source_lines(
    profile,
    source: Path,
    calls=frozenset({"MPI_Send", "MPI_Recv", "MPI_Allreduce", "MPI_Irecv"}),
) -> None:
    """Every recorded call's one-frame site is a line of SOURCE that makes that call (the
    reference: the source's `call MPI_X(` lines; a large-count MPI_X_c is made by a
    `call MPI_X(` with MPI_COUNT_KIND counts), and CALLS are among the sites."""
    lines: dict[str, set[int]] = {}
    for number, text in enumerate(source.read_text().splitlines(), start=1):
        for name in re.findall(r"\bcall (MPI_\w+)\(", text, flags=re.IGNORECASE):
            lines.setdefault(name.upper(), set()).add(number)
    sites = callsites.sites(profile)
    assert {s.call for s in sites} >= set(calls)
    for site in sites:
        (frame,) = site.frames
        assert Path(frame.file).name == source.name, (site.call, frame)
        name = site.call.upper().removesuffix("_C")
        assert frame.line in lines[name], (site.call, frame.line)


@pytest.fixture(scope="module", params=FORTRAN_SOURCES)
def fortran_program(request, tmp_path_factory) -> Path:
    require(
        DEBIAN_MPIF90.exists() and shutil.which("gfortran"),
        "gfortran / Debian's mpif90 not installed (apt-get install gfortran)",
    )
    source = HERE / "programs" / request.param
    out = tmp_path_factory.mktemp("fortran") / source.stem
    return compile_program(DEBIAN_MPIF90, source, out, "-O1")


@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_fortran_calls_counted_exactly_once(ranks, fortran_program, debian_profiler, tmp_path):
    log = tmp_path / "fortran.json"
    done = petacomm(
        "profile", "-o", str(log), "--no-banner", "--",
        str(DEBIAN_MPIEXEC), "-n", str(ranks), "--oversubscribe", str(fortran_program),
        env=debian_profiler,
    )  # fmt: skip
    check_fortran_profile(load(log), ranks)
    assert f"{fortran_program.name}: ranks {ranks} failures 0" in done.stdout


def test_fortran_f08_call_sites(debian_profiler, tmp_path):
    """`use mpi_f08` calls are attributed to the program's lines (-g -O0)."""
    require(
        DEBIAN_MPIF90.exists() and shutil.which("gfortran"),
        "gfortran / Debian's mpif90 not installed (apt-get install gfortran)",
    )
    program = compile_program(DEBIAN_MPIF90, F08_SOURCE, tmp_path / "f08", "-g", "-O0")
    log = tmp_path / "sites.json"
    petacomm(
        "profile", "-o", str(log), "--no-banner", "--callsites", "1", "--",
        str(DEBIAN_MPIEXEC), "-n", "2", "--oversubscribe", str(program),
        env=debian_profiler,
    )  # fmt: skip
    check_call_sites_are_source_lines(load(log), F08_SOURCE)


def test_fortran_program_needs_a_matching_profiler(fortran_program, tmp_path):
    """Without a profiler for Debian's MPI, `profile` says which one to build."""
    done = petacomm(
        "profile", "-o", str(tmp_path / "x.json"), "--",
        str(DEBIAN_MPIEXEC), "-n", "1", str(fortran_program),
        env={"PETACOMM_PROF_CACHE": str(tmp_path / "empty-cache")}, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"petacomm profiler build --mpicc {DEBIAN_MPICC}\n" in done.stderr
    assert "Open MPI" in done.stderr and "libmpi" in done.stderr


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_mpi4py_program_with_regions(ranks, tmp_path):
    from conftest import mpiexec

    log = tmp_path / "python.json"
    program = [sys.executable, str(HERE / "programs" / "python_pattern.py")]
    petacomm("profile", "-o", str(log), "--no-banner", "--", *mpiexec(ranks), *program)
    profile = load(log)
    p = ranks
    got = calls_by_region(profile)
    assert got == {
        ("py_ring", "MPI_Sendrecv", 400): (3 * p, 1200 * p),
        ("py_collectives", "MPI_Allreduce", 32): (2 * p, 64 * p),
        ("py_collectives", "MPI_Bcast", 12): (2 * p, 24 * p),
        ("(program)", "MPI_Irecv", 16): (p, 16 * p),
        ("(program)", "MPI_Isend", 16): (p, 16 * p),
        ("(program)", "MPI_Waitall", 0): (p, 0),
    }
    regions = {r.name: r for r in analysis.regions(profile)}
    assert set(regions) == {"(program)", "py_ring", "py_collectives"}
    assert regions["py_collectives"].entries == 2 * p
    peers = analysis.peer_totals(profile)
    for r in range(p):
        assert peers[(r, "MPI_Irecv", (r - 1) % p)] == (1, 16)
        assert peers[(r, "MPI_Sendrecv", (r + 1) % p)] == (3, 1200)


def test_region_is_a_no_op_without_mpi():
    from petacomm.profile import region

    with region("nothing"):
        pass

    @region("decorated")
    def f(x):
        return x + 1

    assert f(1) == 2
    with pytest.raises(ValueError, match="region name"):
        region("")
