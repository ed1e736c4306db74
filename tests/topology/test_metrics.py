"""Metrics definitions, the predicted time formula and the study's worked example."""

import numpy as np
import pytest

from petacomm.topology.mapping import Mapping, permutation_mapping
from petacomm.topology.metrics import CostParameters, cost_parameters_from_model, evaluate_mapping
from petacomm.topology.network import parse_network
from petacomm.topology.node_hierarchy import parse_synthetic
from petacomm.topology.pattern import CommPattern, Phase
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.ranking import candidate_mappings, rank_mappings
from petacomm.topology.routing import parse_routing


class TinyModel:
    """Stands in for petacomm.model.MachineModel's two methods (contract: alpha_beta, predict)."""

    def alpha_beta(self, op="pingpong", nbytes=None):
        assert op == "pingpong"
        return 2e-6, 1e-9

    def predict(self, op, nbytes, p=2):
        alpha, beta = self.alpha_beta(op, nbytes)
        return alpha + beta * nbytes


def test_predicted_time_formula_by_hand():
    # 4-node ring (torus:4, 1 core): ranks 0,1,2 send 1000 B to rank 3 (at 3, 2 and 1 hop
    # distance... on a 4-ring: node 0 -> 3 is 1 hop (-X), 1 -> 3 two hops, 2 -> 3 one hop).
    net = parse_network("torus:4")
    pattern = CommPattern(4, [Phase("p", [0, 1, 2], [3, 3, 3], [1000, 1000, 1000], repeat=2)])
    mapping = Mapping("id", [0, 1, 2, 3], [0, 0, 0, 0])
    cost = cost_parameters_from_model(TinyModel(), link_beta=4e-9)
    assert cost == CostParameters(2e-6, 1e-9, 4e-9)
    m = evaluate_mapping(
        net, parse_routing("dor", net), pattern, mapping, cost=cost, keep_loads=True
    )
    # DOR: 0->3 uses -X at 0; 1->3 uses +X at 1 and 2 (tie goes +); 2->3 uses +X at 2.
    # Link +X at node 2 carries 2000 B per phase; busiest sender: 1 message of 1000 B.
    assert m.max_link_bytes == 2 * 2000  # two repeats
    endpoint = 2e-6 + 1e-9 * 1000
    assert m.phase_times_s == pytest.approx([endpoint + 2000 * 4e-9])
    assert m.predicted_time_s == pytest.approx(2 * (endpoint + 2000 * 4e-9))
    assert m.hop_bytes == 2 * 1000 * (1 + 2 + 1)
    assert m.avg_dilation_hops == pytest.approx(4 / 3) and m.max_dilation_hops == 2
    assert m.messages == 6 and m.total_bytes == 6000


def test_contention_over_used_links_and_intra_inter_split():
    net = parse_network("mesh:3:t=2")
    pattern = parse_pattern("ranks 6; ring 100")  # 0->1->2->...->5->0
    mapping = permutation_mapping("TX", net, 6)  # pairs (0,1), (2,3), (4,5) share nodes
    m = evaluate_mapping(net, parse_routing("dor", net), pattern, mapping, keep_loads=True)
    assert m.intra_node_bytes == 300 and m.inter_node_bytes == 300
    # 1->2 and 3->4 use +X at nodes 0 and 1; 5->0 goes from node 2 back to node 0 (mesh):
    # -X at nodes 2 and 1. Used links: 4, loads 1,1,1,1 flows.
    assert m.used_links == 4 and m.max_contention_flows == 1 and m.avg_contention_flows == 1
    assert m.max_dilation_hops == 2


def test_intra_node_bytes_by_hierarchy_level():
    net = parse_network("torus:2:t=4")
    hierarchy = parse_synthetic("package:2 core:2")
    pattern = CommPattern(8, [Phase("p", [0, 0, 0], [1, 2, 4], [10, 20, 40])])
    mapping = permutation_mapping("TX", net, 8)
    m = evaluate_mapping(net, parse_routing("dor", net), pattern, mapping, hierarchy=hierarchy)
    assert m.intra_node_bytes_by_level == {
        "across package": 20.0,
        "within package": 10.0,
        "within core": 0.0,
    }
    assert m.inter_node_bytes == 40
    with pytest.raises(ValueError, match="has 8 cores but the network has 4"):
        evaluate_mapping(
            net, parse_routing("dor", net), pattern, mapping, hierarchy=parse_synthetic("core:8")
        )


def test_bytes_by_hierarchy_level_accumulate_over_phases_and_repeats():
    # Two nodes of 4 cores (packages {0,1} and {2,3}); TX puts ranks 0-3 on node 0, 4-7 on 1.
    # Phase A (x3): 0->1 10 B (same package), 0->2 20 B (other package).
    # Phase B (x2): 5->4 7 B (same package), 4->6 5 B (other package), 0->4 40 B (off node).
    net = parse_network("torus:2:t=4")
    a = Phase("A", [0, 0], [1, 2], [10, 20], repeat=3)
    b = Phase("B", [5, 4, 0], [4, 6, 4], [7, 5, 40], repeat=2)
    m = evaluate_mapping(
        net,
        parse_routing("dor", net),
        CommPattern(8, [a, b]),
        permutation_mapping("TX", net, 8),
        hierarchy=parse_synthetic("package:2 core:2"),
    )
    assert m.intra_node_bytes_by_level == {
        "across package": 3 * 20 + 2 * 5,
        "within package": 3 * 10 + 2 * 7,
        "within core": 0.0,
    }
    assert m.intra_node_bytes == 3 * 30 + 2 * 12 and m.inter_node_bytes == 2 * 40


@pytest.mark.parametrize("routing", ["dor", "adaptive", "adaptive:paths"])
def test_worked_example_tzxy_beats_txyz(routing):
    # 128x128 box stencil on 8x16x32 with 4 cores/node. TZXY lays a logical row of 128 along
    # Z (32 nodes x 4 cores) so vertical neighbours are one X hop away; TXYZ spreads a row
    # over four X-rows (4 cores x 8 X x 4 Y), so vertical neighbours are 4 Y hops away.
    net = parse_network("torus:8x16x32:t=4")
    pattern = parse_pattern("grid2d 128x128 box 1MiB")
    r = parse_routing(routing, net)
    tzxy = evaluate_mapping(net, r, pattern, permutation_mapping("TZXY", net, pattern.nranks))
    txyz = evaluate_mapping(net, r, pattern, permutation_mapping("TXYZ", net, pattern.nranks))
    assert tzxy.max_contention_flows < txyz.max_contention_flows
    assert tzxy.avg_contention_flows < txyz.avg_contention_flows
    assert tzxy.hop_bytes < txyz.hop_bytes
    assert tzxy.avg_dilation_hops < txyz.avg_dilation_hops


def test_ranking_orders_and_ratios():
    net = parse_network("torus:4x4x2:t=2")
    pattern = parse_pattern("grid2d 8x8 box 64KiB")
    mappings = candidate_mappings("TXYZ,XYZT,block,cyclic,tiles", net, pattern)
    names = [m.name for m in mappings]
    assert names[:4] == ["TXYZ", "XYZT", "block", "cyclic"] and "tile2x1" in names
    cost = CostParameters(1e-6, 1e-10, 1e-9)
    ranked = rank_mappings(net, parse_routing("adaptive", net), pattern, mappings, cost)
    times = [r.metrics.predicted_time_s for r in ranked]
    assert np.all(np.diff(times) >= -1e-12 * times[0]) and ranked[0].ratio_to_best == 1.0
    assert ranked[-1].ratio_to_best == pytest.approx(times[-1] / times[0])
    by_hops = rank_mappings(net, parse_routing("dor", net), pattern, mappings, cost, "hop-bytes")
    assert [r.metrics.hop_bytes for r in by_hops] == sorted(r.metrics.hop_bytes for r in by_hops)
    with pytest.raises(ValueError, match="unknown candidate 'TXY'"):
        candidate_mappings("TXY", net, pattern)


def test_loads_do_not_depend_on_message_order():
    net = parse_network("torus:4x4:t=2")
    pattern = parse_pattern("grid2d 8x4 periodic box 1KiB")
    shuffled = CommPattern(
        pattern.nranks,
        [
            Phase(
                "s",
                *(
                    a[np.random.default_rng(0).permutation(a.size)]
                    for a in (
                        pattern.phases[0].src,
                        pattern.phases[0].dst,
                        pattern.phases[0].nbytes,
                    )
                ),
            )
        ],
    )
    r = parse_routing("adaptive", net)
    m = permutation_mapping("XTY", net, 32)
    a = evaluate_mapping(net, r, pattern, m, keep_loads=True)
    b = evaluate_mapping(net, r, shuffled, m, keep_loads=True)
    assert np.allclose(a.link_bytes, b.link_bytes) and a.hop_bytes == b.hop_bytes


def test_phases_accumulate_with_their_repeat_counts_by_hand():
    # 4-node ring (torus:4, 1 core per node), rank i on node i, dimension-ordered routing.
    # Phase A (x3): 0->1 and 1->2, 100 B each: +X at nodes 0 and 1.
    # Phase B (x2): 0->2, 1000 B (half ring: + direction, +X at nodes 0 and 1) and 3->2,
    # 10 B (-X at node 3).
    net = parse_network("torus:4")
    a = Phase("A", [0, 1], [1, 2], [100, 100], repeat=3)
    b = Phase("B", [0, 3], [2, 2], [1000, 10], repeat=2)
    pattern = CommPattern(4, [a, b])
    mapping = Mapping("id", [0, 1, 2, 3], [0, 0, 0, 0])
    # Size-dependent cost: below 512 B alpha 2 us, beta 1 ns/B; from 512 B 10 us, 0.1 ns/B.
    cost = CostParameters(10e-6, 1e-10, 5e-10, ((0, 2e-6, 1e-9), (512, 10e-6, 1e-10)))
    m = evaluate_mapping(net, parse_routing("dor", net), pattern, mapping, cost, keep_loads=True)
    plus_x = m.link_flows[:4]  # link id (2*d + s) * nodes + node: d=0, s=0 first
    minus_x = m.link_flows[4:8]
    assert plus_x.tolist() == [3 + 2, 3 + 2, 0, 0] and minus_x.tolist() == [0, 0, 0, 2]
    assert m.link_bytes[:4].tolist() == [300 + 2000, 300 + 2000, 0, 0]
    assert m.link_bytes[4:8].tolist() == [0, 0, 0, 20]
    assert m.max_contention_flows == 5 and m.used_links == 3
    assert m.avg_contention_flows == pytest.approx((5 + 5 + 2) / 3)
    assert m.max_link_bytes == 2300 and m.avg_link_bytes == pytest.approx(4620 / 3)
    assert m.messages == 3 * 2 + 2 * 2 and m.total_bytes == 3 * 200 + 2 * 1010
    assert m.hop_bytes == 3 * (100 + 100) + 2 * (1000 * 2 + 10 * 1)
    assert m.avg_dilation_hops == pytest.approx((3 * 2 + 2 * 3) / 10)
    assert m.max_dilation_hops == 2
    # Phase A: each sender one 100 B message (small piece), busiest link 100 B.
    phase_a = 2e-6 + 100 * 1e-9 + 100 * 5e-10
    # Phase B: rank 0 sends 1000 B (large piece), rank 3 10 B; busiest link 1000 B.
    phase_b = max(10e-6 + 1000 * 1e-10, 2e-6 + 10 * 1e-9) + 1000 * 5e-10
    assert m.phase_times_s == pytest.approx([phase_a, phase_b])
    assert m.predicted_time_s == pytest.approx(3 * phase_a + 2 * phase_b)


def test_message_cost_uses_the_fit_piece_of_its_size():
    from petacomm.model.machine import MachineModel, OperationModel, Piece

    pieces = [
        Piece(8, 4096, 2e-6, 1e-9, 0.99, 10),
        Piece(4096, 1 << 26, 3e-5, 1e-10, 0.99, 10),
    ]
    model = MachineModel({"pingpong.inter": OperationModel("pingpong.inter", 2, pieces)})
    cost = cost_parameters_from_model(model)
    # 8 B and 4095 B fall in the first piece, 4 KiB and 1 MiB in the second; below the
    # first piece's range the first applies.
    sizes = np.array([1, 8, 4095, 4096, 1 << 20])
    expected = [2e-6 + 1e-9 * 1, 2e-6 + 8e-9, 2e-6 + 4095e-9, 3e-5 + 4096e-10, 3e-5 + 0.1048576e-3]
    assert cost.message_seconds(sizes) == pytest.approx(expected)
    assert model.message_time(sizes) == pytest.approx(expected)
    assert model.message_time(8) == pytest.approx(2.008e-6)
    assert cost.link_beta == 1e-10  # the largest messages' bandwidth
    # An 8 B ring on two nodes: each rank sends one 8 B message over its own link.
    net = parse_network("torus:2")
    pattern = parse_pattern("ranks 2; ring 8")
    m = evaluate_mapping(
        net, parse_routing("dor", net), pattern, permutation_mapping("TX", net, 2), cost
    )
    assert m.predicted_time_s == pytest.approx(2e-6 + 8e-9 + 8 * 1e-10)


def test_pieces_for_sizes_spans_each_alpha_beta_once():
    # Worked by hand: pieces from 0, 100 and 1000 B, the last two with the same alpha and
    # beta; sizes repeat and come unsorted, as a pattern's messages do.
    cost = CostParameters(
        alpha=1.0, beta=1.0, link_beta=1.0, pieces=((0, 1e-6, 1e-9), (100, 5e-6, 1e-10),
                                                    (1000, 5e-6, 1e-10))
    )  # fmt: skip
    sizes = np.array([5000.0, 8, 150, 8, 99, 2000, 150])
    assert cost.pieces_for_sizes(sizes) == [(8.0, 99.0, 1e-6, 1e-9), (150.0, 5000.0, 5e-6, 1e-10)]
    assert cost.pieces_for_sizes(np.array([120.0, 110])) == [(110.0, 120.0, 5e-6, 1e-10)]
    assert cost.pieces_for_sizes(np.zeros(0)) == []
    flat = CostParameters(alpha=2e-6, beta=1e-9, link_beta=1e-9)
    assert flat.pieces_for_sizes(sizes) == [(8.0, 5000.0, 2e-6, 1e-9)]


def test_self_messages_untimed_phases_and_each_cost_by_hand():
    # 4-node ring (torus:4, 1 core), rank i on node i, dimension-ordered routing.
    # Phase "setup" (untimed): 0->2, 1000 B: half ring, + direction, 2 hops (+X at 0 and 1).
    # Phase "main" (x2): 0->0 1 MB (a rank's message to itself: no sender time, no link,
    # not counted) and 1->2 100 B (1 hop, +X at node 1).
    net = parse_network("torus:4")
    setup = Phase("setup", [0], [2], [1000], timed=False)
    main = Phase("main", [0, 1], [0, 2], [1_000_000, 100], repeat=2)
    pattern = CommPattern(4, [setup, main])
    mapping = Mapping("id", [0, 1, 2, 3], [0, 0, 0, 0])
    dor = parse_routing("dor", net)
    cost = CostParameters(alpha=1e-6, beta=1e-9, link_beta=2e-9)
    m = evaluate_mapping(net, dor, pattern, mapping, cost)
    # setup: rank 0 sends 1000 B (1 us + 1 us), busiest link 1000 B (2 us): 4 us.
    # main: rank 1 sends 100 B (1 us + 0.1 us), busiest link 100 B (0.2 us): 1.3 us.
    assert m.phase_times_s == pytest.approx([4e-6, 1.3e-6], rel=1e-12, abs=0)
    assert m.predicted_time_s == pytest.approx(2 * 1.3e-6, rel=1e-12, abs=0)  # setup untimed
    assert m.messages == 1 + 2 and m.total_bytes == 1000 + 2 * 100
    # The longest message is in the first phase, the last phase's are shorter.
    assert m.max_dilation_hops == 2 and m.avg_dilation_hops == pytest.approx((2 + 1 + 1) / 3)
    # The same pattern object under another cost: 5 us per message, nothing per byte.
    other = evaluate_mapping(net, dor, pattern, mapping, CostParameters(5e-6, 0.0, 0.0))
    assert other.phase_times_s == pytest.approx([5e-6, 5e-6], rel=1e-12, abs=0)
    assert other.predicted_time_s == pytest.approx(1e-5, rel=1e-12, abs=0)


def test_dilation_counts_every_message_when_routing_aggregates_flows():
    # Adaptive routing routes node pairs, not messages: 0->1 twice (1 hop each) and 0->2
    # once (2 hops) on a 4-ring are two node-level flows, but three messages of
    # 1, 1 and 2 hops: average 4/3, hop-bytes 10 + 10 + 2 * 10.
    net = parse_network("torus:4")
    pattern = CommPattern(4, [Phase("p", [0, 0, 0], [1, 1, 2], [10, 10, 10])])
    mapping = Mapping("id", [0, 1, 2, 3], [0, 0, 0, 0])
    m = evaluate_mapping(net, parse_routing("adaptive", net), pattern, mapping)
    assert m.avg_dilation_hops == pytest.approx(4 / 3) and m.max_dilation_hops == 2
    assert m.hop_bytes == pytest.approx(40) and m.messages == 3
    # Two node pairs with the same bytes but not the same messages: 0->1 twice 50 B, 2->3
    # once 100 B. Each + link out of nodes 0 and 2 carries 100 B (2 and 1 messages).
    pattern = CommPattern(4, [Phase("p", [0, 0, 2], [1, 1, 3], [50, 50, 100])])
    m = evaluate_mapping(net, parse_routing("adaptive", net), pattern, mapping, keep_loads=True)
    assert m.link_bytes[:4].tolist() == [100, 0, 100, 0] and not m.link_bytes[4:].any()
    assert m.link_flows[:4].tolist() == [2, 0, 1, 0] and m.max_link_bytes == 100


def test_cost_pieces_start_at_their_from_bytes_and_must_increase():
    cost = CostParameters(1.0, 1.0, 1.0, pieces=((0, 1e-6, 1e-9), (100, 5e-6, 1e-10)))
    # 100 B is the second piece's first size, 99 B the first piece's last.
    assert cost.pieces_for_sizes(np.array([100.0, 99])) == [
        (99.0, 99.0, 1e-6, 1e-9),
        (100.0, 100.0, 5e-6, 1e-10),
    ]
    assert cost.message_seconds(np.array([99.0, 100])) == pytest.approx(
        [1e-6 + 99e-9, 5e-6 + 100e-10], rel=1e-12, abs=0
    )
    with pytest.raises(ValueError, match="cost pieces: expected increasing from_bytes"):
        CostParameters(1.0, 1.0, 1.0, pieces=((100, 5e-6, 1e-10), (0, 1e-6, 1e-9)))


def _fake_evaluation(monkeypatch, rows):
    """rank_mappings over mappings named as ``rows``' keys with these metrics (time, max and
    average contention, hop-bytes), the evaluation itself replaced: the order alone tested."""
    from types import SimpleNamespace

    from petacomm.topology import evaluation_pool

    metrics = {
        name: SimpleNamespace(
            predicted_time_s=t, max_contention_flows=mx, avg_contention_flows=av, hop_bytes=hb
        )
        for name, (t, mx, av, hb) in rows.items()
    }
    monkeypatch.setattr(
        evaluation_pool,
        "evaluate_many",
        lambda n, r, p, maps, *rest: [metrics[m.name] for m in maps],
    )
    return [SimpleNamespace(name=name) for name in rows]


def test_ranking_ties_fall_through_max_then_average_contention_hop_bytes_and_name(monkeypatch):
    mappings = _fake_evaluation(
        monkeypatch,
        {
            "a": (1.0, 2.0, 1.0, 10.0),  # ties with b on time (equal at 9 digits) ...
            "b": (1.0 + 1e-12, 1.0, 3.0, 10.0),  # ... and goes after it: more max contention
            "c": (1.001, 0.0, 0.0, 0.0),  # 0.1 % slower: after a and b whatever its contention
            "d": (2.0, 1.0, 1.0, 5.0),  # ties with e up to hop-bytes: after e
            "e": (2.0, 1.0, 1.0, 4.0),
            "g": (3.0, 1.0, 1.0, 1.0),  # ties with f on everything: by name
            "f": (3.0, 1.0, 1.0, 1.0),
        },
    )
    ranked = rank_mappings(None, None, None, mappings, cost=object())
    assert [r.mapping.name for r in ranked] == ["b", "a", "c", "e", "d", "f", "g"]
    assert [r.rank for r in ranked] == [1, 2, 3, 4, 5, 6, 7]
    # ratio = metric / best metric (b's time)
    best = 1.0 + 1e-12
    want = [1.0, 1.0 / best, 1.001 / best, 2.0 / best, 2.0 / best, 3.0 / best, 3.0 / best]
    assert [r.ratio_to_best for r in ranked] == pytest.approx(want, rel=1e-15, abs=0)
    with pytest.raises(ValueError, match="rank by time needs machine cost parameters"):
        rank_mappings(None, None, None, mappings)


def test_ranking_by_max_contention_with_a_best_of_zero(monkeypatch):
    # Ranked by max contention (not average: x has the lower average); a best of 0 gives a
    # ratio of 1 to the mappings as good and infinity to the others.
    mappings = _fake_evaluation(
        monkeypatch,
        {"x": (1.0, 2.0, 0.5, 1.0), "y": (9.0, 0.0, 1.0, 1.0), "z": (9.0, 0.0, 2.0, 1.0)},
    )
    ranked = rank_mappings(None, None, None, mappings, rank_by="max-contention")
    assert [(r.mapping.name, r.ratio_to_best) for r in ranked] == [
        ("y", 1.0),
        ("z", 1.0),
        ("x", float("inf")),
    ]


def test_permutation_candidates_all_or_the_launchers_defaults_then_a_sample():
    from petacomm.topology.ranking import permutation_candidates

    net = parse_network("torus:2x2")  # letters T, X, Y: 3! = 6 strings
    every = ["TXY", "TYX", "XTY", "XYT", "YTX", "YXT"]
    assert permutation_candidates(net, 6) == (every, 6)  # all fit: all, in order
    assert permutation_candidates(net, 1) == (["TXY"], 6)
    sample, total = permutation_candidates(net, 4, seed=3)
    assert total == 6 and sample[:2] == ["TXY", "XYT"] and len(set(sample)) == 4
    assert set(sample) <= set(every)


def test_candidate_lists_are_read_leniently_but_exactly():
    net = parse_network("torus:4x4x2:t=2")
    pattern = parse_pattern("grid2d 8x8 box 64KiB")
    # Spaces around names and a repeated name: each candidate once, in order.
    names = [m.name for m in candidate_mappings(" block , TXYZ,block, cyclic", net, pattern)]
    assert names == ["block", "TXYZ", "cyclic"]
    # A permutation uses each letter once: TXXYZ is no permutation of TXYZ.
    with pytest.raises(ValueError, match="unknown candidate 'TXXYZ'"):
        candidate_mappings("TXXYZ", net, pattern)
    # "all" on a network without permutations: block and cyclic first, then the others.
    fat_tree = parse_network("fattree:1;4;1;1")
    every = candidate_mappings("all", fat_tree, parse_pattern("grid2d 2x2 box 1KiB"), 0.2)
    names = [m.name for m in every]
    assert names[:3] == ["block", "cyclic", "tile1x1"] and "multilevel" in names


def test_format_table_by_hand():
    from types import SimpleNamespace

    from petacomm.topology.ranking import RankedMapping, format_table

    mib = 1024**2

    def met(mx, av, link, hop, dil, inter, t):
        return SimpleNamespace(max_contention_flows=mx, avg_contention_flows=av,
                               max_link_bytes=link, hop_bytes=hop, avg_dilation_hops=dil[0],
                               max_dilation_hops=dil[1], inter_node_bytes=inter,
                               predicted_time_s=t)  # fmt: skip

    ranked = [
        RankedMapping(1, SimpleNamespace(name="block"),
                      met(3, 1.5, 2 * mib, 3 * mib, (1.25, 3), mib, 0.0025), 1.0),
        RankedMapping(2, SimpleNamespace(name="a-long-name"),
                      met(12, 2.25, 10.5 * mib, 0, (2, 4), 0, None), 2.5),
    ]  # fmt: skip
    # Figures in MiB (2^20 B) and ms; columns right-aligned to the widest of name, unit
    # (here "(max-contention)") and figures, the mapping's name left-aligned, two spaces apart.
    assert format_table(ranked, "max-contention").splitlines() == [
        "#  max cont.  avg cont.  max link  hop-bytes  dil. avg/max  inter-node  predicted"
        "             ratio  mapping",
        "     (flows)    (flows)     (MiB)  (MiB*hop)        (hops)       (MiB)       (ms)"
        "  (max-contention)",
        "1       3.00       1.50      2.00        3.0     1.25/3.00         1.0      2.500"
        "            1.000x  block",
        "2      12.00       2.25     10.50        0.0     2.00/4.00         0.0        n/a"
        "            2.500x  a-long-name",
    ]
