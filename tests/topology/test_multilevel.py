"""The multilevel mapper and the contention refinement: valid placements, figures checked
against independent references (BFS distances, per-flow routing walks), never-worsening
refinement, phases weighed by their repeat counts, improvement over the permutations, and
the time budget by the optimisers' own stop reasons."""

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from reference_routing import torus_adaptive_reference, torus_bfs_distances, torus_dor_reference

from petacomm.topology import contention as ct
from petacomm.topology import multilevel as ml
from petacomm.topology.irregular_graphs import make_graph
from petacomm.topology.mapping import Mapping, all_permutations, permutation_mapping
from petacomm.topology.mapping_search import communication_graph
from petacomm.topology.metrics import evaluate_mapping
from petacomm.topology.network import parse_network
from petacomm.topology.pattern import CommPattern, Phase
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.routing import parse_routing


# ---- independent references --------------------------------------------------------------------
def reference_hop_bytes(net, pattern, node) -> float:
    """Sum over phases of repeat x bytes x BFS hops between the two ranks' nodes."""
    dist = {}
    total = 0.0
    for ph in pattern.phases:
        for s, d, b in zip(ph.src.tolist(), ph.dst.tolist(), ph.nbytes.tolist(), strict=True):
            a, t = int(node[s]), int(node[d])
            if t not in dist:
                dist[t] = torus_bfs_distances(net, t)
            total += ph.repeat * b * dist[t][a]
    return total


def reference_link_bytes(net, pattern, node, routing) -> np.ndarray:
    """Bytes on every link over all phases (times repeats), routed message by message."""
    loads = np.zeros(net.num_links)
    for ph in pattern.phases:
        sn, dn = node[ph.src], node[ph.dst]
        inter = sn != dn
        w = (ph.nbytes[inter] * ph.repeat)[None, :]
        if routing == "dor":
            loads += torus_dor_reference(net, sn[inter], dn[inter], w, range(net.ndim))[0]
        else:
            loads += torus_adaptive_reference(net, sn[inter], dn[inter], w, "hop")[0]
    return loads


def check_placement(net, node, nranks):
    """Every rank on a real node, no node holding more ranks than it has cores."""
    assert len(node) == nranks
    assert all(0 <= n < net.num_nodes for n in node.tolist())
    assert max(Counter(node.tolist()).values()) <= net.cores_per_node


# ---- placements --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "network, nranks",
    [
        ("torus:4x4x2:t=2", 64),  # every slot used
        ("torus:4x4x2:t=2", 1),
        ("torus:4x4x2:t=2", 7),
        ("mesh:3x5:t=3", 45),  # odd sizes, full
        ("mesh:3x5:t=3", 31),
        ("torus:5x3", 15),  # one core per node
        ("fattree:2;4,4;1,2;1,2:t=4", 61),
        ("dragonfly:5,2,2,2:t=3", 58),
    ],
)
def test_multilevel_places_every_rank_once_within_capacity(network, nranks):
    net = parse_network(network)
    if nranks == 1:
        pattern = CommPattern(1, [Phase("p", [0], [0], [8.0])])
    else:
        pattern = make_graph("rgg", nranks, seed=3)
    m = ml.multilevel_mapping(pattern, net, time_budget=30)
    m.validate(net)
    check_placement(net, m.node, nranks)
    # Cores: the ranks of a node take distinct cores below the core count.
    slots = Counter(zip(m.node.tolist(), m.core.tolist(), strict=True))
    assert max(slots.values()) == 1 and m.core.max() < net.cores_per_node
    assert m.stop_reason == "converged"


def test_metrics_of_a_multilevel_mapping_match_the_references():
    net = parse_network("torus:4x2x2:t=4")
    pattern = make_graph("delaunay", 64, seed=1)
    m = ml.multilevel_mapping(pattern, net, time_budget=30)
    check_placement(net, m.node, 64)
    for routing in ("dor", "adaptive"):
        met = evaluate_mapping(net, parse_routing(routing, net), pattern, m, keep_loads=True)
        assert met.hop_bytes == pytest.approx(reference_hop_bytes(net, pattern, m.node))
        ref = reference_link_bytes(net, pattern, m.node, routing)
        assert np.allclose(met.link_bytes, ref)
        assert met.max_link_bytes == pytest.approx(ref.max())


def test_multilevel_beats_every_permutation_on_an_irregular_graph():
    # A random geometric graph numbered along a Z-order curve: permutation strings keep
    # some locality, but none fits the graph; the reference measures both.
    net = parse_network("torus:4x4x4:t=4")
    pattern = make_graph("rgg", 256, seed=2)
    m = ml.multilevel_mapping(pattern, net, time_budget=30)
    ours = reference_hop_bytes(net, pattern, m.node)
    best = min(
        evaluate_mapping(
            net, parse_routing("dor", net), pattern, permutation_mapping(p, net, 256)
        ).hop_bytes
        for p in all_permutations(net)
    )
    assert ours < 0.85 * best


def test_phases_weigh_by_their_repeat_count():
    # 4 ranks on 2 nodes of 2 cores. Phase a (once): 0<->1 and 2<->3, 3 MiB each way.
    # Phase b (x10): 0<->2 and 1<->3, 1 MiB each way. Pairing {0,2},{1,3} sends phase a
    # across: 4 messages x 3 MiB x 1 hop = 12 MiB*hop; pairing {0,1},{2,3} would cost phase
    # b's 4 x 1 MiB x 10 = 40 MiB*hop. Without the repeat count the second would look best.
    mib = 1024.0**2
    a = Phase("a", [0, 1, 2, 3], [1, 0, 3, 2], [3 * mib] * 4, repeat=1)
    b = Phase("b", [0, 2, 1, 3], [2, 0, 3, 1], [1 * mib] * 4, repeat=10)
    pattern = CommPattern(4, [a, b])
    net = parse_network("torus:2:t=2")
    m = ml.multilevel_mapping(pattern, net, time_budget=30)
    assert m.node[0] == m.node[2] and m.node[1] == m.node[3]
    assert reference_hop_bytes(net, pattern, m.node) == 12 * mib
    # The contention refinement weighs the phases the same way: its loads are the
    # reference's (12 MiB over the one link each way... 6 MiB per direction).
    routing = parse_routing("dor", net)
    node, stats = ct.refine_contention(pattern, net, routing, m.node, communication_graph(pattern))
    assert stats.max_link_bytes_before == reference_link_bytes(net, pattern, m.node, "dor").max()
    assert stats.max_link_bytes_before == 6 * mib


# ---- refinement --------------------------------------------------------------------------------
def test_refinement_never_raises_hop_bytes_and_repairs_a_random_placement():
    net = parse_network("torus:4x4x2:t=2")
    pattern = make_graph("rgg", 64, seed=5)
    graph = communication_graph(pattern)
    rng = np.random.default_rng(0)
    for trial in range(3):
        start = np.repeat(np.arange(32), 2)[rng.permutation(64)]
        before = reference_hop_bytes(net, pattern, start)
        node, stats = ml.refine_placement(graph, net, start, time_budget=30)
        check_placement(net, node, 64)
        after = reference_hop_bytes(net, pattern, node)
        assert after <= before
        assert after < 0.8 * before, f"trial {trial}: a random placement should improve a lot"
        assert stats.swaps > 0 and stats.stop_reason == "converged"


def test_refinement_limited_to_passes_and_steps_stops_there():
    # A random placement needs several passes and changes: the limits stop both stages
    # there, whatever the time left, with a result between the start and the converged one.
    net = parse_network("torus:4x4x2:t=2")
    pattern = make_graph("rgg", 64, seed=5)
    graph = communication_graph(pattern)
    start = np.repeat(np.arange(32), 2)[np.random.default_rng(0).permutation(64)]
    one, stats = ml.refine_placement(graph, net, start, time_budget=30, max_passes=1)
    full, _ = ml.refine_placement(graph, net, start, time_budget=30)
    assert stats.passes == 1 and stats.stop_reason == "refinement limit"
    hop = [reference_hop_bytes(net, pattern, x) for x in (start, one, full)]
    assert hop[0] > hop[1] > hop[2]
    routing = parse_routing("adaptive", net)
    limited, st = ct.refine_contention(
        pattern, net, routing, one, graph, time_budget=30, hop_slack=0.5, max_steps=1
    )
    _, unlimited = ct.refine_contention(pattern, net, routing, one, graph, 30, hop_slack=0.5)
    assert st.steps == 1 and st.stop_reason == "refinement limit" and unlimited.steps > 1
    assert st.max_link_bytes_after < st.max_link_bytes_before
    assert reference_link_bytes(net, pattern, limited, "adaptive").max() == pytest.approx(
        st.max_link_bytes_after
    )


def test_refinement_keeps_an_optimal_placement():
    # A 16-rank ring on an 8-node ring with 2 cores: block placement (ranks 2i, 2i+1 on
    # node i) sends 16 messages one hop; no placement does better (each node holds at most
    # 2 ranks of the ring, so at least 8 ring edges cross nodes, each both ways).
    net = parse_network("torus:8:t=2")
    pattern = parse_pattern("ranks 16; ring 1KiB both")
    graph = communication_graph(pattern)
    block = np.arange(16) // 2
    node, _ = ml.refine_placement(graph, net, block, time_budget=30)
    assert reference_hop_bytes(net, pattern, node) == 16 * 1024


def test_refinement_empties_over_full_nodes():
    net = parse_network("torus:4:t=2")
    pattern = parse_pattern("ranks 8; ring 1KiB both")
    graph = communication_graph(pattern)
    crowded = np.array([0, 0, 0, 0, 1, 1, 2, 3])  # node 0 holds 4 ranks, 2 cores
    node, stats = ml.refine_placement(graph, net, crowded, time_budget=30)
    check_placement(net, node, 8)
    assert stats.rebalanced >= 2


def test_time_budget_stops_the_mapper_with_a_valid_placement():
    net = parse_network("torus:8x8x4:t=4")
    pattern = make_graph("rgg", 1024, seed=1)
    m = ml.multilevel_mapping(pattern, net, time_budget=1e-6)
    assert m.stop_reason == "time budget" and m.name == "multilevel (budget hit)"
    check_placement(net, m.node, 1024)


# ---- coarsening --------------------------------------------------------------------------------
def test_coarse_graph_keeps_every_edge_weight():
    rng = np.random.default_rng(4)
    n = 40
    dense = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.2), 1)
    graph = sp.csr_matrix(dense + dense.T)
    weight = np.ones(n)
    coarse = ml.heavy_edge_matching(graph, weight, 2.0, rng)
    cg, cw = ml._contract(graph, weight, coarse)
    # By hand: the weight between two coarse vertices sums every fine edge joining them.
    expected = np.zeros((cg.shape[0],) * 2)
    for i in range(n):
        for j in range(n):
            if coarse[i] != coarse[j]:
                expected[coarse[i], coarse[j]] += dense[i, j] + dense[j, i]
    assert np.allclose(cg.toarray(), expected)
    # Merged vertices were adjacent and never outweigh the limit.
    members = Counter(coarse.tolist())
    assert max(members.values()) <= 2 and np.allclose(cw, [members[c] for c in range(len(cw))])
    for c, count in members.items():
        if count == 2:
            i, j = np.flatnonzero(coarse == c)
            assert dense[min(i, j), max(i, j)] > 0
    assert cg.shape[0] < 0.8 * n  # a random graph's matching merges most vertices


def test_matching_respects_labels():
    graph = parse_pattern("ranks 8; ring 1 both")
    g = communication_graph(graph)
    label = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    coarse = ml.heavy_edge_matching(g, np.ones(8), 4.0, np.random.default_rng(0), label)
    for c in set(coarse.tolist()):
        assert len(set(label[coarse == c].tolist())) == 1


def test_machine_hierarchy_halves_groups_down_to_nodes():
    net = parse_network("torus:3x4:t=2")  # 12 nodes: odd halves on the way
    hier = ml.MachineHierarchy(net)
    assert hier.num_groups(0) == 1 and hier.num_groups(hier.depth) == 12
    assert sorted(hier.group[hier.depth].tolist()) == list(range(12))
    for d in range(1, hier.depth + 1):
        # Every group of depth d lies inside one group of depth d - 1 (its parent).
        up = hier.parent[d][hier.group[d]]
        assert np.array_equal(up, hier.group[d - 1])
        assert hier.capacity[d].sum() == 24
    # Groups are boxes: the distance of single nodes is the BFS hop distance.
    ids = np.arange(12)
    nodes_of_group = np.empty(12, dtype=int)
    nodes_of_group[hier.group[hier.depth]] = ids
    for g in range(12):
        bfs = torus_bfs_distances(net, int(nodes_of_group[g]))
        got = hier.distance(hier.depth, np.full(12, g), hier.depth, ids)
        assert got.tolist() == [bfs[int(nodes_of_group[h])] for h in ids]


# ---- contention refinement ---------------------------------------------------------------------
@pytest.mark.parametrize("routing_name", ["dor", "adaptive"])
def test_pair_link_matrix_is_the_routing_of_every_pair(routing_name):
    """Against plain reference routings (tests/topology/reference_routing.py)."""
    net = parse_network("torus:4x3x2")
    routing = parse_routing(routing_name, net)
    pairs = ct.pair_link_matrix(net, routing)
    src, dst = np.divmod(np.arange(24 * 24), 24)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    got = pairs.matrix[pairs.rows(src, dst)].toarray()
    ones = np.eye(src.size)
    if routing_name == "dor":
        ref = torus_dor_reference(net, src, dst, ones, range(3))
    else:
        ref = torus_adaptive_reference(net, src, dst, ones, "hop")
    assert np.allclose(got, ref)
    for link in (0, 5, 77, net.num_links - 1):
        column = pairs.column(link)[pairs.rows(src, dst)]
        assert np.allclose(column, ref[:, link])


@pytest.mark.parametrize(
    "network_text, routing_name",
    [
        ("torus:4x4x2", "dor-simgrid"),
        ("torus:4x4x2", "adaptive:paths"),
        ("torus:4x4x2", "dor:ZYX"),
        # A ring by a line: no translation symmetry along the line, so no template.
        ("torus:4x3:wrap=1,0", "dor"),
        ("torus:4x3:wrap=1,0", "adaptive"),
        ("fattree:2;4,4;1,4;1,1", "dmodk"),
        ("fattree:2;4,4;1,4;1,1", "ecmp"),
    ],
)
def test_pair_link_matrix_is_the_routing_models_own(network_text, routing_name):
    """Every row is what the routing model gives that node pair: from a template moved by
    translation, from each pair's listed links (dor-simgrid, dmodk) or from unit flows
    (ecmp). SimGrid's tie rule (dor-simgrid) sends a half-ring displacement one way or the
    other by the source's coordinate, so its rows are not the template from node 0 moved:
    built that way, 349 of the 992 node pairs of the torus (of the 736 with a half-ring
    displacement) were on the wrong links."""
    net = parse_network(network_text)
    routing = parse_routing(routing_name, net)
    nn = net.num_nodes
    src, dst = np.divmod(np.arange(nn * nn), nn)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    pairs = ct.pair_link_matrix(net, routing)
    got = pairs.matrix[pairs.rows(src, dst)].toarray()
    assert np.allclose(got, routing.route(net, src, dst, np.eye(src.size)), atol=1e-12)


def test_pair_link_matrix_is_the_same_built_a_few_sources_at_a_time(monkeypatch):
    """The translated templates are written a block of sources at a time: blocks of 1 and
    of 7 sources (the last one short) give the matrix one block gives."""
    net = parse_network("torus:4x3x2")
    routing = parse_routing("adaptive", net)
    whole = ct._build_pair_links(net, routing).matrix
    per_source = whole.nnz // net.num_nodes  # entries of the routed template
    for sources in (1, 7):
        monkeypatch.setattr(ct, "_SHIFT_BLOCK_ENTRIES", sources * max(per_source, net.num_nodes))
        blocked = ct._build_pair_links(net, routing).matrix
        assert (blocked != whole).nnz == 0
        assert np.array_equal(blocked.indptr, whole.indptr)


@pytest.mark.parametrize(
    "network_text, routing_name",
    [("torus:4x4x2", "dor-simgrid"), ("fattree:2;4,4;1,4;1,1", "dmodk"), ("mesh:3x5", "dor")],
)
def test_listed_pair_links_are_the_same_listed_a_few_sources_at_a_time(
    monkeypatch, network_text, routing_name
):
    """Single routes are listed a block of sources at a time: blocks of 1 and of 7 sources
    (the last one short) give the matrix one block gives."""
    net = parse_network(network_text)
    routing = parse_routing(routing_name, net)
    assert ct.lists_routes(routing) and not ct._by_template(net, routing)
    whole = ct._build_pair_links(net, routing).matrix
    for sources in (1, 7):
        monkeypatch.setattr(ct, "_SHIFT_BLOCK_ENTRIES", sources * net.num_nodes)
        blocked = ct._build_pair_links(net, routing).matrix
        assert (blocked != whole).nnz == 0
        assert np.array_equal(blocked.indptr, whole.indptr)


def test_listed_pair_links_over_the_limit_are_refused_before_any_route_is_listed(monkeypatch):
    """The entries (one per hop) are counted from the hop distances first; listing the
    routes of a network over the limit once took 1.2 GiB before the count was known."""
    net = parse_network("torus:4x4x2")
    routing = parse_routing("dor-simgrid", net)
    # Independent count: breadth-first distances between every pair of distinct nodes.
    hops = sum(sum(torus_bfs_distances(net, t)) for t in range(net.num_nodes))
    built = ct._build_pair_links(net, routing)
    assert built.matrix.nnz == hops
    assert built.matrix.sum() == pytest.approx(hops)

    def no_listing(*args):
        raise AssertionError("routes listed for a network over the limit")

    monkeypatch.setattr(type(routing), "route_links", no_listing)
    monkeypatch.setattr(ct, "MAX_PAIR_ENTRIES", hops - 1)
    assert ct._build_pair_links(net, routing) is None
    monkeypatch.setattr(ct, "MAX_PAIR_ENTRIES", net.num_nodes * (net.num_nodes - 1) - 1)
    assert ct._build_pair_links(net, routing) is None


def test_the_pair_link_cache_tells_routings_apart(monkeypatch):
    """Two routings of one network never share a cached matrix, even when their
    descriptions are alike (dor-simgrid with another dimension order)."""
    from petacomm.topology.routing import DimensionOrderRouting

    net = parse_network("torus:4x4x2")
    nn = net.num_nodes
    src, dst = np.divmod(np.arange(nn * nn), nn)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    first = DimensionOrderRouting(None, "simgrid")
    other = DimensionOrderRouting((2, 1, 0), "simgrid")
    assert first.describe(net) == other.describe(net)
    monkeypatch.setattr(ct, "_PAIR_CACHE", {})
    assert ct.pair_link_matrix(net, first) is not None
    assert ct.cached_pair_links(net, other) is None
    assert ct.cached_pair_links(net, parse_routing("adaptive", net)) is None
    pairs = ct.pair_link_matrix(net, other)
    got = pairs.matrix[pairs.rows(src, dst)].toarray()
    assert np.allclose(got, other.route(net, src, dst, np.eye(src.size)), atol=1e-12)
    assert not np.allclose(got, first.route(net, src, dst, np.eye(src.size)), atol=1e-12)


@pytest.mark.parametrize("by_sender", [True, False])
def test_messages_by_rank_are_each_ranks_sends_then_receives(by_sender):
    rng = np.random.default_rng(5 if by_sender else 6)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        m = int(rng.integers(0, 40))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)  # ranks without messages too
        if by_sender:
            src = np.sort(src)
        rank_start, incident = ct.messages_by_rank(src, dst, n)
        # Plainly: rank r's sends in message order, then its receives in message order.
        want = [
            [i for i in range(m) if src[i] == r] + [i for i in range(m) if dst[i] == r]
            for r in range(n)
        ]
        got = [incident[rank_start[r] : rank_start[r + 1]].tolist() for r in range(n)]
        assert got == want and rank_start[0] == 0 and rank_start[-1] == 2 * m


def test_contention_refinement_lowers_the_busiest_link_without_raising_hop_bytes():
    net = parse_network("torus:4x4x2:t=2")
    pattern = make_graph("rgg", 64, seed=7)
    graph = communication_graph(pattern)
    node, _ = ml.refine_placement(graph, net, np.repeat(np.arange(32), 2), time_budget=30)
    routing = parse_routing("adaptive", net)
    before_hop = reference_hop_bytes(net, pattern, node)
    before_max = reference_link_bytes(net, pattern, node, "adaptive").max()
    refined, stats = ct.refine_contention(
        pattern, net, routing, node, graph, time_budget=30, hop_slack=0.02
    )
    check_placement(net, refined, 64)
    after_hop = reference_hop_bytes(net, pattern, refined)
    after_max = reference_link_bytes(net, pattern, refined, "adaptive").max()
    assert stats.max_link_bytes_before == pytest.approx(before_max)
    assert stats.max_link_bytes_after == pytest.approx(after_max)
    assert after_max < before_max and stats.steps > 0
    assert after_hop <= before_hop * 1.02 + 1e-6
    # With no allowance hop-bytes may not rise at all.
    strict, _ = ct.refine_contention(pattern, net, routing, node, graph, time_budget=30)
    assert reference_hop_bytes(net, pattern, strict) <= before_hop
    assert reference_link_bytes(net, pattern, strict, "adaptive").max() <= before_max


def test_refinement_moves_a_rank_to_a_free_core_and_never_overfills_a_node():
    # Ring of 4 nodes of 2 cores, adaptive routing; rank 0 exchanges 1 MB each way with
    # ranks 1 and 2, ranks on nodes 0, 1, 2. Link loads: 0<->1 puts 1 MB on +X at 0 and -X
    # at 1; 0<->2 is a half ring, split in two: 0.5 MB on each of +X0, +X1, -X0, -X3 and
    # +X2, +X3, -X2, -X1. Busiest: +X0 with 1.5 MB. Rank 1 moving to node 0's free core
    # leaves only 0<->2: 0.5 MB on 8 links, hop-bytes lower. Node 0 is then full: rank 2
    # cannot join it, and a move to node 1 or 3 (1 hop: 1 MB on one link) is worse.
    net = parse_network("torus:4:t=2")
    pattern = CommPattern(3, [Phase("p", [0, 1, 0, 2], [1, 0, 2, 0], [1e6] * 4)])
    routing = parse_routing("adaptive", net)
    node, stats = ct.refine_contention(
        pattern, net, routing, np.array([0, 1, 2]), communication_graph(pattern), 30, max_steps=5
    )
    check_placement(net, node, 3)
    assert node.tolist() == [0, 0, 2] and stats.steps == 1 and stats.stop_reason == "converged"
    assert (stats.max_link_bytes_before, stats.max_link_bytes_after) == (1.5e6, 0.5e6)


@pytest.mark.parametrize("seed", range(4))
def test_swaps_of_ranks_that_message_each_other_keep_the_loads_exact(seed):
    """Every node full (1 core each), so every change is a swap, on directed messages of
    unequal sizes each way: a swap's change must count a message between the two swapped
    ranks once. The loads the refinement keeps (its after-figure) against a routing of
    every message of the final placement (reference_link_bytes)."""
    rng = np.random.default_rng(seed)
    net = parse_network("torus:4x4")
    n = 16
    src, dst = np.nonzero(np.triu(rng.random((n, n)) < 0.35, 1))
    # both ways, with unequal sizes: u -> v and v -> u
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    nbytes = rng.integers(1, 1000, src.size) * 1000.0
    pattern = CommPattern(n, [Phase("p", src, dst, nbytes)])
    routing = parse_routing("dor", net)
    start = rng.permutation(n)
    node, stats = ct.refine_contention(
        pattern, net, routing, start, communication_graph(pattern), 30, hop_slack=0.5
    )
    check_placement(net, node, n)
    assert stats.steps > 0
    assert stats.max_link_bytes_before == reference_link_bytes(net, pattern, start, "dor").max()
    after = reference_link_bytes(net, pattern, node, "dor").max()
    assert stats.max_link_bytes_after == pytest.approx(after, rel=1e-12, abs=0)
    assert after < stats.max_link_bytes_before


def test_refinement_with_nothing_to_gain_takes_no_step():
    # Ranks 0 and 1 exchange 100 B on nodes 0 and 1 of a ring of 4 (1 core each): +X at 0
    # and -X at 1 carry 100 B each. Rank 0 to node 2 (1 hop from rank 1) moves that load to
    # two other links, equally busy; to node 3 (2 hops) raises hop-bytes; the swap mirrors
    # the loads. Nothing lowers the busiest link or the number of links that carry it.
    net = parse_network("torus:4")
    pattern = CommPattern(2, [Phase("p", [0, 1], [1, 0], [100, 100])])
    node, stats = ct.refine_contention(
        pattern, net, parse_routing("adaptive", net), np.array([0, 1]),
        communication_graph(pattern), time_budget=30, max_steps=3,
    )  # fmt: skip
    assert node.tolist() == [0, 1] and stats.steps == 0 and stats.stop_reason == "converged"


def test_candidate_nodes_are_those_within_two_hops():
    # The refinement tries the nodes within two hops of a rank's node (module docstring):
    # against breadth-first search on a 5x4 torus.
    net = parse_network("torus:5x4")
    near = ct._near_nodes(net, ct._distances(net))
    for target in range(net.num_nodes):
        bfs = torus_bfs_distances(net, target)
        assert near[target].tolist() == [v for v in range(net.num_nodes) if bfs[v] <= 2]


@pytest.mark.parametrize(
    "network_text, routing_name",
    [
        ("torus:4x3x2:t=3", "adaptive"),
        ("torus:4x3x2:t=3", "dor"),
        ("fattree:2;4,6;1,2;1,1:t=3", "ecmp"),
    ],
)
def test_a_placement_updated_for_the_ranks_that_moved_is_placed_anew(network_text, routing_name):
    # moved() looks again only at the messages of ranks placed elsewhere: its loads and
    # hop-bytes must be a fresh placement's, checked against routing every message (and BFS
    # hops on the torus). Moves to free cores, swaps, ranks that moved with their partners
    # (a message between two moved ranks counted once), a rank without messages, no move.
    net = parse_network(network_text)
    assert net.num_nodes == 24
    routing = parse_routing(routing_name, net)

    def references(node):
        if routing_name == "ecmp":
            m = Mapping("x", node, ml.cores_in_rank_order(node))
            routed = evaluate_mapping(net, routing, pattern, m, keep_loads=True)
            return routed.hop_bytes, routed.link_bytes
        return (
            reference_hop_bytes(net, pattern, node),
            reference_link_bytes(net, pattern, node, routing_name),
        )

    pattern = make_graph("rgg", 61, seed=3)  # 61 ranks on 72 cores: free cores to move to
    keep = pattern.phases[0].src != 60  # rank 60 neither sends nor receives
    keep &= pattern.phases[0].dst != 60
    ph = pattern.phases[0]
    pattern.phases[0] = Phase(ph.name, ph.src[keep], ph.dst[keep], ph.nbytes[keep], ph.repeat)
    graph = communication_graph(pattern)
    fixed = ct.prepare_contention(pattern, net, routing, graph)
    rng = np.random.default_rng(2)
    first = rng.permutation(np.repeat(np.arange(24), 3))[:61]
    start = fixed.place(first)
    hop, loads = references(first)
    assert start.hop_bytes == pytest.approx(hop, rel=1e-12)
    assert np.allclose(start.loads, loads, rtol=1e-12, atol=1e-6)
    for trial in range(12):
        node = first.copy()
        ranks = rng.choice(60, size=int(rng.integers(0, 12)), replace=False)
        if trial % 2:
            ranks = np.append(ranks, 60)
        node[ranks] = rng.permutation(node[ranks])  # swaps among the chosen ranks
        free = np.flatnonzero(np.bincount(node, minlength=24) < 3)
        if ranks.size and free.size:
            node[ranks[0]] = free[0]  # and one move to a free core
        got = fixed.moved(start, node)
        hop, loads = references(node)
        assert got.hop_bytes == pytest.approx(hop, rel=1e-12)
        assert np.allclose(got.loads, loads, rtol=1e-12, atol=1e-6)
        assert np.array_equal(got.rows, fixed.place(node).rows)
        assert np.array_equal(got.node, node)
    # The start is left as it was (the refinement writes into what moved() returns).
    assert np.array_equal(start.node, first)
    assert np.array_equal(start.rows, fixed.place(first).rows)


def test_contention_refinement_from_a_placed_start_refines_alike():
    # scotch_mapping hands refine_contention the placement it started the hop-bytes stage
    # from: the refinement must do what it does from scratch.
    net = parse_network("torus:4x4x2:t=2")
    routing = parse_routing("adaptive", net)
    pattern = make_graph("delaunay", 64, seed=7)
    graph = communication_graph(pattern)
    start = np.repeat(np.arange(32), 2)[np.random.default_rng(4).permutation(64)]
    node, _ = ml.refine_placement(graph, net, start, time_budget=30, max_passes=1)
    assert (node != start).sum() > 4
    fixed = ct.prepare_contention(pattern, net, routing, graph)
    plain, plain_stats = ct.refine_contention(
        pattern, net, routing, node, graph, 30, prepared=fixed
    )
    placed, placed_stats = ct.refine_contention(
        pattern, net, routing, node, graph, 30, prepared=fixed, start=fixed.place(start)
    )
    assert plain_stats.steps > 0
    assert np.array_equal(plain, placed) and plain_stats.steps == placed_stats.steps
    assert placed_stats.max_link_bytes_before == pytest.approx(
        reference_link_bytes(net, pattern, node, "adaptive").max()
    )
    # A start placed for other messages (another graph of as many ranks, or messages
    # prepared anew because none were given) would give another pattern's loads: refused.
    other_pattern = make_graph("rgg", 64, seed=1)
    other = ct.prepare_contention(
        other_pattern, net, routing, communication_graph(other_pattern)
    ).place(start)
    for prepared, begun in ((fixed, other), (None, fixed.place(start))):
        with pytest.raises(ValueError, match="start: placed for other messages"):
            ct.refine_contention(
                pattern, net, routing, node, graph, 30, prepared=prepared, start=begun
            )
    with pytest.raises(ValueError, match="node: 63 ranks, the start placed 64"):
        fixed.moved(fixed.place(start), node[:63])


def test_contention_refinement_leaves_networks_too_large_alone():
    net = parse_network("torus:64x64x64")
    pattern = parse_pattern("ranks 4; ring 1 both")
    node, stats = ct.refine_contention(
        pattern, net, parse_routing("dor", net), np.arange(4), communication_graph(pattern)
    )
    assert node.tolist() == [0, 1, 2, 3]
    assert stats.stop_reason.startswith("network too large")


def test_predicted_times_of_candidates_for_the_simulator_check():
    # The documented entry point for comparing predictions with simulations: one number
    # per mapping, the same as the ranking's.
    from petacomm.topology.metrics import cost_parameters_from_model, predicted_times

    net = parse_network("torus:4x2:t=2")
    pattern = parse_pattern("grid2d 4x4 star 64KiB")
    routing = parse_routing("dor", net)
    cost = cost_parameters_from_model()
    mappings = [permutation_mapping(p, net, 16) for p in ("TXY", "XYT")]
    times = predicted_times(net, routing, pattern, mappings, cost)
    assert list(times) == ["TXY", "XYT"]
    for m in mappings:
        assert (
            times[m.name] == evaluate_mapping(net, routing, pattern, m, cost=cost).predicted_time_s
        )


def test_mapping_class_with_stop_reason_defaults_empty():
    assert Mapping("x", [0], [0]).stop_reason == ""


def test_link_loads_from_the_pair_matrix_match_the_routed_evaluation():
    net = parse_network("torus:4x4x2:t=2")
    routing = parse_routing("adaptive", net)
    pattern = make_graph("delaunay", 64, seed=4)
    rng = np.random.default_rng(1)
    node = rng.permutation(np.repeat(np.arange(32), 2))
    m = Mapping("random", node, ml.cores_in_rank_order(node))
    expected = evaluate_mapping(net, routing, pattern, m, keep_loads=True).link_bytes
    assert np.allclose(ct.link_loads(pattern, net, routing, node), expected, rtol=1e-9)


@pytest.mark.parametrize(
    "network_text, routing_name",
    [
        ("torus:4x4x2:t=2", "adaptive"),
        ("torus:4x4x2:t=2", "dor"),
        ("torus:4x4x2:t=2", "dor-simgrid"),
        ("fattree:2;4,4;1,4;1,1:t=4", "ecmp"),
    ],
)
def test_evaluation_with_the_pair_matrix_matches_routing_every_flow(network_text, routing_name):
    """Every metric of a mapping, link loads taken from the pair-link matrix against the
    node pairs routed by the routing model: two phases (one repeated) so loads add up."""
    net = parse_network(network_text)
    routing = parse_routing(routing_name, net)
    pattern = make_graph("delaunay", 64, seed=4)
    extra = pattern.phases[0]
    pattern.phases.append(Phase("again", extra.dst, extra.src, extra.nbytes * 3, repeat=2))
    node = np.random.default_rng(1).permutation(
        np.repeat(np.arange(net.num_nodes), 64 // net.num_nodes)
    )
    m = Mapping("random", node, ml.cores_in_rank_order(node))
    routed = evaluate_mapping(net, routing, pattern, m, keep_loads=True)
    pairs = ct.pair_link_matrix(net, routing)
    assert pairs is not None
    summed = evaluate_mapping(net, routing, pattern, m, keep_loads=True, pairs=pairs)
    assert np.allclose(summed.link_bytes, routed.link_bytes, rtol=1e-12, atol=1e-9)
    assert np.allclose(summed.link_flows, routed.link_flows, rtol=1e-12, atol=1e-12)
    for name in ("hop_bytes", "avg_dilation_hops", "max_dilation_hops", "max_contention_flows",
                 "avg_contention_flows", "max_link_bytes", "avg_link_bytes"):  # fmt: skip
        assert getattr(summed, name) == pytest.approx(getattr(routed, name), rel=1e-12), name
    assert (summed.used_links, summed.messages) == (routed.used_links, routed.messages)
    assert routed.max_link_bytes > 0


def test_a_search_sums_pair_link_rows_only_when_they_pay(monkeypatch):
    """evaluate_many builds the pair-link matrix when its candidates carry enough messages
    per row (module docstring of evaluation_pool) and then reports what routing gives."""
    from petacomm.topology import evaluation_pool as pool

    net = parse_network("torus:4x4x2:t=2")
    routing = parse_routing("adaptive", net)
    pattern = make_graph("delaunay", 64, seed=4)  # 352 messages, 32 nodes
    mappings = [permutation_mapping(p, net, 64) for p in ("XYZT", "TZYX", "ZTXY")]
    monkeypatch.setattr(ct, "_PAIR_CACHE", {})
    summed_rows = []
    loads = ct.PairLinks.loads
    monkeypatch.setattr(
        ct.PairLinks, "loads", lambda self, *a: summed_rows.append(1) or loads(self, *a)
    )
    assert pool.pair_links_for_search(net, routing, pattern, 3) is None  # < 8 per row
    routed = pool.evaluate_many(net, routing, pattern, mappings, jobs=1)
    assert ct.cached_pair_links(net, routing) is None and not summed_rows
    monkeypatch.setattr(pool, "PAIR_LINKS_MESSAGES_PER_ROW", 1)
    assert pool.pair_links_for_search(net, routing, pattern, 3) is not None
    summed = pool.evaluate_many(net, routing, pattern, mappings, jobs=1)
    assert ct.cached_pair_links(net, routing) is not None
    assert len(summed_rows) == len(mappings)  # one phase: one sum of rows per mapping
    for a, b in zip(routed, summed, strict=True):
        assert b.max_link_bytes == pytest.approx(a.max_link_bytes, rel=1e-12)
        assert b.max_contention_flows == pytest.approx(a.max_contention_flows, rel=1e-12)
        assert b.hop_bytes == pytest.approx(a.hop_bytes, rel=1e-12)
    monkeypatch.setattr(pool, "PAIR_LINKS_MAX_NODES", 16)  # a cached matrix is used anyway
    assert pool.pair_links_for_search(net, routing, pattern, 3) is not None


@pytest.mark.parametrize(
    "network_text, routing_name, built",
    [
        ("torus:4x4x2:t=2", "adaptive", True),  # one template
        ("torus:4x4x2:t=2", "dor-simgrid", True),  # single routes listed
        ("fattree:2;4,8;1,4;1,1:t=2", "dmodk", True),
        ("mesh:4x4x2:t=2", "adaptive", False),  # unit flows for every pair of nodes
        ("fattree:2;4,8;1,4;1,1:t=2", "ecmp", False),
        ("dragonfly:4,3,2,1:t=2", "minimal", False),
    ],
)
def test_a_search_builds_only_a_pair_link_matrix_that_builds_quickly(
    monkeypatch, network_text, routing_name, built
):
    """Routing unit flows for every node pair (a mesh with adaptive routing, ECMP, a
    dragonfly) made searches 2-27x slower on 256 nodes than routing their evaluations."""
    from petacomm.topology import evaluation_pool as pool

    net = parse_network(network_text)
    routing = parse_routing(routing_name, net)
    pattern = make_graph("delaunay", 64, seed=4)
    monkeypatch.setattr(ct, "_PAIR_CACHE", {})
    monkeypatch.setattr(pool, "PAIR_LINKS_MESSAGES_PER_ROW", 1)
    assert ct.builds_quickly(net, routing) is built
    assert (pool.pair_links_for_search(net, routing, pattern, 24) is not None) is built
    assert (ct.cached_pair_links(net, routing) is not None) is built


def test_without_diagonal_against_a_dense_reference():
    rng = np.random.default_rng(3)
    dense = rng.integers(0, 3, size=(9, 9)).astype(float)
    dense[2, 5] = 0.0
    sparse = sp.csr_matrix(dense)
    sparse.data[0] = 0.0  # an explicit zero
    out = ml.without_diagonal(sparse)
    expected = sparse.toarray()
    np.fill_diagonal(expected, 0.0)
    assert np.array_equal(out.toarray(), expected)
    assert out.nnz == np.count_nonzero(expected) and out.has_sorted_indices


def test_edges_follow_the_phases_they_are_kept_for():
    pattern = CommPattern(4, [Phase("a", np.array([0, 1]), np.array([1, 0]), np.array([5.0, 5.0]))])
    assert pattern.edges()[2].tolist() == [5.0, 5.0]
    pattern.phases.append(Phase("b", np.array([0]), np.array([1]), np.array([2.0])))
    assert pattern.edges()[2].tolist() == [7.0, 5.0]
    pattern.phases[1].repeat = 3
    assert pattern.edges()[2].tolist() == [11.0, 5.0]
