"""The wrapper generator: the spec is well formed, every MPI call it lists is generated when
mpi.h declares it, and errors in the spec are reported with their line."""

from __future__ import annotations

import importlib.util
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
