"""The flow model (max-min shared links, route latency first) against hand-worked timelines,
and the per-message routes it reads against a walk over the network's own links."""

from __future__ import annotations

import numpy as np
import pytest
from reference_routing import neighbour, torus_bfs_distances

from petacomm.topology import flow_model
from petacomm.topology.flow_model import FlowLinks, finish_times, phase_time
from petacomm.topology.mapping import permutation_mapping
from petacomm.topology.metrics import CostParameters, evaluate_mapping
from petacomm.topology.network import parse_network
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.routing import parse_routing

C, L = 1e9, 1e-6  # 1 GB/s links of 1 us
LINKS = FlowLinks(C, L, 4e9, 1e-7)


def ring(n=4, cores=1):
    net = parse_network(f"torus:{n}").with_cores(cores)
    return net, parse_routing("dor", net)


def test_one_message_pays_its_hops_latency_then_its_bytes():
    net, routing = ring(8)
    # 0 -> 3: three hops, 3 us of latency, then 10 kB at 1 GB/s.
    assert phase_time(net, routing, [0], [3], [1e4], LINKS) == pytest.approx(3e-6 + 1e-5)


def test_messages_on_one_link_share_it():
    net, routing = ring(4)
    # Two one-hop messages 0 -> 1 over link +0: half the bandwidth each, so both end at
    # 1 us + 2 x 10 kB / 1 GB/s.
    assert phase_time(net, routing, [0, 0], [1, 1], [1e4, 1e4], LINKS) == pytest.approx(21e-6)
    # Disjoint links do not share: 0 -> 1 and 2 -> 3 end at 1 + 10 us.
    assert phase_time(net, routing, [0, 2], [1, 3], [1e4, 1e4], LINKS) == pytest.approx(11e-6)


def test_longer_routes_get_smaller_shares():
    # Link 0 (+ from node 0) carries A = 0 -> 1 (1 hop, latency 1 us) and B = 3 -> 0 -> 1
    # (2 hops, 2 us). Worked by hand: A alone at 1 GB/s from 1 to 2 us (1,000 B); from 2 us
    # the shares go as 1/latency: A 2/3 GB/s, B 1/3 GB/s. A's last 9,000 B take 13.5 us
    # (A ends at 15.5 us) while B moves 4,500 B; B's last 5,500 B at 1 GB/s: 21 us.
    net, routing = ring(4)
    message, link = routing.route_links(net, np.array([0, 3]), np.array([1, 1]))
    capacity = np.full(net.num_links, C)
    ends = finish_times(message, link, capacity, np.array([1e4, 1e4]), np.array([L, 2 * L]))
    assert ends == pytest.approx([15.5e-6, 21e-6])
    # Equal shares would have ended A at 2 + 9,000 / 0.5 GB/s = 20 us.


def test_a_message_limited_elsewhere_leaves_its_share_to_others():
    # A = 0 -> 1 -> 2 (links +0, +1; 2 us), B = 1 -> 2 (+1; 1 us), C = 0 -> 1 (+0; 1 us),
    # 30 kB each. From 1 to 2 us B and C run alone at 1 GB/s (1,000 B each). From 2 us the
    # weights 1/2, 1, 1 fill both links at the same level 1 / 1.5 GB/s: A 1/3 GB/s, B and C
    # 2/3. B and C end after 29,000 B, at 2 + 43.5 = 45.5 us, A having moved 14,500 B; A's
    # last 15,500 B at 1 GB/s end it at 61 us.
    net, routing = ring(4)
    message, link = routing.route_links(net, np.array([0, 1, 0]), np.array([2, 2, 1]))
    capacity = np.full(net.num_links, C)
    ends = finish_times(message, link, capacity, np.full(3, 3e4), np.array([2 * L, L, L]))
    assert ends == pytest.approx([61e-6, 45.5e-6, 45.5e-6])
    assert phase_time(net, routing, [0, 1, 0], [2, 2, 1], [3e4] * 3, LINKS) == pytest.approx(61e-6)


def test_loopback_messages_are_not_shared():
    net, routing = ring(4, cores=2)
    # Two messages inside node 0 (loopback 4 GB/s, 0.1 us): each alone, 0.1 + 2.5 us.
    assert phase_time(net, routing, [0, 0], [0, 0], [1e4, 1e4], LINKS) == pytest.approx(2.6e-6)


def test_zero_byte_messages_cost_their_latency():
    net, routing = ring(8)
    assert phase_time(net, routing, [0, 1], [2, 2], [0.0, 0.0], LINKS) == pytest.approx(2e-6)


@pytest.mark.parametrize("scale", [1.0, 1e150, 1e306])
def test_the_sharing_does_not_depend_on_the_latencies_magnitude(scale):
    # Weights of 1 / latency: at 1e300 s the fill levels overflowed into inf and NaN, and
    # the loop ran without end. Two messages of 3 kB on one link, routes of 1 and 3
    # latencies: the first alone from 1 us to 3 us (2 kB), then 3/4 of the link for its last
    # kB (ends at 4.33 us) while the second gets 1/4, then the whole link (ends at 7 us).
    latency = np.array([1e-6, 3e-6]) * scale
    with np.errstate(over="raise", invalid="raise"):
        ends = finish_times([0, 1], [0, 0], [C], np.array([3e3, 3e3]), latency)
    if scale == 1.0:
        assert ends == pytest.approx([13e-6 / 3, 7e-6])
    else:
        assert ends == pytest.approx(latency)  # what the bytes add is below the precision


def test_pattern_phases_add_up_by_their_repeats():
    net = parse_network("torus:4").with_cores(1)
    routing = parse_routing("dor", net)
    pattern = parse_pattern("ranks 4; phase p x3; ring 10kB")
    mapping = permutation_mapping("XT", net, 4)
    cost = CostParameters(1.0, 1.0, 1.0, (), LINKS)  # alpha-beta ignored by the flow model
    # Each rank sends 10 kB to the next: four disjoint one-hop messages, 11 us; three times.
    metrics = evaluate_mapping(net, routing, pattern, mapping, cost)
    assert metrics.predicted_time_s == pytest.approx(33e-6)
    assert metrics.phase_times_s == pytest.approx([11e-6])


def test_flow_model_needs_each_messages_route():
    net = parse_network("torus:4x4").with_cores(1)
    pattern = parse_pattern("ranks 16 alltoall 1kB")
    mapping = permutation_mapping("XYT", net, 16)
    cost = CostParameters(1e-6, 0.0, 1e-9, (), LINKS)
    with pytest.raises(ValueError, match="adaptive"):
        evaluate_mapping(net, parse_routing("adaptive", net), pattern, mapping, cost)


@pytest.mark.parametrize("text", ["torus:4x4", "torus:6x3x2", "torus:2x4x3", "mesh:3x5"])
@pytest.mark.parametrize("routing_text", ["dor", "dor-simgrid", "dor:YX"])
def test_route_links_walk_the_network_from_source_to_destination(text, routing_text):
    net = parse_network(text)
    if routing_text == "dor-simgrid" and not all(net.wrap):
        return
    if routing_text == "dor:YX" and net.ndim != 2:
        routing_text = "dor:ZYX"
    routing = parse_routing(routing_text, net)
    pairs = [(s, d) for s in range(net.num_nodes) for d in range(net.num_nodes) if s != d]
    src = np.array([s for s, _ in pairs])
    dst = np.array([d for _, d in pairs])
    message, link = routing.route_links(net, src, dst)
    nn = net.num_nodes
    distances = {d: torus_bfs_distances(net, d) for d in range(nn)}
    for i, (s, d) in enumerate(pairs):
        at = s
        hops = link[message == i]
        for lid in hops:
            dim_sign, start = divmod(int(lid), nn)
            dim, sign = divmod(dim_sign, 2)
            assert start == at, f"{text} {routing_text}: {s}->{d} link {lid} does not leave {at}"
            at = neighbour(net, at, dim, sign)
        assert at == d and len(hops) == distances[d][s]
    # The same links as the summed loads of route().
    loads = routing.route(net, src, dst, np.ones(src.size))[0]
    assert np.array_equal(np.bincount(link, minlength=net.num_links), loads)


def test_phases_beyond_the_message_limit_are_refused():
    net, routing = ring(4)
    n = flow_model.MAX_MESSAGES + 1
    with pytest.raises(flow_model.TooManyMessages) as refused:
        phase_time(net, routing, np.zeros(n, int), np.ones(n, int), np.ones(n), LINKS)
    # The limit (which `simulate --predict` records beside its fallback), then what to do.
    reason = "the flow model takes at most 100,000 messages in flight at once, this phase has "
    assert refused.value.reason == reason + "100,001"
    assert str(refused.value) == reason + "100,001 (use the link-load time model)"
    # Ordered, as many again are refused beyond the run's limit (2,097,152 messages).
    n = flow_model.MAX_ORDERED_MESSAGES + 1
    chain = (np.arange(1, n), np.arange(n - 1))  # each message after the one before
    with pytest.raises(flow_model.TooManyMessages, match="at most 2,097,152 messages in a run"):
        phase_time(net, routing, np.zeros(n, int), np.ones(n, int), np.ones(n), LINKS, chain)
    # The limits themselves are taken: exactly 100,000 at once, 2,097,152 in a run.
    flow_model.check_size(flow_model.MAX_MESSAGES, flow_model.MAX_MESSAGES)
    flow_model.check_size(flow_model.MAX_ORDERED_MESSAGES, 1)


def test_ordered_rounds_beyond_the_in_flight_limit_are_priced():
    """101 rounds of 1,000 one-hop messages 0 -> 1 (101,000 in all, 1,000 in flight at a
    time), message i of round k+1 after message i of round k: by hand every round is the
    link's latency then 1,000 x 100 B shared on one 1 GB/s link, 1 us + 100 us."""
    net, routing = ring(4)
    rounds, width = 101, 1000
    n = rounds * width
    assert n > flow_model.MAX_MESSAGES
    held = np.arange(width, n)
    order = (held, held - width)
    assert flow_model.released_at_once(n, order) == width
    with pytest.raises(ValueError, match="after: message index out of range"):
        flow_model.released_at_once(n, (np.array([n]), np.array([0])))
    seconds = phase_time(net, routing, np.zeros(n, int), np.ones(n, int), np.full(n, 100.0),
                         LINKS, order)  # fmt: skip
    assert seconds == pytest.approx(rounds * (L + width * 100 / C))


@pytest.mark.parametrize(
    "field, value", [("bandwidth", 0.0), ("latency", -1.0), ("loopback_bandwidth", float("nan"))]
)
def test_bad_link_parameters_are_named(field, value):
    args = {"bandwidth": C, "latency": L, "loopback_bandwidth": C, "loopback_latency": L}
    args[field] = value
    with pytest.raises(ValueError, match=field):
        FlowLinks(**args)


def _model(pingpong_pieces, intra_pieces=None):
    """A machine model with a ping-pong across nodes (and within one) of these (from, alpha,
    beta) pieces; each piece covers sizes up to the next one's start."""
    from petacomm.model.machine import MachineModel, OperationModel, Piece

    def op(name, pieces):
        ends = [start - 1 for start, _, _ in pieces[1:]] + [1 << 30]
        return OperationModel(
            name, 2, [Piece(f, t, a, b, 1.0, 10) for (f, a, b), t in zip(pieces, ends, strict=True)]
        )

    ops = {"pingpong.inter": op("pingpong.inter", pingpong_pieces)}
    if intra_pieces is not None:
        ops["pingpong.intra"] = op("pingpong.intra", intra_pieces)
    return MachineModel(ops)


def _figures(links):
    return [links.bandwidth, links.latency, links.loopback_bandwidth, links.loopback_latency]


def test_links_from_a_machine_model():
    # Across nodes: 5 us below 8 B, 2 us and 4 GB/s from 8 B, 3 us and 5 GB/s from 1 MiB
    # (1,048,576 B, not 10^6); within a node 1 us below 8 B, 0.3 us and 15 GB/s from 8 B,
    # 0.4 us and 20 GB/s from 1 MiB. A link: the 8 B alpha (2 us) and the 1 MiB bandwidth
    # (5 GB/s); the loopback likewise from the intra-node fit (0.3 us, 20 GB/s).
    inter = [(0, 5e-6, 1e-9), (8, 2e-6, 1 / 4e9), (1 << 20, 3e-6, 1 / 5e9)]
    intra = [(0, 1e-6, 1e-9), (8, 0.3e-6, 1 / 15e9), (1 << 20, 0.4e-6, 1 / 20e9)]
    exact = {"rel": 1e-12, "abs": 0}
    links = flow_model.links_from_model(_model(inter, intra))
    assert _figures(links) == pytest.approx([5e9, 2e-6, 20e9, 0.3e-6], **exact)
    # Overrides replace the network's figures only.
    links = flow_model.links_from_model(_model(inter, intra), bandwidth=1e9, latency=1e-6)
    assert _figures(links) == pytest.approx([1e9, 1e-6, 20e9, 0.3e-6], **exact)
    # No intra-node fit: a loopback of 4x the bandwidth at a tenth of the latency (of the
    # overridden figures when given).
    links = flow_model.links_from_model(_model(inter))
    assert _figures(links) == pytest.approx([5e9, 2e-6, 20e9, 0.2e-6], **exact)
    links = flow_model.links_from_model(_model(inter), bandwidth=1e9, latency=1e-5)
    assert _figures(links) == pytest.approx([1e9, 1e-5, 4e9, 1e-6], **exact)
    # A fit with no time per byte at 1 MiB gives no bandwidth: refused, naming it.
    with pytest.raises(ValueError, match="pingpong.inter's fit at 1 MiB has beta 0"):
        flow_model.links_from_model(_model([(0, 1e-6, 1e-9), (1 << 20, 1e-6, 0.0)]))


def max_min_reference(routes, capacity, weight):
    """Weighted max-min fair rates by plain progressive filling, one link at a time: raise
    a common level (message rate = level / weight) until the lowest link is full, fix its
    messages, repeat."""
    rate = {}
    residual = list(capacity)
    while len(rate) < len(routes):
        best = None
        for link, cap in enumerate(residual):
            crossing = [i for i, r in enumerate(routes) if i not in rate and link in r]
            if crossing:
                level = cap / sum(1.0 / weight[i] for i in crossing)
                if best is None or level < best[0]:
                    best = (level, crossing)
        level, crossing = best
        for i in crossing:
            rate[i] = level / weight[i]
            for link in routes[i]:
                residual[link] -= rate[i]
    return [rate[i] for i in range(len(routes))]


@pytest.mark.parametrize("seed", range(6))
def test_max_min_rates_match_plain_progressive_filling(seed):
    # Random routes (1-5 distinct links of 30), capacities and weights: the solver fills
    # every locally lowest link per round; the reference one lowest link at a time.
    rng = np.random.default_rng(seed)
    nlinks, nmessages = 30, 60
    routes = [
        sorted(rng.choice(nlinks, size=rng.integers(1, 6), replace=False).tolist())
        for _ in range(nmessages)
    ]
    capacity = rng.uniform(1.0, 3.0, nlinks)
    weight = rng.choice([1.0, 2.0, 3.0, 5.0], nmessages)  # route latencies: ties happen
    message = np.array([i for i, r in enumerate(routes) for _ in r])
    link = np.array([k for r in routes for k in r])
    got = flow_model._max_min_rates(message, link, capacity, weight)
    assert got == pytest.approx(max_min_reference(routes, capacity, weight), rel=1e-9)


def test_fat_tree_messages_share_the_down_link_they_both_cross():
    # The star fattree:1;4;1;1: every route is up to the switch and down (2 links, 2 us).
    # 0 -> 2 and 1 -> 2 share the down link to node 2 at 0.5 GB/s: 2 + 20 us; 3 -> 0 alone
    # takes 2 + 10 us.
    net = parse_network("fattree:1;4;1;1").with_cores(1)
    routing = parse_routing("dmodk", net)
    message, link = routing.route_links(net, np.array([0, 1, 3]), np.array([2, 2, 0]))
    ends = finish_times(
        message, link, np.full(net.num_links, C), np.full(3, 1e4), np.full(3, 2 * L)
    )
    assert ends == pytest.approx([22e-6, 22e-6, 12e-6])
    assert phase_time(net, routing, [0, 1, 3], [2, 2, 0], [1e4] * 3, LINKS) == pytest.approx(22e-6)


@pytest.mark.parametrize("text", ["fattree:2;4,4;1,4;1,1", "fattree:3;2,2,2;1,2,2;1,1,1"])
def test_fat_tree_routes_climb_to_the_common_ancestor_and_back(text):
    net = parse_network(text)
    routing = parse_routing("dmodk", net)
    nn = net.num_nodes
    src, dst = np.divmod(np.arange(nn * nn), nn)
    message, link = routing.route_links(net, src, dst)
    # Hops: up to the nearest common ancestor and down again (the network's own count).
    assert np.array_equal(np.bincount(message, minlength=src.size), net.hop_distance(src, dst))
    # Each message's links are distinct, and a link carries messages of one direction
    # from one subtree: the loads are route()'s.
    assert np.unique(message * net.num_links + link).size == message.size
    loads = routing.route(net, src, dst, np.ones(src.size))[0]
    assert np.array_equal(np.bincount(link, minlength=net.num_links), loads)
    assert not flow_model.supports(parse_routing("ecmp", net))
    assert flow_model.supports(routing)
