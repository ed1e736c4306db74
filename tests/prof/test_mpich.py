"""The profiler with MPICH (Debian's libmpich-dev/mpich, MPICH 4): a profiler built by
`petacomm profiler build --mpicc /usr/bin/mpicc.mpich`, programs built with MPICH's compiler
wrappers and run by `petacomm profile -- mpiexec.mpich ...` (Hydra: the profiler reaches the
ranks through -genv) leave exactly the profiles they leave with Open MPI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from expected import fortran_large_count, pattern
from test_exact_counts import call_table, peer_table
from test_languages import (
    F08_SOURCE,
    FORTRAN_SOURCES,
    calls_by_region,
    check_call_sites_are_source_lines,
    check_fortran_profile,
)

from conftest import (
    MPICH_MPICC,
    MPICH_MPIEXEC,
    MPICH_MPIF90,
    ROOT,
    compile_program,
    need_mpich,
    petacomm,
)
from petacomm.profile import analysis, load
from prerequisites import require

pytestmark = pytest.mark.mpi
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def mpich_pattern(tmp_path_factory) -> Path:
    """native/tests/prof/prof_pattern.c built with MPICH's mpicc."""
    need_mpich()
    out = tmp_path_factory.mktemp("mpich") / "prof_pattern"
    source = ROOT / "native" / "tests" / "prof" / "prof_pattern.c"
    return compile_program(MPICH_MPICC, source, out, "-O1")


@pytest.fixture(scope="module", params=FORTRAN_SOURCES)
def mpich_fortran(request, tmp_path_factory) -> Path:
    """tests/prof/programs/fortran_pattern*.f90 built with MPICH's mpif90 (`use mpi` and
    `use mpi_f08`: MPICH's f08 bindings without a buffer have the names Open MPI's have, and
    its MPI_STATUSES_IGNORE is an object of its own)."""
    need_mpich()
    require(
        MPICH_MPIF90.exists() and shutil.which("gfortran"),
        f"{MPICH_MPIF90} or gfortran missing (apt-get install gfortran mpich)",
    )
    source = HERE / "programs" / request.param
    out = tmp_path_factory.mktemp("mpich") / source.stem
    return compile_program(MPICH_MPIF90, source, out, "-O1")


def profile_mpich(log: Path, ranks: int, program: Path, env: dict, *options: str):
    return petacomm(
        "profile", "-o", str(log), "--no-banner", *options, "--",
        str(MPICH_MPIEXEC), "-n", str(ranks), str(program),
        env=env, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_c_pattern_exact_with_mpich(ranks, mpich_pattern, mpich_profiler, tmp_path):
    """Counts and bytes per call, per partner and per region: the same as with Open MPI."""
    log = tmp_path / "pattern.json"
    done = profile_mpich(log, ranks, mpich_pattern, mpich_profiler, "--detail", "full")
    assert f"prof_pattern: {ranks} ranks, 0 failures" in done.stdout
    profile = load(log)
    assert profile.complete and profile.ranks == ranks
    assert profile.mpi_library.startswith("MPICH"), profile.mpi_library  # its profiler ran
    want_calls, want_peers = pattern(ranks, "one-sided part skipped" not in done.stdout)
    assert call_table(profile) == want_calls
    assert peer_table(profile) == want_peers
    assert sorted(r["rank"] for r in profile.rank_rows) == list(range(ranks))
    regions = {r.name: r for r in analysis.regions(profile)}
    assert set(regions) == {"(program)", "ring", "collectives", "nonblocking"}
    assert regions["ring"].parent == "(program)" and regions["ring"].entries == ranks


# fortran_pattern's ring is a blocking MPI_Send before the MPI_Recv: at one rank that is a
# send to itself, which MPICH (ch4) does not buffer (the program hangs with or without the
# profiler; MPI allows that), so MPICH runs it from 2 ranks on.
@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_fortran_calls_counted_exactly_once_with_mpich(
    ranks, mpich_fortran, mpich_profiler, tmp_path
):
    """MPICH's Fortran bindings call the C MPI_ functions: each call is still counted once."""
    log = tmp_path / "fortran.json"
    done = profile_mpich(log, ranks, mpich_fortran, mpich_profiler)
    assert f"{mpich_fortran.name}: ranks {ranks} failures 0" in done.stdout
    profile = load(log)
    assert profile.mpi_library.startswith("MPICH")
    check_fortran_profile(profile, ranks)


def test_fortran_f08_call_sites_with_mpich(mpich_profiler, tmp_path):
    """MPICH's `use mpi_f08` procedures with a buffer (mpi_send_f08ts_) call the C MPI_
    functions from inside libmpichfort: the site is still the program's line, not MPICH's."""
    need_mpich()
    require(
        MPICH_MPIF90.exists() and shutil.which("gfortran"),
        f"{MPICH_MPIF90} or gfortran missing (apt-get install gfortran mpich)",
    )
    program = compile_program(MPICH_MPIF90, F08_SOURCE, tmp_path / "f08", "-g", "-O0")
    log = tmp_path / "sites.json"
    profile_mpich(log, 2, program, mpich_profiler, "--callsites", "1")
    check_call_sites_are_source_lines(load(log), F08_SOURCE)


LARGE_COUNT_SOURCE = HERE / "programs" / "fortran_large_count_f08.f90"


@pytest.fixture(scope="module")
def mpich_large_count(tmp_path_factory) -> Path:
    """fortran_large_count_f08.f90 built with MPICH's mpif90, with debug lines."""
    need_mpich()
    require(
        MPICH_MPIF90.exists() and shutil.which("gfortran"),
        f"{MPICH_MPIF90} or gfortran missing (apt-get install gfortran mpich)",
    )
    out = tmp_path_factory.mktemp("mpich") / LARGE_COUNT_SOURCE.stem
    return compile_program(MPICH_MPIF90, LARGE_COUNT_SOURCE, out, "-g", "-O0")


@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_fortran_f08_large_counts_with_mpich(ranks, mpich_large_count, mpich_profiler, tmp_path):
    """MPI-4 large counts from `use mpi_f08` (MPICH's mpi_isend_f08ts_large_ calls the C
    MPI_Isend_c): recorded once each as the _c call, with its bytes, partners and region,
    and attributed to the program's lines."""
    log = tmp_path / "large.json"
    done = profile_mpich(log, ranks, mpich_large_count, mpich_profiler, "--callsites", "1")
    assert f"fortran_large_count_f08: ranks {ranks} failures 0" in done.stdout
    profile = load(log)
    assert profile.complete and profile.mpi_library.startswith("MPICH")
    want_calls, want_peers = fortran_large_count(ranks)
    assert calls_by_region(profile) == want_calls
    assert analysis.peer_totals(profile) == want_peers
    check_call_sites_are_source_lines(
        profile, LARGE_COUNT_SOURCE, {"MPI_Isend_c", "MPI_Recv_c", "MPI_Allreduce_c"}
    )


def test_mpich_program_with_only_open_mpi_profilers(mpich_pattern, tmp_path):
    """With only the bundled (Open MPI) profiler, `profile` says which profiler to build."""
    from petacomm.profile import builder

    if "mpich" in str(builder.bundled().libmpi):
        pytest.skip("petacomm itself is built against MPICH")
    done = petacomm(
        "profile", "-o", str(tmp_path / "x.json"), "--",
        str(MPICH_MPIEXEC), "-n", "1", str(mpich_pattern),
        env={"PETACOMM_PROF_CACHE": str(tmp_path / "empty-cache")}, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "is built against MPICH (" in done.stderr and "libmpich" in done.stderr
    assert "needs a profiler built for MPICH" in done.stderr
    assert f"petacomm profiler build --mpicc {MPICH_MPICC}\n" in done.stderr
    assert "Profilers available: Open MPI (" in done.stderr
    assert not (tmp_path / "x.json").exists()
