"""SimGrid platforms, hostfiles and rankfiles of ``petacomm simulate`` (no simulation).

The platform files are checked twice: their cluster attributes against hand-worked values,
and (with SimGrid installed) the hosts, links and routes SimGrid itself builds from them,
read back by a small s4u program (route_dump.cpp), against routes worked out by hand.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from petacomm.sim.placement import mapping_names, named_mapping, read_rankfile
from petacomm.sim.platform import LinkParameters, Platform, hostfile
from petacomm.topology.launcher_files import format_mapping
from petacomm.topology.mapping import permutation_mapping
from petacomm.topology.network import parse_network
from prerequisites import require_program

LINK = LinkParameters(2e9, 1.5e-6)
LOOP = LinkParameters(8e9, 2e-7)


def cluster(text: str) -> dict:
    platform = Platform(parse_network(text), LINK, LOOP)
    root = ET.fromstring(platform.xml().split("\n", 2)[2])  # after the XML and DOCTYPE lines
    (element,) = root.findall("cluster")
    return element.attrib


def test_torus_cluster_attributes():
    c = cluster("torus:2x3x4:t=2")
    assert c["topology"] == "TORUS" and c["topo_parameters"] == "2,3,4"
    assert c["radical"] == "0-23" and c["prefix"] == "node-" and c["core"] == "2"
    assert c["bw"] == "2000000000.0Bps" and c["lat"] == "1.5e-06s"
    assert c["loopback_bw"] == "8000000000.0Bps" and c["loopback_lat"] == "2e-07s"
    assert c["sharing_policy"] == "SPLITDUPLEX"


def test_fat_tree_and_dragonfly_parameters():
    # A fat tree string is SimGrid's FAT_TREE parameters; 4x4 leaves.
    c = cluster("fattree:2;4,4;1,2;1,2")
    assert (c["topology"], c["topo_parameters"], c["radical"]) == (
        "FAT_TREE",
        "2;4,4;1,2;1,2",
        "0-15",
    )
    # dragonfly 4 groups x 4 routers x 2 nodes, 3 global links per router: 12 global links
    # per group over 3 other groups = 4 links per pair of groups; one chassis per group.
    c = cluster("dragonfly:4,4,2,3")
    assert (c["topology"], c["topo_parameters"], c["radical"]) == (
        "DRAGONFLY",
        "4,4;1,1;4,1;2",
        "0-31",
    )
    # SimGrid links groups i and j through router j of group i: 9 groups need 9 routers.
    with pytest.raises(ValueError, match="4 routers for 9 groups"):
        cluster("dragonfly:9,4,2,2")


@pytest.mark.parametrize("text", ["mesh:4x4", "torus:4x4:wrap=1,0"])
def test_meshes_are_refused(text):
    with pytest.raises(ValueError, match="wraps around in every dimension"):
        Platform(parse_network(text), LINK, LOOP)


def test_link_parameters_are_checked():
    with pytest.raises(ValueError, match="bandwidth"):
        LinkParameters(0, 1e-6)
    with pytest.raises(ValueError, match="latency"):
        LinkParameters(1e9, -1)


# ---- hostfiles from mappings --------------------------------------------------------------
def test_hostfile_of_permutation_mappings():
    net = parse_network("torus:2x2x2:t=2")
    # TXYZ fills both cores of a node, then X, Y, Z (node = x + 2y + 4z).
    txyz = hostfile(named_mapping("TXYZ", net, 16)).split()
    assert txyz == [f"node-{n}" for n in (0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7)]
    # XYZT: one rank per node first.
    assert hostfile(named_mapping("XYZT", net, 16)).split() == [f"node-{n % 8}" for n in range(16)]
    # ZYXT with 6 ranks: z fastest, then y, then x -> nodes 0, 4, 2, 6, 1, 5.
    assert hostfile(named_mapping("zyxt", net, 6)).split() == [
        f"node-{n}" for n in (0, 4, 2, 6, 1, 5)
    ]
    assert hostfile(named_mapping("cyclic", net, 3)).split() == ["node-0", "node-1", "node-2"]
    assert hostfile(named_mapping("block", net, 3)).split() == ["node-0", "node-0", "node-1"]


def test_mapping_names():
    net = parse_network("torus:2x2")
    assert len(mapping_names("permutations", net)) == 6  # T, X, Y: 3!
    assert mapping_names("block, TXY", net) == ["block", "TXY"]
    with pytest.raises(ValueError, match="unknown mapping 'TXQ'"):
        named_mapping("TXQ", net, 4)
    with pytest.raises(ValueError, match="permutations"):
        mapping_names("permutations", parse_network("fattree:1;4;1;1"))


def test_mapping_names_in_any_case_and_with_spaces():
    net = parse_network("torus:2x2x2:t=2")
    # As the CLI takes them: " Block " and "CYCLIC" are block and cyclic (node = rank // 2,
    # node = rank % 8), and "Permutations" every one of the 4! strings of T, X, Y, Z.
    assert hostfile(named_mapping(" Block ", net, 3)).split() == ["node-0", "node-0", "node-1"]
    assert hostfile(named_mapping("CYCLIC", net, 3)).split() == ["node-0", "node-1", "node-2"]
    assert hostfile(named_mapping(" xyzt", net, 2)).split() == ["node-0", "node-1"]
    names = mapping_names(" Permutations , block", net)
    assert len(names) == 24 + 1 and names[-1] == "block" and "TXYZ" in names
    with pytest.raises(ValueError, match="empty name"):
        mapping_names("block,,cyclic", net)


def test_rankfile_is_read_back():
    net = parse_network("torus:2x2:t=2")
    text = "# comment\nrank 1=node0 slot=0\nrank 0=node3 slot=1\n\nrank 2=node3 slot=0\n"
    mapping = read_rankfile(text, net)
    assert mapping.node.tolist() == [3, 0, 3] and mapping.core.tolist() == [1, 0, 0]
    assert hostfile(mapping).split() == ["node-3", "node-0", "node-3"]
    custom = read_rankfile("rank 0=nid2 slot=1\n", net, "nid{node}")
    assert (custom.node.tolist(), custom.core.tolist()) == ([2], [1])
    # What petacomm map writes with the documented --host-template 'nid{node:05d}' (it was
    # refused: "host 'nid00000' does not match the host template").
    net4 = parse_network("torus:4x4:t=2")
    mapping = permutation_mapping("TXY", net4, 32)
    text = format_mapping(mapping, net4, "rankfile", host_template="nid{node:05d}")
    assert "nid00015" in text
    back = read_rankfile(text, net4, "nid{node:05d}")
    assert back.node.tolist() == mapping.node.tolist()
    assert back.core.tolist() == mapping.core.tolist()


def test_rankfile_details():
    net = parse_network("torus:2x2:t=16")
    # A slot of two digits, and the mapping named after where it came from.
    mapping = read_rankfile("rank 0=node1 slot=12\n", net, origin="run.rf")
    assert (mapping.node.tolist(), mapping.core.tolist()) == ([1], [12])
    assert mapping.name == "rankfile:run.rf"
    # The template's other characters are literal text, not a regular expression: with
    # "n.{node}" the host "nX1" does not match, with "n+{node}" the host "n+1" does.
    with pytest.raises(ValueError, match="does not match the host template"):
        read_rankfile("rank 0=nX1 slot=0\n", net, "n.{node}")
    assert read_rankfile("rank 0=n+3 slot=0\n", net, "n+{node}").node.tolist() == [3]
    # Ranks 0 and 5 of 2 lines: ranks must be 0..1, rank 1 missing (and only rank 1).
    with pytest.raises(ValueError, match=r"ranks must be 0\.\.1; missing \[1\]$"):
        read_rankfile("rank 0=node0 slot=0\nrank 5=node1 slot=0\n", net)


@pytest.mark.parametrize(
    "text, message",
    [
        ("rank 0=node0 slot=0\nrank 0=node1 slot=0\n", "rank 0 placed twice"),
        ("rank 0=node0 slot=0\nrank 2=node1 slot=0\n", "missing [1]"),
        ("rank 0=host7 slot=0\n", "does not match the host template"),
        ("rank 0=node9 slot=0\n", "node id out of range"),
        ("rank 0=node0 slot=0\nrank 1=node0 slot=0\n", "two ranks share a slot"),
        ("rank zero=node0\n", "line 1"),
        # Node ids int64 holds, in ASCII digits (an OverflowError; Arabic-Indic digits).
        ("rank 0=node99999999999999999999 slot=0\n", "does not match the host template"),
        ("rank 0=node\u0661 slot=0\n", "does not match the host template"),
    ],
)
def test_bad_rankfiles(text, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_rankfile(text, parse_network("torus:2x2:t=2"))


# ---- what SimGrid builds from the platform -----------------------------------------------
@pytest.fixture(scope="module")
def route_dump(tmp_path_factory) -> Path:
    """tests/sim/route_dump.cpp built against libsimgrid (once per module)."""
    cxx = require_program("g++", "a C++ compiler: apt-get install g++")
    require_program("smpirun", "SimGrid: apt-get install libsimgrid-dev simgrid")
    out = tmp_path_factory.mktemp("routes") / "route_dump"
    source = Path(__file__).with_name("route_dump.cpp")
    done = subprocess.run(
        [cxx, "-std=c++17", "-O0", str(source), "-o", str(out), "-lsimgrid"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


def simgrid_routes(route_dump: Path, tmp_path: Path, network: str, pairs=()) -> dict:
    """{(src node, dst node): (latency s, [link names])} as SimGrid routes them."""
    platform = tmp_path / "platform.xml"
    platform.write_text(Platform(parse_network(network), LINK, LOOP).xml())
    argv = [str(route_dump), str(platform), "--log=root.thres:warning"]
    argv += [f"node-{a}:node-{b}" for a, b in pairs]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    routes = {}
    for line in done.stdout.splitlines():
        src, dst, latency, *links = line.split()
        routes[(int(src[5:]), int(dst[5:]))] = (float(latency), links)
    return routes


def test_simgrid_builds_the_torus_hosts_and_links(route_dump, tmp_path):
    routes = simgrid_routes(route_dump, tmp_path, "torus:2x3x4")
    assert len(routes) == 24 * 23  # every ordered pair of the 24 hosts
    # Latency = hops x link latency; hops on a 2x3x4 torus from node 0 to node (1,1,2) = 1+1+2.
    latency, links = routes[(0, 1 + 2 * 1 + 6 * 2)]
    assert len(links) == 4 and latency == pytest.approx(4 * LINK.latency)


def test_simgrid_torus_routes_worked_by_hand(route_dump, tmp_path):
    # 4x4 torus, node = x + 4y. X is routed before Y; a half-ring displacement (2 hops either
    # way) goes + except from coordinate 2 (= n/2), which goes -.
    up = "machine_link_from_{}_to_{}_UP"
    down = "machine_link_from_{}_to_{}_DOWN"
    expected = {
        (0, 2): [up.format(0, 1), up.format(1, 2)],  # x 0 -> 2: tie, +
        (2, 0): [down.format(1, 2), down.format(0, 1)],  # x 2 -> 0: tie from n/2, -
        (3, 1): [up.format(3, 0), up.format(0, 1)],  # x 3 -> 1: tie, + through the wrap
        (1, 3): [up.format(1, 2), up.format(2, 3)],  # x 1 -> 3: tie, +
        (0, 5): [up.format(0, 1), up.format(1, 5)],  # X first, then Y
        (5, 0): [down.format(4, 5), down.format(0, 4)],  # x 1 -> 0 (-) at y 1, then y 1 -> 0 (-)
        (8, 0): [down.format(4, 8), down.format(0, 4)],  # y 2 -> 0: tie from n/2, -
        (12, 0): [up.format(12, 0)],  # y 3 -> 0: one hop through the wrap
    }
    routes = simgrid_routes(route_dump, tmp_path, "torus:4x4", expected)
    for pair, links in expected.items():
        assert routes[pair][1] == links, pair
        assert routes[pair][0] == pytest.approx(len(links) * LINK.latency)


def test_simgrid_fat_tree_routes(route_dump, tmp_path):
    # fattree:2;4,4;1,2;1,2: leaves under one level-1 switch (0-3) meet in 2 links, leaves of
    # different level-1 switches climb to a level-2 switch and back: 4 links.
    routes = simgrid_routes(
        route_dump, tmp_path, "fattree:2;4,4;1,2;1,2", [(0, 3), (0, 4), (5, 15)]
    )
    assert [len(routes[p][1]) for p in [(0, 3), (0, 4), (5, 15)]] == [2, 4, 4]
    assert routes[(0, 4)][0] == pytest.approx(4 * LINK.latency)
