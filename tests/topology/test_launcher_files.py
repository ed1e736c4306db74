"""Launcher files: each format against its documented syntax; atomic writes; Open MPI."""

import re
import socket
import subprocess

import numpy as np
import pytest

from mpi_harness import mpi_test_env
from petacomm.errors import PetacommError
from petacomm.launch import find_mpiexec
from petacomm.topology.launcher_files import (
    FORMATS,
    format_mapping,
    host_names,
    parse_host_file,
    write_atomically,
    write_mapping,
)
from petacomm.topology.mapping import Mapping, permutation_mapping
from petacomm.topology.network import parse_network
from prerequisites import require


@pytest.fixture
def torus_case():
    net = parse_network("torus:2x2x2:t=2")
    return net, permutation_mapping("XTYZ", net, 16)


def test_rankfile_syntax(torus_case):
    net, m = torus_case
    text = format_mapping(m, net, "rankfile", host_template="nid{node:05d}")
    lines = text.splitlines()
    assert lines[0].startswith("# petacomm rankfile v1")
    body = lines[1:]
    assert len(body) == 16
    for r, line in enumerate(body):
        match = re.fullmatch(r"rank (\d+)=(\S+) slot=(\d+)", line)
        assert match, line
        assert int(match[1]) == r
        assert match[2] == f"nid{m.node[r]:05d}" and int(match[3]) == m.core[r]


def test_slurm_host_list(torus_case):
    net, m = torus_case
    hosts = [f"h{i}" for i in range(8)]
    lines = format_mapping(m, net, "slurm", hosts=hosts).splitlines()
    assert lines == [hosts[n] for n in m.node]
    with pytest.raises(ValueError, match="3 host names for 8 nodes"):
        format_mapping(m, net, "slurm", hosts=["a", "b", "c"])


def test_cray_rank_order(torus_case):
    net, m = torus_case  # XTYZ: node 0 holds ranks 0 and 2, node 1 ranks 1 and 3, ...
    text = format_mapping(m, net, "cray")
    lines = text.splitlines()
    assert lines[0].startswith("#")
    ranks = [int(v) for line in lines[1:] for v in _expand(line)]
    assert sorted(ranks) == list(range(16))
    # Entry k is placed on node k // cores, core k % cores (Cray fills nodes in order).
    for k, r in enumerate(ranks):
        assert (m.node[r], m.core[r]) == (k // 2, k % 2)
    block = format_mapping(permutation_mapping("TXYZ", net, 16), net, "cray")
    assert block.splitlines()[1:] == ["0-1", "2-3", "4-5", "6-7", "8-9", "10-11", "12-13", "14-15"]


def _expand(line):
    for part in line.split(","):
        a, _, b = part.partition("-")
        yield from range(int(a), int(b or a) + 1)


def test_cray_rejects_unrepresentable(torus_case):
    net, _ = torus_case
    gap = Mapping("gap", [0, 2], [0, 0])
    with pytest.raises(ValueError, match="must occupy nodes 0..k-1"):
        format_mapping(gap, net, "cray")
    half = Mapping("half", [0, 1, 1], [0, 0, 1])
    with pytest.raises(ValueError, match="node 0 holds 1 ranks"):
        format_mapping(half, net, "cray")


def test_bluegene_map_files(torus_case):
    net, m = torus_case
    lines = format_mapping(m, net, "bgp").splitlines()
    assert len(lines) == 16
    for r, line in enumerate(lines):
        assert re.fullmatch(r"\d+ \d+ \d+ \d+", line)
        x, y, z, t = map(int, line.split())
        assert net.node_ids([[x, y, z]])[0] == m.node[r] and t == m.core[r]
    with pytest.raises(ValueError, match="bgq map file: needs a 5-D torus"):
        format_mapping(m, net, "bgq")
    q = parse_network("torus:2x2x2x2x2:t=2")
    mq = permutation_mapping("ABCDET", q, 64)
    lines = format_mapping(mq, q, "bgq").splitlines()
    assert lines[0] == "0 0 0 0 0 0" and lines[1] == "1 0 0 0 0 0" and lines[32] == "0 0 0 0 0 1"
    assert all(re.fullmatch(r"(\d+ ){5}\d+", line) for line in lines)


def test_csv(torus_case):
    net, m = torus_case
    lines = format_mapping(m, net, "csv").splitlines()
    assert lines[0].startswith("# petacomm mapping csv v1") and lines[1] == "rank,node,core"
    rows = np.array([list(map(int, line.split(","))) for line in lines[2:]])
    assert np.array_equal(rows, np.column_stack([np.arange(16), m.node, m.core]))


def test_unknown_format_and_bad_template(torus_case):
    net, m = torus_case
    with pytest.raises(ValueError, match="unknown launcher file format"):
        format_mapping(m, net, "lsf")
    with pytest.raises(ValueError, match="host template"):
        host_names(net, template="n{rank}")


def test_writes_are_atomic(tmp_path, torus_case):
    net, m = torus_case
    target = tmp_path / "map.csv"
    target.write_text("old contents\n")
    for fmt in FORMATS:
        if fmt == "bgq":
            continue
        write_mapping(target, m, net, fmt)
        assert target.read_text() == format_mapping(m, net, fmt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.csv"]  # no temp files left

    with pytest.raises(PetacommError, match="directory '.*missing' does not exist"):
        write_atomically(tmp_path / "missing" / "f", "x")
    assert not (tmp_path / "missing").exists()
    # A failure while writing leaves the old file intact and no temporary behind.
    before = target.read_text()
    with pytest.raises(TypeError):
        write_atomically(target, None)
    assert target.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.csv"]


def _open_mpi_major(launcher) -> int | None:
    """Major version of the Open MPI behind ``launcher``, or None if it is not Open MPI."""
    match = re.search(r"\((?:Open MPI|OpenRTE)\) (\d+)\.", launcher.version_text)
    return int(match[1]) if launcher.vendor == "openmpi" and match else None


@pytest.mark.mpi
def test_open_mpi_accepts_the_rankfile(tmp_path):
    launcher = find_mpiexec()
    mpiexec = str(launcher.path)
    major = _open_mpi_major(launcher)
    require(major is not None, f"{mpiexec} is not Open MPI's; the rankfile test needs Open MPI")
    # Every simulated node is this host; 4 nodes x 2 cores = 8 ranks, slots repeat, so run
    # with oversubscription.
    net = parse_network("torus:2x2:t=2")
    m = permutation_mapping("XTY", net, 8)
    rankfile = tmp_path / "rankfile"
    write_mapping(rankfile, m, net, "rankfile", hosts=[socket.gethostname()] * 4)
    env = mpi_test_env()
    # Open MPI 5 takes the rankfile as a mapping policy; 4.x had a separate option.
    if major >= 5:
        placement = ["--map-by", f"rankfile:file={rankfile}:oversubscribe"]
    else:
        placement = ["--rankfile", str(rankfile), "--oversubscribe"]
    cmd = [mpiexec, "-n", "8", *placement, "sh", "-c", "echo rank=$OMPI_COMM_WORLD_RANK"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert sorted(re.findall(r"rank=(\d+)", out.stdout), key=int) == [str(i) for i in range(8)]
    # Open MPI 5 rejects a malformed rankfile, so acceptance above means something (4.x hangs
    # on one instead of failing, so the check is skipped there).
    if major < 5:
        return
    rankfile.write_text(f"rank 0 {socket.gethostname()} slot=0\n")  # '=' missing
    bad = subprocess.run(
        [mpiexec, "-n", "1", "--map-by", f"rankfile:file={rankfile}:oversubscribe", "true"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert bad.returncode != 0


def test_host_file_has_one_name_per_line_and_comments():
    text = "# rack 1\nn0\n  n1   # spare PSU\n\nn2\r\nn3\n"
    assert parse_host_file(text) == ["n0", "n1", "n2", "n3"]
    # An Open MPI hostfile's options were read as more hosts: n0, slots=4, n1, ...
    with pytest.raises(ValueError, match="line 2: expected one host name, got 'n0 slots=4'"):
        parse_host_file("# hosts\nn0 slots=4\nn1 slots=4\n")
