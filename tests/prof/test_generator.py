"""The wrapper generator: the spec is well formed, every MPI call it lists is generated when
mpi.h declares it, the C, Fortran and POSIX wrappers all come from the spec, errors in the spec
are reported with their line, and the recipe "add a wrapped MPI call" (docs/profiler.md)
works as written."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, native_build_tree

SPEC = ROOT / "native" / "src" / "prof" / "mpi_calls.spec"


def generator():
    path = ROOT / "native" / "src" / "prof" / "generate_wrappers.py"
    spec = importlib.util.spec_from_file_location("generate_wrappers", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_wrappers"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_spec_parses_and_covers_the_api():
    gen = generator()
    calls = {c.name: c for c in gen.parse_spec(SPEC)}
    must = [
        "MPI_Send", "MPI_Ssend", "MPI_Rsend", "MPI_Bsend", "MPI_Isend", "MPI_Irecv",
        "MPI_Send_init", "MPI_Recv_init", "MPI_Start", "MPI_Startall", "MPI_Mprobe",
        "MPI_Mrecv", "MPI_Improbe", "MPI_Imrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace",
        "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall", "MPI_Testsome",
        "MPI_Ibarrier", "MPI_Ialltoallw", "MPI_Allreduce_init", "MPI_Neighbor_alltoallw",
        "MPI_Ineighbor_allgatherv", "MPI_Neighbor_alltoall_init", "MPI_Send_c",
        "MPI_Allreduce_c", "MPI_Put", "MPI_Rget_accumulate", "MPI_Win_lock_all",
        "MPI_Win_post", "MPI_File_write_at_all", "MPI_File_iread", "MPI_Comm_split_type",
        "MPI_Dist_graph_create_adjacent", "MPI_Intercomm_merge", "MPI_Psend_init",
    ]  # fmt: skip
    assert [m for m in must if m not in calls] == []
    assert len([c for c in calls.values() if c.kind != "posix"]) > 220


def test_spec_errors_name_the_line(tmp_path):
    gen = generator()
    bad = tmp_path / "bad.spec"
    bad.write_text("MPI_Send | send | int count | bytes=count\nMPI_Foo | nokind | | \n")
    with pytest.raises(gen.SpecError, match=r"bad.spec:2: unknown kind 'nokind'"):
        gen.parse_spec(bad)
    bad.write_text("MPI_Send | send | int count | colour=red\n")
    with pytest.raises(gen.SpecError, match="bad.spec:1: unknown attribute 'colour'"):
        gen.parse_spec(bad)


def test_header_prototypes_keep_the_first_declaration():
    """mpi.h may declare a name twice (a compatibility macro, a second prototype): the first
    declaration is kept, under its MPI_ name."""
    gen = generator()
    protos = gen.header_prototypes(
        "int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, "
        "MPI_Comm comm); int PMPI_Send(const void *buf, long count);"
    )
    assert list(protos) == ["MPI_Send"] and len(protos["MPI_Send"]) == 6


def test_header_types_come_from_mpi_h():
    gen = generator()
    protos = gen.header_prototypes(
        "int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int, int tag, "
        "MPI_Comm comm); int PMPI_Waitall(int, MPI_Request [], MPI_Status *);"
    )
    params = [gen.header_param(d, n) for d, n in zip(protos["MPI_Send"], "abcdef", strict=True)]
    assert [p.declare() for p in params] == [
        "const void *a", "int b", "MPI_Datatype c", "int d", "int e", "MPI_Comm f",
    ]  # fmt: skip
    waitall = [gen.header_param(d, n) for d, n in zip(protos["MPI_Waitall"], "xyz", strict=True)]
    assert waitall[1].declare() == "MPI_Request y[]"


def test_generated_wrappers_match_mpi_h():
    tree = native_build_tree()
    assert tree is not None, "no native build tree with the profiler: run scripts/setup.sh"
    listing = next(Path(tree).rglob("generated/prof_calls.txt"), None)
    assert listing is not None, f"{tree} has no generated profiler sources"
    text = listing.read_text()
    generated = int(text.split()[1])
    assert generated > 180
    # Large-count calls are generated exactly when this mpi.h declares them.
    mpi_i = (listing.parent / "mpi.i").read_text()
    assert ("PMPI_Send_c" in mpi_i) == ("  MPI_Send_c\n" in text.split("not declared")[0])


def test_posix_and_fortran_wrappers_come_from_the_spec():
    gen = generator()
    calls = gen.parse_spec(SPEC)
    files = gen.generate(calls, {})  # no mpi.h: only the POSIX wrappers
    posix = files["prof_wrappers_posix.cpp"]
    assert "PETACOMM_PROF_EXPORT ssize_t read(int fd, void *buf, size_t n) {" in posix
    assert "PETACOMM_PROF_EXPORT int open(const char *path, int flags, ...) {" in posix
    # _FORTIFY_SOURCE variants are recorded as the call they stand for.
    chk = posix[posix.index("__read_chk(") :]
    assert "pp::record_io(pp::kread," in chk[: chk.index("\n}\n")]
    names = files["prof_calls.cpp"]
    assert '"read",' in names and '"__read_chk"' not in names.split("kSpecCallNames")[0]
    # Fortran: the same model as C, the Fortran twins of the helpers, no text patching.
    waitall = next(c for c in calls if c.name == "MPI_Waitall")
    waitall.ident = "kMPI_Waitall"
    waitall.params = [
        gen.header_param(d, n)
        for d, n in (("int", "count"), ("MPI_Request []", "array_of_requests"),
                     ("MPI_Status []", "array_of_statuses"))
    ]  # fmt: skip
    fortran, c = gen.fortran_wrapper(waitall), gen.c_wrapper(waitall)
    assert (
        "pp::FCompletions prof_done(count_f, array_of_requests_f, array_of_statuses_f, true)"
        in fortran
    )
    assert "pp::Completions prof_done(count, array_of_requests, array_of_statuses, true)" in c
    for text in (fortran, c):
        assert "prof_done.finish_all();" in text and "prof_done.arg()" in text


def test_recipe_add_a_wrapped_call(tmp_path):
    """docs/profiler.md, "Adding a call", followed on a copy of the spec: one line for
    MPI_File_read_all_begin (declared by mpi.h, not wrapped yet); the generator makes its C
    and Fortran wrappers and they compile against the runtime's headers."""
    tree = native_build_tree()
    if tree is None:
        pytest.fail("no build tree: run scripts/setup.sh")
    generated = next(Path(tree).rglob("generated/mpi.i")).parent
    spec = tmp_path / "mpi_calls.spec"
    line = (
        "MPI_File_read_all_begin | io_read | MPI_File fh, void *buf, int count, "
        "MPI_Datatype datatype | bytes=tsz(count,datatype)\n"
    )
    spec.write_text(SPEC.read_text() + line)
    gen = generator()
    out = tmp_path / "generated"
    assert (
        gen.main(["--spec", str(spec), "--mpi-h", str(generated / "mpi.i"), "--out-dir", str(out)])
        == 0
    )
    listing = (out / "prof_calls.txt").read_text()
    assert "  MPI_File_read_all_begin\n" in listing.split("not declared")[0]
    c_text = (out / "prof_wrappers_c.cpp").read_text()
    assert (
        "int MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype)"
        in c_text
    )
    assert "void mpi_file_read_all_begin_(" in (out / "prof_wrappers_f.cpp").read_text()
    from petacomm.native import build_info

    mpicxx = Path(build_info()["mpicc"]).with_name("mpicxx")
    source = ROOT / "native" / "src" / "prof"
    for unit in ("prof_wrappers_c.cpp", "prof_wrappers_f.cpp"):
        done = subprocess.run(
            [str(mpicxx), "-std=c++17", "-fsyntax-only", f"-I{out}", f"-I{source}",
             f"-I{generated}", f"-I{ROOT / 'native' / 'include'}", str(out / unit)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
