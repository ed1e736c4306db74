"""Network models and their one-line text forms."""

import numpy as np
import pytest

from petacomm.topology.network import (
    DragonflyNetwork,
    FatTreeNetwork,
    TorusNetwork,
    parse_network,
)
from petacomm.topology.node_hierarchy import (
    NodeHierarchy,
    hwloc_from_xml,
    load_hwloc_xml,
    parse_synthetic,
)


@pytest.mark.parametrize(
    "text",
    [
        "torus:8x16x32",
        "mesh:4x4",
        "torus:8x8:wrap=1,0",
        "torus:2x2x2x2x2:t=16",
        "fattree:2;4,4;1,2;1,2",
        "fattree:3;4,4,2;1,2,2;1,1,2:t=4",
        "dragonfly:9,4,2,2:t=2",
    ],
)
def test_text_form_round_trip(text):
    net = parse_network(text)
    assert parse_network(net.to_text()) == net
    assert net.to_text() == text


def test_torus_parse_details():
    net = parse_network("torus:8x16x32:t=4")
    assert net.dims == (8, 16, 32) and net.cores_per_node == 4 and net.num_slots == 16384
    assert net.letters == "XYZ" and net.kind == "torus"
    assert parse_network("torus:4x4x4x4x2").letters == "ABCDE"
    assert parse_network("mesh:3x3").wrap == (False, False)
    assert parse_network("dragonfly:g=9,a=4,p=2,h=2") == DragonflyNetwork(9, 4, 2, 2)


@pytest.mark.parametrize(
    "text, message",
    [
        ("tours:8x8", "unknown network kind 'tours' (expected torus, mesh, fattree, dragonfly)"),
        ("torus:8x0", "expected a positive integer, got '0'"),
        ("torus:8xq", "expected a positive integer, got 'q'"),
        ("torus8x8", "expected KIND:SHAPE"),
        ("torus:8x8:wrap=1", "wrap= needs 2 comma-separated 0/1 flags"),
        ("torus:8x8:colour=red", "unknown option(s) ['colour']"),
        ("fattree:2;4,4;1,2", "fattree expects LEVELS;DOWN;UP;PARALLEL"),
        ("fattree:3;4,4;1,2;1,2", "LEVELS is 3 but DOWN/UP/PARALLEL have 2/2/2 values"),
        ("dragonfly:9,4,2", "dragonfly expects GROUPS,ROUTERS,NODES,GLOBAL"),
        ("dragonfly:10,4,2,2", "must be a multiple of groups-1"),
        ("dragonfly:g=9,a=4,p=2", "missing dragonfly field(s) ['global_links']"),
        # an option or field given twice: the last one won, silently
        ("torus:2x2:t=2:t=3", "option t= is given twice"),
        ("torus:2x2:T=2:t=2", "option t= is given twice"),
        ("torus:2x2:t=2:cores=3", "t= and cores= both give the cores per node"),
        ("mesh:2x2:wrap=0,0:wrap=1,1", "option wrap= is given twice"),
        ("fattree:2;4,4;1,2;1,2:cores=2:cores=4", "option cores= is given twice"),
        ("dragonfly:9,4,2,2:t=1:t=2", "option t= is given twice"),
        ("dragonfly:g=9,a=4,p=2,h=2,groups=5", "dragonfly field groups is given twice"),
    ],
)
def test_parse_errors_name_the_problem(text, message):
    with pytest.raises(ValueError) as err:
        parse_network(text)
    assert message in str(err.value)


def test_torus_offsets_and_ties():
    net = TorusNetwork((8, 5))
    src = net.node_ids([[0, 0], [0, 0], [7, 4], [2, 1]])
    dst = net.node_ids([[4, 0], [3, 2], [0, 0], [6, 3]])
    offsets, tie = net.dimension_offsets(src, dst)
    assert offsets.tolist() == [[4, 0], [3, 2], [1, 1], [4, 2]]
    assert tie.tolist() == [[True, False], [False, False], [False, False], [True, False]]
    assert net.hop_distance(src, dst).tolist() == [4, 5, 2, 6]
    mesh = TorusNetwork((8, 5), (False, False))
    assert mesh.hop_distance(src, dst).tolist() == [4, 5, 11, 6]


def test_node_ids_are_first_dimension_fastest():
    net = TorusNetwork((4, 3, 2))
    assert net.coordinates(1).tolist() == [1, 0, 0]
    assert net.coordinates(4).tolist() == [0, 1, 0]
    assert net.coordinates(12).tolist() == [0, 0, 1]
    assert net.link_name(0) == "(0,0,0) +X"
    assert net.link_name(3 * 24 + 5) == "(1,1,0) -Y"


def test_mesh_link_existence():
    mesh = TorusNetwork((3, 1), (False, True))
    exists = mesh.link_exists().reshape(2, 2, 3)
    assert exists[0, 0].tolist() == [True, True, False]
    assert exists[0, 1].tolist() == [False, True, True]
    assert not exists[1].any()  # a dimension of size 1 has no links


def test_fat_tree_structure():
    tree = FatTreeNetwork((4, 4), (1, 2), (1, 2))
    assert tree.num_nodes == 16
    assert tree.elements(1) == 4 and tree.elements(2) == 2
    assert tree.links_per_level(1) == 16 and tree.links_per_level(2) == 4 * 2 * 2
    assert tree.num_links == 2 * (16 + 16)
    assert tree.oversubscription(1) == 1.0  # 4 down vs 2 up x 2 cables
    assert tree.common_level([0, 0, 0], [0, 3, 4]).tolist() == [0, 1, 2]
    assert tree.hop_distance(0, 5) == 4
    thin = FatTreeNetwork((8, 4), (1, 2), (1, 1))
    assert thin.oversubscription(1) == 4.0


def test_dragonfly_global_links_connect_every_group_pair_symmetrically():
    net = DragonflyNetwork(9, 4, 2, 2)
    assert net.parallel_global == 1
    gs, gd = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    mask = gs != gd
    gw, link, land = net.global_ports(gs[mask], gd[mask])
    assert np.all(gw // net.routers == gs[mask][:, None])
    assert np.all(land // net.routers == gd[mask][:, None])
    assert np.unique(link).size == link.size  # each global port used by one group pair
    back_gw, _, back_land = net.global_ports(gd[mask], gs[mask])
    assert np.array_equal(back_gw, land) and np.array_equal(back_land, gw)
    wide = DragonflyNetwork(5, 4, 1, 2)  # 8 ports over 4 other groups: 2 cables each
    assert wide.parallel_global == 2
    assert wide.hop_distance(0, 0) == 0 and wide.hop_distance(0, 1) == 1


def test_synthetic_node_hierarchy():
    h = parse_synthetic("package:2 numa:2 core:4")
    assert h.cores_per_node == 16
    assert h.shared_depth([0, 0, 0, 0], [1, 4, 8, 0]).tolist() == [2, 1, 0, 3]
    assert h.level_labels() == ["across package", "within package", "within numa", "within core"]
    with pytest.raises(ValueError, match="item 'core8' should be name:count"):
        parse_synthetic("package:2 core8")
    with pytest.raises(ValueError, match="item 'core:\u0668' should be name:count"):
        parse_synthetic("package:2 core:\u0668")  # Arabic-Indic eight: was read as 8
    assert h.to_text() == "package:2 numa:2 core:4"
    # Level names in any case are the same levels; a count of 0 is named as the bad item.
    assert parse_synthetic("Package:2 CORE:4").levels == (("package", 2), ("core", 4))
    with pytest.raises(ValueError, match="item 'core:0' should be name:count"):
        parse_synthetic("package:2 core:0")
    with pytest.raises(ValueError, match="level 'core': count must be >= 1"):
        NodeHierarchy((("package", 2), ("core", 0)))
    # 2^16 cores per node is the limit itself: taken; one core more is refused.
    assert parse_synthetic("package:2 core:32768").cores_per_node == 65536
    with pytest.raises(ValueError, match="65,537 cores per node exceed the limit of 65,536"):
        parse_synthetic("core:65537")


HWLOC_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0">
    {packages}
  </object>
</topology>
"""


def _hwloc(packages=2, numa_per_pkg=2, cores_per_numa=3):
    parts, core = [], 0
    for p in range(packages):
        groups = []
        for n in range(numa_per_pkg):
            cores = "".join(
                f'<object type="Core" os_index="{core + i}"><object type="PU" '
                f'os_index="{core + i}"/></object>'
                for i in range(cores_per_numa)
            )
            core += cores_per_numa
            groups.append(
                f'<object type="Group"><object type="NUMANode" os_index="{p * 2 + n}"/>'
                f'<object type="L3Cache">{cores}</object></object>'
            )
        parts.append(f'<object type="Package" os_index="{p}">{"".join(groups)}</object>')
    return HWLOC_XML.format(packages="".join(parts))


def test_hwloc_xml_hierarchy(tmp_path):
    path = tmp_path / "node.xml"
    path.write_text(_hwloc())
    h = load_hwloc_xml(path)
    assert h.levels == (("package", 2), ("numa", 2), ("core", 3))
    path.write_text(_hwloc(numa_per_pkg=1, cores_per_numa=8))
    assert load_hwloc_xml(path).levels == (("package", 2), ("core", 8))
    # hwloc 1.x layout: the NUMA node is an ancestor of packages, cores hold 2 hardware
    # threads (PUs), caches in between.
    core = (
        '<object type="Cache"><object type="Core"><object type="PU"/><object type="PU"/>'
        "</object></object>"
    )
    package = f'<object type="Package">{core * 2}</object>'
    path.write_text(
        '<topology><object type="Machine"><object type="NUMANode">'
        f"{package * 4}</object></object></topology>"
    )
    assert load_hwloc_xml(path).levels == (("package", 4), ("core", 2))
    # hwloc before 1.11 (and hwloc 2's --export-xml-flags v1) calls packages sockets: four
    # were read as one package of eight cores.
    socket = f'<object type="Socket">{core * 2}</object>'
    path.write_text(
        '<topology><object type="Machine"><object type="NUMANode">'
        f"{socket * 4}</object></object></topology>"
    )
    assert load_hwloc_xml(path).levels == (("package", 4), ("core", 2))
    numa_per_package = (
        f'<object type="Package"><object type="NUMANode">{core * 3}</object>'
        f'<object type="NUMANode">{core * 3}</object></object>'
    )
    path.write_text(f'<topology><object type="Machine">{numa_per_package * 2}</object></topology>')
    assert load_hwloc_xml(path).levels == (("package", 2), ("numa", 2), ("core", 3))
    path.write_text("<topology><object")
    with pytest.raises(ValueError, match="line 1, column"):
        load_hwloc_xml(path)


@pytest.mark.parametrize(
    "packages, message",
    [
        # Each was read as a regular node: only the total core count was checked.
        ([(3, 5), (3, 5)], "NUMA nodes have different core counts (NUMA node 0 has 3 cores, "),
        ([(4, 4), (8,)], "packages have different numbers of NUMA nodes (package 0 has 2 NUMA"),
        ([(4, 4), (2, 2, 2, 2)], "package 0 has 2 NUMA nodes, package 1 has 4"),
        ([(4,), (2,)], "packages have different core counts (package 0 has 4 cores, package 1"),
        # The first package that differs from package 0 is named, not the last one.
        ([(4,), (2,), (2,)], "(package 0 has 4 cores, package 1 has 2)"),
    ],
)
def test_an_irregular_hwloc_node_is_refused_naming_what_differs(tmp_path, packages, message):
    core = '<object type="Core"/>'
    path = tmp_path / "node.xml"
    path.write_text(
        HWLOC_XML.format(
            packages="".join(
                '<object type="Package">'
                + "".join(
                    f'<object type="Group"><object type="NUMANode"/>{core * n}</object>'
                    for n in numa_cores
                )
                + "</object>"
                for numa_cores in packages
            )
        )
    )
    with pytest.raises(ValueError, match=f"^{path}: .*not a regular node") as refused:
        load_hwloc_xml(path)
    assert message in str(refused.value)


def test_hwloc_numa_nodes_holding_packages_are_a_level_above_them(tmp_path):
    def numa(*packages):
        cores = ['<object type="Core"/>' * n for n in packages]
        inner = "".join(f'<object type="Package">{c}</object>' for c in cores)
        return f'<object type="NUMANode">{inner}</object>'

    xml = '<topology><object type="Machine">{}</object></topology>'
    assert hwloc_from_xml(xml.format(numa(2, 2) + numa(2, 2)).encode()).levels == (
        ("numa", 2),
        ("package", 2),
        ("core", 2),
    )
    with pytest.raises(ValueError, match=r"NUMA nodes hold different numbers of packages"):
        hwloc_from_xml(xml.format(numa(2, 2) + numa(2)).encode())


def test_hwloc_xml_of_many_cores_is_read():
    # Each core's NUMA lookup scanned the children of its ancestors: 20,000 sibling cores
    # took 25 s, 70,000 over a minute before the core limit refused them (the speed is a
    # figure for a benchmark, not a timed test: docs/topology.md has it).
    def flat(cores):
        body = '<object type="Core"><object type="PU"/></object>' * cores
        return (
            f'<topology><object type="Machine"><object type="Package">{body}</object>'
            "</object></topology>"
        ).encode()

    assert hwloc_from_xml(flat(20_000)).levels == (("package", 1), ("core", 20_000))
    with pytest.raises(ValueError, match="70,000 cores per node exceed the limit of 65,536"):
        hwloc_from_xml(flat(70_000))
