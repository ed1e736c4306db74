"""Routing models: hand-checked loads, conservation, and the fast paths against references."""

import numpy as np
import pytest
from reference_routing import (
    dragonfly_expected_hops,
    fattree_bfs_leaf_distances,
    fattree_ecmp_reference,
    fattree_link_offset,
    torus_adaptive_reference,
    torus_bfs_distances,
    torus_dor_reference,
)

from petacomm.topology.mapping import permutation_mapping
from petacomm.topology.metrics import evaluate_mapping
from petacomm.topology.network import (
    DragonflyNetwork,
    FatTreeNetwork,
    TorusNetwork,
    parse_network,
)
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.routing import (
    DimensionOrderRouting,
    DragonflyRouting,
    FatTreeRouting,
    MinimalAdaptiveRouting,
    parse_routing,
)


def link_field(network, loads):
    """Loads (num_links,) of a torus as [dim][sign] -> array indexed by coordinates."""
    per = loads.reshape(network.ndim, 2, network.num_nodes)
    return [
        [per[d, s].reshape(network.dims, order="F") for s in range(2)] for d in range(network.ndim)
    ]


def flows_for(net_text, cores, pattern_text, perm, routing):
    net = parse_network(net_text).with_cores(cores)
    pattern = parse_pattern(pattern_text)
    mapping = permutation_mapping(perm, net, pattern.nranks)
    metrics = evaluate_mapping(net, parse_routing(routing, net), pattern, mapping, keep_loads=True)
    return net, metrics


# ---- hand-checked cases ---------------------------------------------------------------------


@pytest.mark.parametrize("routing", ["dor", "adaptive", "adaptive:paths"])
def test_ring_on_1d_torus(routing):
    # 8 ranks on an 8-node ring, rank i -> i+1: every + link carries exactly one message.
    net, m = flows_for("torus:8", 1, "ranks 8; ring 1KiB", "TX", routing)
    ((plus, minus),) = link_field(net, m.link_flows)
    assert np.array_equal(plus, np.ones(8)) and np.array_equal(minus, np.zeros(8))
    assert m.max_contention_flows == 1 and m.avg_contention_flows == 1 and m.used_links == 8
    assert m.hop_bytes == 8 * 1024 and m.max_dilation_hops == 1
    # Both directions: each link once per direction.
    net, m = flows_for("torus:8", 1, "ranks 8; ring 1KiB both", "TX", routing)
    assert np.array_equal(m.link_flows, np.ones(16))


@pytest.mark.parametrize("routing", ["dor", "adaptive", "adaptive:paths"])
def test_ring_with_two_hops_per_message(routing):
    # XT on 4 nodes x 2 cores: ranks 0..3 on cores 0 of nodes 0..3, ranks 4..7 on cores 1.
    # Ring 0->1->...->7->0: 6 messages of 1 hop (+X), 3->4 goes node 3 -> node 0 (+1 wrapped),
    # 7->0 goes node 3 -> node 0 as well, so the + link leaving node 3 carries 2 flows.
    net, m = flows_for("torus:4", 2, "ranks 8; ring 1KiB", "XT", routing)
    ((plus, minus),) = link_field(net, m.link_flows)
    assert np.array_equal(plus, [2, 2, 2, 2]) and not minus.any()
    assert m.intra_node_bytes == 0 and m.max_contention_flows == 2


@pytest.mark.parametrize("routing", ["dor", "adaptive", "adaptive:paths"])
def test_star_on_4x4_torus(routing):
    # Periodic 4x4 grid on a 4x4 torus, rank (i, j) at node (x=j, y=i): every neighbour is
    # one hop away and every directed link carries exactly one message.
    net, m = flows_for("torus:4x4", 1, "grid2d 4x4 periodic star 1MiB", "TXY", routing)
    assert np.allclose(m.link_flows, 1.0)
    assert m.hop_bytes == 64 * 2**20 and m.avg_dilation_hops == 1


@pytest.mark.parametrize("routing", ["dor", "adaptive", "adaptive:paths"])
def test_box_on_4x4_torus(routing):
    # Box adds 4 diagonal messages per rank, 2 hops each. DOR (X then Y): the +X link at a
    # node carries its star message and the X legs of the two diagonals leaving it towards
    # +X; the +Y link carries its star message and the Y legs of the two diagonals that
    # arrive from -X and +X: 3 flows on every link. Adaptive splits each diagonal 1/2 - 1/2
    # over its two paths: 1 + 4 * 1/2 = 3 as well.
    net, m = flows_for("torus:4x4", 1, "grid2d 4x4 periodic box 1MiB", "TXY", routing)
    assert np.allclose(m.link_flows, 3.0)
    assert m.max_contention_flows == pytest.approx(3) and m.max_dilation_hops == 2
    assert m.hop_bytes == (16 * 4 * 1 + 16 * 4 * 2) * 2**20


def test_star_on_4x4x2_torus_with_two_cores_dor():
    # 8x8 periodic grid, TXYZ on 4x4x2 with T=2: column j -> core j%2, x=j//2; row i -> y=i%4,
    # z=i//4. Horizontal: pairs (2x, 2x+1) share a node, the others cross one X link: every
    # X link carries 1 flow. Vertical: both ranks of a node move one Y hop: 2 flows on every
    # Y link. Rows 3->4 and 7->0 (and back) also change z on the 2-ring, a half-ring tie that
    # DOR sends in + direction after the Y hop: +Z links at y=0 (downward) and y=3 (upward)
    # carry 2 flows, all other Z links none.
    net, m = flows_for("torus:4x4x2", 2, "grid2d 8x8 periodic star 1MiB", "TXYZ", "dor")
    (xp, xm), (yp, ym), (zp, zm) = link_field(net, m.link_flows)
    assert np.allclose(xp, 1) and np.allclose(xm, 1)
    assert np.allclose(yp, 2) and np.allclose(ym, 2)
    expect = np.zeros((4, 4, 2))
    expect[:, [0, 3], :] = 2
    assert np.allclose(zp, expect) and np.allclose(zm, 0)
    assert m.intra_node_bytes == 64 * 2**20  # 32 right + 32 left neighbours share a node
    assert m.hop_bytes == (64 + 96 + 2 * 32) * 2**20


def test_star_on_4x4x2_torus_with_two_cores_adaptive():
    # Same case, adaptive per-hop split. A tied message (y +-1, z either way) first splits
    # 1/3 each over Y, +Z, -Z; after Y it splits 1/2-1/2 over +Z/-Z: every Z link at y=0 and
    # y=3 gets 2 ranks x (1/3 from its own flows + 1/6 from arriving ones) = 1 flow per
    # direction, and Y links still total 2 (1/3 + 2/3 from the two z-planes).
    net, m = flows_for("torus:4x4x2", 2, "grid2d 8x8 periodic star 1MiB", "TXYZ", "adaptive")
    (xp, xm), (yp, ym), (zp, zm) = link_field(net, m.link_flows)
    assert np.allclose(xp, 1) and np.allclose(xm, 1)
    assert np.allclose(yp, 2) and np.allclose(ym, 2)
    expect = np.zeros((4, 4, 2))
    expect[:, [0, 3], :] = 1
    assert np.allclose(zp, expect) and np.allclose(zm, expect)


@pytest.mark.parametrize(
    "routing, plus, minus", [("dor", 3.0, 1.0), ("adaptive", 2.0, 2.0), ("adaptive:paths", 2, 2)]
)
def test_dimension_wise_alltoall_rows(routing, plus, minus):
    # Rows of a 4x4 grid along X rings of 4: each rank sends to +1, -1 and +2 (a half-ring
    # tie). DOR sends the tie in + direction over two links: +X links carry 1 + 2 = 3, -X 1.
    # Adaptive splits the tie: 1 + 1/2 + 1/2 = 2 each way. No Y traffic.
    net, m = flows_for("torus:4x4", 1, "grid2d 4x4 rows 4KiB", "TXY", routing)
    (xp, xm), (yp, ym) = link_field(net, m.link_flows)
    assert np.allclose(xp, plus) and np.allclose(xm, minus)
    assert not yp.any() and not ym.any()
    # Columns use Y only.
    net, m = flows_for("torus:4x4", 1, "grid2d 4x4 columns 4KiB", "TXY", routing)
    (xp, xm), (yp, ym) = link_field(net, m.link_flows)
    assert np.allclose(yp, plus) and np.allclose(ym, minus) and not xp.any()


def test_half_ring_ties_and_wrap_around_by_hand():
    # Ring of 4, link id = (2 d + s) * nodes + node (+ links 0..3, - links 4..7). A
    # displacement of 2 is a tie: "dor" always goes +; "dor-simgrid" goes + except from
    # coordinate n/2 = 2 (SimGrid: + when s < t <= s + 2, or s > 2 and t <= (s + 2) mod 4).
    #   0 -> 2: + at 0, 1        1 -> 3: + at 1, 2
    #   2 -> 0: simgrid - at 2, 1 (dor + at 2, 3)
    #   3 -> 1: + at 3, 0 (s = 3 > 2 and t = 1 <= 1)
    ring = TorusNetwork((4,))
    src, dst = [0, 1, 2, 3], [2, 3, 0, 1]
    plus = {0: [0, 1], 1: [1, 2], 2: [2, 3], 3: [3, 0]}
    simgrid = {**plus, 2: [4 + 2, 4 + 1]}
    for routing, links in [
        (DimensionOrderRouting(), plus),
        (parse_routing("dor-simgrid", ring), simgrid),
    ]:
        for a, b in zip(src, dst, strict=True):
            loads = routing.route(ring, [a], [b], np.ones((1, 1)))[0]
            assert sorted(np.flatnonzero(loads).tolist()) == sorted(links[a]), (routing, a, b)
            _, link = routing.route_links(ring, [a], [b])
            assert link.tolist() == links[a], (routing, a, b)  # in the order taken
    # Ring of 5 (no ties): 0 -> 4 and 0 -> 3 are shorter the wrapped way (1 and 2 hops -),
    # 4 -> 0 and 3 -> 0 the wrapped way + (1 and 2 hops); 0 -> 2 goes + (2 hops).
    ring = TorusNetwork((5,))
    expected = {
        (0, 4): [5 + 0],
        (0, 3): [5 + 0, 5 + 4],
        (4, 0): [4],
        (3, 0): [3, 4],
        (0, 2): [0, 1],
    }
    for (a, b), links in expected.items():
        assert DimensionOrderRouting().route_links(ring, [a], [b])[1].tolist() == links, (a, b)
        loads = DimensionOrderRouting().route(ring, [a], [b], np.ones((1, 1)))[0]
        assert sorted(np.flatnonzero(loads).tolist()) == sorted(links), (a, b)


def test_dor_order_matters():
    net = TorusNetwork((4, 4))
    w = np.ones((1, 1))
    xy = DimensionOrderRouting((0, 1)).route(net, [0], [5], w)[0]  # (0,0) -> (1,1)
    yx = DimensionOrderRouting((1, 0)).route(net, [0], [5], w)[0]
    n = net.num_nodes
    assert xy[0 * n + 0] == 1 and xy[2 * n + 1] == 1  # +X at (0,0), +Y at (1,0)
    assert yx[2 * n + 0] == 1 and yx[0 * n + 4] == 1  # +Y at (0,0), +X at (0,1)


# ---- conservation on random patterns, every routing model -----------------------------------

NETWORKS_AND_ROUTINGS = [
    (TorusNetwork((4, 5, 3)), DimensionOrderRouting()),
    (TorusNetwork((4, 5, 3)), DimensionOrderRouting((2, 0, 1))),
    (TorusNetwork((4, 6, 2)), MinimalAdaptiveRouting("hop")),
    (TorusNetwork((4, 6, 2)), MinimalAdaptiveRouting("path")),
    (TorusNetwork((4, 6, 2)), MinimalAdaptiveRouting("hop", method="fft")),
    (TorusNetwork((4, 6, 2)), MinimalAdaptiveRouting("path", method="direct")),
    (TorusNetwork((5, 4), (False, True)), DimensionOrderRouting()),
    (TorusNetwork((5, 4), (False, True)), MinimalAdaptiveRouting("hop", method="fft")),
    (TorusNetwork((3, 4), (False, False)), MinimalAdaptiveRouting("path")),
    (FatTreeNetwork((4, 3, 2), (1, 2, 3), (1, 2, 1)), FatTreeRouting("dmodk")),
    (FatTreeNetwork((4, 3, 2), (1, 2, 3), (1, 2, 1)), FatTreeRouting("ecmp")),
    (DragonflyNetwork(5, 4, 2, 2), DragonflyRouting(valiant=False)),
    (DragonflyNetwork(5, 4, 2, 2), DragonflyRouting(valiant=True)),
    (DragonflyNetwork(3, 4, 1, 1), DragonflyRouting(valiant=True)),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("network, routing", NETWORKS_AND_ROUTINGS)
def test_conservation_on_random_patterns(network, routing, seed):
    rng = np.random.default_rng(seed)
    n = network.num_nodes
    src = rng.integers(0, n, 300)
    dst = rng.integers(0, n, 300)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    weights = np.stack([rng.integers(1, 10_000, src.size).astype(float), np.ones(src.size)])
    loads = routing.route(network, src, dst, weights)
    hops = routing.expected_hops(network, src, dst)
    assert loads.shape == (2, network.num_links)
    assert np.all(loads >= -1e-9)
    assert np.allclose(loads.sum(axis=1), (weights * hops).sum(axis=1))
    # Nothing flows over links that do not exist (mesh edges, size-1 dimensions).
    assert np.allclose(loads[:, ~network.link_exists()], 0)
    # Minimal models never beat the hop distance; Valiant takes detours.
    dist = network.hop_distance(src, dst)
    if getattr(routing, "valiant", False):
        assert np.all(hops >= dist - 1e-12)
    else:
        assert np.allclose(hops, dist)


# ---- hop distances against an independent breadth-first search ------------------------------


@pytest.mark.parametrize(
    "network",
    [
        TorusNetwork((8,)),
        TorusNetwork((5, 4)),
        TorusNetwork((4, 3, 2)),
        TorusNetwork((6, 1, 3)),
        TorusNetwork((5, 4), (False, True)),
        TorusNetwork((3, 4, 2), (False, False, True)),
        TorusNetwork((2, 2, 2, 2, 2)),
    ],
)
def test_torus_hop_distances_equal_breadth_first_search(network):
    nodes = np.arange(network.num_nodes)
    for target in range(network.num_nodes):
        expected = torus_bfs_distances(network, target)
        got = network.hop_distance(nodes, np.full(nodes.size, target))
        assert got.tolist() == expected, target


@pytest.mark.parametrize(
    "network",
    [
        FatTreeNetwork((4, 4), (1, 2), (1, 2)),
        FatTreeNetwork((3, 2, 2), (1, 2, 2), (1, 1, 2)),
        FatTreeNetwork((4, 3, 2), (2, 2, 3), (1, 2, 1)),
    ],
)
def test_fattree_hop_distances_and_link_numbering(network):
    nodes = np.arange(network.num_nodes)
    for leaf in range(network.num_nodes):
        expected = fattree_bfs_leaf_distances(network, leaf)
        assert network.hop_distance(np.full(nodes.size, leaf), nodes).tolist() == expected
    for level in range(1, network.levels + 1):
        for direction in ("up", "down"):
            assert network.link_offset(direction, level) == fattree_link_offset(
                network, direction, level
            )


@pytest.mark.parametrize(
    "network",
    [DragonflyNetwork(3, 2, 1, 1), DragonflyNetwork(5, 4, 1, 2), DragonflyNetwork(9, 4, 2, 2)],
)
def test_dragonfly_expected_hops_from_the_documented_cabling(network):
    src, dst = np.meshgrid(np.arange(network.num_nodes), np.arange(network.num_nodes))
    src, dst = src.ravel(), dst.ravel()
    expected = [
        dragonfly_expected_hops(network, int(a), int(b)) for a, b in zip(src, dst, strict=True)
    ]
    assert np.allclose(network.hop_distance(src, dst), expected)
    keep = src // network.nodes != dst // network.nodes
    hops = DragonflyRouting(valiant=False).expected_hops(network, src[keep], dst[keep])
    assert np.allclose(hops, np.asarray(expected)[keep])


# ---- the translation-symmetry shortcut equals full per-flow routing -------------------------


@pytest.mark.parametrize("split", ["hop", "path"])
@pytest.mark.parametrize("method", ["direct", "fft"])
@pytest.mark.parametrize(
    "network", [TorusNetwork((4, 3, 2)), TorusNetwork((6, 4)), TorusNetwork((4, 3), (True, False))]
)
def test_adaptive_templates_equal_per_flow_walk(network, method, split):
    rng = np.random.default_rng(7)
    n = network.num_nodes
    src = rng.integers(0, n, 60)
    dst = rng.integers(0, n, 60)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    weights = np.stack([rng.random(src.size), np.ones(src.size)])
    fast = MinimalAdaptiveRouting(split, method=method).route(network, src, dst, weights)
    slow = torus_adaptive_reference(network, src, dst, weights, split)
    assert np.allclose(fast, slow, atol=1e-12)


@pytest.mark.parametrize("split", ["hop", "path"])
@pytest.mark.parametrize(
    "network",
    [TorusNetwork((4, 3, 2)), TorusNetwork((4, 4)), TorusNetwork((4, 3), (True, False))],
)
def test_adaptive_route_shares_list_each_messages_own_shares(network, split):
    """Each message's (link, share) entries are its own unit flow walked by the reference,
    a link once; on a 4x4 torus a displacement of 2 both ways reaches one node by two
    progress states (+2 and -2), whose next links must be summed, not listed twice."""
    n = network.num_nodes
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    message, link, share = MinimalAdaptiveRouting(split).route_shares(network, src, dst)
    assert np.all(np.diff(message) >= 0)  # a message's entries together
    assert np.unique(message * network.num_links + link).size == message.size
    got = np.zeros((src.size, network.num_links))
    got[message, link] = share
    want = torus_adaptive_reference(network, src, dst, np.eye(src.size), split)
    assert np.allclose(got, want, atol=1e-12)
    assert np.all(np.abs(share) > 1e-12)


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_dor_prefix_sums_equal_per_flow_walk(order):
    network = TorusNetwork((5, 4, 3), (True, True, False))
    rng = np.random.default_rng(3)
    src = rng.integers(0, 60, 80)
    dst = rng.integers(0, 60, 80)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    weights = np.stack([rng.random(src.size), np.ones(src.size)])
    fast = DimensionOrderRouting(order).route(network, src, dst, weights)
    slow = torus_dor_reference(network, src, dst, weights, order)
    assert np.allclose(fast, slow, atol=1e-12)


def test_fattree_ecmp_aggregation_equals_path_enumeration():
    network = FatTreeNetwork((3, 2, 2), (1, 2, 2), (1, 1, 2))
    rng = np.random.default_rng(5)
    src = rng.integers(0, network.num_nodes, 40)
    dst = rng.integers(0, network.num_nodes, 40)
    keep = src != dst
    weights = np.stack([rng.random(keep.sum()), np.ones(keep.sum())])
    fast = FatTreeRouting("ecmp").route(network, src[keep], dst[keep], weights)
    slow = fattree_ecmp_reference(network, src[keep], dst[keep], weights)
    assert np.allclose(fast, slow)


def test_fattree_dmodk_single_path_and_balance():
    # 2-level tree, 4 leaves per switch, 4 spines (up=4): D-mod-K spreads the 4 destinations
    # of a remote switch over the 4 spines, so each up-link of a leaf switch is used once.
    net = FatTreeNetwork((4, 2), (1, 4), (1, 1))
    src = np.array([0, 0, 0, 0])
    dst = np.array([4, 5, 6, 7])
    loads = FatTreeRouting("dmodk").route(net, src, dst, np.ones((1, 4)))[0]
    up2 = net.link_offset("up", 2)
    assert np.array_equal(loads[up2 : up2 + 4], [1, 1, 1, 1])  # switch 0's four up-links
    assert loads[net.link_offset("up", 1)] == 4  # leaf 0's single link to its switch
    assert loads.sum() == 4 * 4


def test_fattree_dmodk_spreads_destinations_over_ports_and_parallel_cables():
    # 2 switches of 4 leaves, 2 spines, 2 parallel cables per switch-spine pair. D-mod-K at
    # level 2: port (dst // 1) mod 2, cable (dst // (1 * 2)) mod 2 (class docstring), so
    # leaf 0's messages to 4, 5, 6, 7 take (port, cable) (0,0), (1,0), (0,1), (1,1): each of
    # switch 0's four up-cables once. The down side mirrors it at switch 1.
    net = FatTreeNetwork((4, 2), (1, 2), (1, 2))
    loads = FatTreeRouting("dmodk").route(net, [0] * 4, [4, 5, 6, 7], np.ones((1, 4)))[0]
    up2, down2 = net.link_offset("up", 2), net.link_offset("down", 2)
    assert loads[up2 : up2 + 4].tolist() == [1, 1, 1, 1]
    assert loads[down2 + 4 : down2 + 8].tolist() == [1, 1, 1, 1]
    assert loads.sum() == 4 * 4


def test_dragonfly_minimal_route_by_hand():
    # 3 groups x 2 routers x 1 node, 1 global link per router: group 0 port q=r*h+k -> group
    # (0+1+q mod 2) mod 3: router 0 -> group 1, router 1 -> group 2.
    net = DragonflyNetwork(3, 2, 1, 1)
    gw, link, land = net.global_ports(np.array([0, 0]), np.array([1, 2]))
    assert gw.ravel().tolist() == [0, 1]
    # The peer ports point back at group 0.
    back_gw, _, back_land = net.global_ports(np.array([1, 2]), np.array([0, 0]))
    assert land.ravel().tolist() == back_gw.ravel().tolist()
    assert back_land.ravel().tolist() == [0, 1]
    # Node 1 (group 0, router 1) -> node 2 (group 1, router 0): local hop r1->r0, global r0.
    loads = DragonflyRouting().route(net, [1], [2], np.ones((1, 1)))[0]
    assert loads[net.local_link(1, 0)] == 1
    assert loads[link[0, 0]] == 1
    assert loads.sum() == 2 + (land[0, 0] != 2)


def test_routing_names_and_errors():
    torus = parse_network("torus:4x4x4")
    assert parse_routing("dor:ZYX", torus).describe(torus) == "dor:ZYX"
    assert parse_routing(None, torus).describe(torus) == "adaptive"
    assert parse_routing("adaptive:paths", torus).split == "path"
    with pytest.raises(ValueError, match="does not apply to a torus"):
        parse_routing("ecmp", torus)
    with pytest.raises(ValueError, match="each of XYZ exactly once"):
        parse_routing("dor:XXZ", torus)
    with pytest.raises(ValueError, match="unknown dimension letter 'Q' \\(expected XYZ\\)"):
        parse_routing("dor:XQZ", torus)
    # Names in any letter case, as the dimension letters.
    assert parse_routing("DOR:zyx", torus).describe(torus) == "dor:ZYX"
    tree = parse_network("fattree:2;4,4;1,2;1,2")
    assert parse_routing(None, tree).describe(tree) == "dmodk"
    assert parse_routing("ECMP", tree).describe(tree) == "ecmp"
    fly = parse_network("dragonfly:9,4,2,2")
    assert parse_routing("valiant", fly).describe(fly) == "valiant"


def test_dragonfly_valiant_route_by_hand():
    # 3 groups x 2 routers x 1 node x 1 global link. Node 1 (group 0, router 1) -> node 2
    # (group 1, router 0) through the only other group, 2: router 1's global port goes to
    # group 2 and lands on router 4; router 5 owns group 2's link to group 1 (local hop
    # 4 -> 5), which lands on router 2 = the destination. 3 hops.
    net = DragonflyNetwork(3, 2, 1, 1)
    routing = DragonflyRouting(valiant=True)
    loads = routing.route(net, [1], [2], np.ones((1, 1)))[0]
    used = {net.link_name(i) for i in np.flatnonzero(loads)}
    assert used == {
        "g0 r1 global port 0",
        "g2 r0 -> r1 (local)",
        "g2 r1 global port 0",
    }
    assert np.allclose(loads[loads > 0], 1.0)
    assert routing.expected_hops(net, [1], [2]).tolist() == [3.0]
    # Inside a group Valiant stays minimal.
    assert routing.expected_hops(net, [0], [1]).tolist() == [1.0]
