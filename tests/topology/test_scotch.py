"""Scotch as a backend (libscotch through ctypes, and the gmap command): valid placements,
its numbering of targets checked on cases whose optimum is known by hand, reproducibility,
and petacomm's refinement on top never worse than Scotch. Skipped without Scotch."""

import json
from collections import Counter

import numpy as np
import pytest
from reference_routing import torus_bfs_distances

from petacomm.cli import main
from petacomm.topology import scotch
from petacomm.topology.irregular_graphs import make_graph
from petacomm.topology.mapping import Mapping
from petacomm.topology.mapping_search import communication_graph
from petacomm.topology.metrics import evaluate_mapping
from petacomm.topology.multilevel import MultilevelStats, cores_in_rank_order
from petacomm.topology.network import parse_network
from petacomm.topology.pattern import matrix_messages, single_phase
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.routing import parse_routing

needs_scotch = pytest.mark.skipif(
    not scotch.scotch_available(), reason="Scotch (Debian libscotch-dev) is not installed"
)


def hop_bytes_by_bfs(net, pattern, node) -> float:
    total = 0.0
    for ph in pattern.phases:
        for s, d, b in zip(ph.src.tolist(), ph.dst.tolist(), ph.nbytes.tolist(), strict=True):
            total += ph.repeat * b * torus_bfs_distances(net, int(node[d]))[int(node[s])]
    return total


@needs_scotch
def test_scotch_numbers_torus_vertices_like_petacomm():
    # A 4x8 grid with wrap-around, one rank per node of a 4x8 torus: the identity is the
    # only kind of optimum (every message one hop). Scotch finds one; read with the wrong
    # vertex numbering (Y fastest) its placement would stretch messages.
    net = parse_network("torus:4x8")
    pattern = parse_pattern("grid2d 8x4 periodic column-major star 1KiB")
    node = scotch.scotch_placement(communication_graph(pattern), net, seed=0)
    assert sorted(node.tolist()) == list(range(32))
    assert hop_bytes_by_bfs(net, pattern, node) == pattern.num_messages * 1024


@needs_scotch
def test_scotch_numbers_fat_tree_leaves_like_petacomm():
    # Pairs (2i, 2i+1) talk; a fat tree of 4 switches with 4 leaves each and 2 cores per
    # leaf: the optimum puts every pair on one leaf (no traffic leaves a node).
    net = parse_network("fattree:2;4,4;1,2;1,2:t=2")
    m = np.zeros((32, 32))
    for i in range(0, 32, 2):
        m[i, i + 1] = m[i + 1, i] = 1.0
    pattern = single_phase(32, matrix_messages(m))
    node = scotch.scotch_placement(communication_graph(pattern), net, seed=0)
    assert max(Counter(node.tolist()).values()) <= 2
    assert all(node[i] == node[i + 1] for i in range(0, 32, 2))


@needs_scotch
def test_scotch_is_reproducible_and_refinement_is_never_worse():
    net = parse_network("torus:4x4x2:t=4")
    pattern = make_graph("delaunay", 128, seed=0)
    graph = communication_graph(pattern)
    first = scotch.scotch_placement(graph, net, seed=3)
    assert np.array_equal(first, scotch.scotch_placement(graph, net, seed=3))
    assert max(Counter(first.tolist()).values()) <= 4 and len(first) == 128
    routing = parse_routing("adaptive", net)
    refined = scotch.scotch_mapping(pattern, net, 30, graph=graph, seed=3, routing=routing)
    refined.validate(net)
    assert hop_bytes_by_bfs(net, pattern, refined.node) <= hop_bytes_by_bfs(net, pattern, first)
    plain = scotch.scotch_mapping(pattern, net, 30, graph=graph, seed=3)
    m_first = evaluate_mapping(net, routing, pattern, plain)
    m_refined = evaluate_mapping(net, routing, pattern, refined)
    assert m_refined.max_link_bytes <= m_first.max_link_bytes * (1 + 1e-9)


@needs_scotch
def test_gmap_command_gives_a_valid_placement():
    if scotch.gmap_command() is None:
        pytest.skip("the gmap command (Debian package scotch) is not installed")
    net = parse_network("torus:4x4:t=2")
    pattern = make_graph("rgg", 32, seed=1)
    graph = communication_graph(pattern)
    node, seconds = scotch.run_gmap(graph, net)
    assert seconds > 0 and max(Counter(node.tolist()).values()) <= 2 and len(node) == 32


def test_targets_and_integer_weights():
    assert scotch.target_description(parse_network("torus:2x3x4")) == ("torusXD", [2, 3, 4], [])
    assert scotch.target_description(parse_network("mesh:5x2")) == ("meshXD", [5, 2], [])
    assert scotch.target_description(parse_network("fattree:2;4,3;1,2;1,1")) == (
        "tleaf",
        [3, 4],
        [4, 2],
    )
    for text in ("dragonfly:5,2,2,2", "torus:4x4:wrap=1,0"):
        with pytest.raises(ValueError, match="no Scotch target"):
            scotch.target_description(parse_network(text))
    g = communication_graph(parse_pattern("ranks 3; ring 48 both"))
    assert scotch.integer_weights(g).tolist() == [1] * g.nnz


@needs_scotch
def test_map_command_offers_scotch_and_refuses_networks_without_a_target(capsys, tmp_path):
    args = ["map", "--network", "torus:4x2:t=2", "--pattern", "grid2d 4x4 box 1KiB"]
    assert main([*args, "--candidates", "scotch,multilevel", "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["mapping"] for r in doc["ranking"]} == {"scotch", "multilevel"}
    bad = ["map", "--network", "dragonfly:5,2,2,2", "--pattern", "ranks 8; ring 1KiB"]
    assert main([*bad, "--candidates", "scotch"]) == 2
    err = capsys.readouterr().err
    assert "--candidates: scotch: no Scotch target for a dragonfly network" in err


@needs_scotch
def test_refinement_limit_of_the_scotch_candidate():
    # No pass and no change: Scotch's placement exactly; None: refined until converged (a
    # budget far above what 128 ranks need).
    net = parse_network("torus:4x4x2:t=4")
    pattern = make_graph("rgg", 128, seed=2)
    graph = communication_graph(pattern)
    routing = parse_routing("adaptive", net)
    first = scotch.scotch_placement(graph, net, seed=0)
    none = scotch.scotch_mapping(
        pattern, net, 60, graph=graph, routing=routing, refine_passes=0, refine_steps=0
    )
    assert np.array_equal(none.node, first) and none.stop_reason == "refinement limit"
    assert none.name == "scotch"
    full = scotch.scotch_mapping(
        pattern, net, 60, graph=graph, routing=routing, refine_passes=None, refine_steps=None
    )
    assert full.stop_reason == "converged"
    assert hop_bytes_by_bfs(net, pattern, full.node) <= hop_bytes_by_bfs(net, pattern, first)


@needs_scotch
def test_the_scotch_candidate_maps_alike_however_long_scotch_took(monkeypatch):
    """Its refinement is limited by work, not by time: when the limit was a share of
    Scotch's time, a Scotch slowed down (a loaded machine) left it more time and another
    mapping came out."""
    import time

    net = parse_network("torus:4x8x8:t=4")
    pattern = make_graph("rgg", 1024, seed=0)
    graph = communication_graph(pattern)
    routing = parse_routing("adaptive", net)
    quick = scotch.scotch_mapping(pattern, net, 60, graph=graph, routing=routing)
    placed = scotch.scotch_placement

    def slow(*args, **kwargs):
        time.sleep(0.5)
        return placed(*args, **kwargs)

    monkeypatch.setattr(scotch, "scotch_placement", slow)
    from petacomm.topology import contention, multilevel

    limits = []

    def spying(real, key):
        def spy(*args, **kwargs):
            limits.append((key, kwargs.get(key)))
            return real(*args, **kwargs)

        return spy

    for module, name, key in (
        (multilevel, "refine_placement", "max_passes"),
        (contention, "contention_stage", "max_steps"),
    ):
        monkeypatch.setattr(module, name, spying(getattr(module, name), key))
    slowed = scotch.scotch_mapping(pattern, net, 60, graph=graph, routing=routing)
    assert np.array_equal(quick.node, slowed.node), "the mapping depends on Scotch's time"
    assert quick.stop_reason == slowed.stop_reason == "refinement limit"
    assert limits == [("max_passes", scotch.REFINE_PASSES), ("max_steps", scotch.REFINE_STEPS)]
    # And the refinement did something: hop-bytes below Scotch's own placement's (hops
    # from a breadth-first search of the torus, one per node).
    hops = np.array([torus_bfs_distances(net, v) for v in range(net.num_nodes)])
    src, dst, nbytes = pattern.edges()
    own = placed(graph, net, seed=0)
    assert (nbytes * hops[quick.node[src], quick.node[dst]]).sum() < (
        nbytes * hops[own[src], own[dst]]
    ).sum()


@needs_scotch
def test_the_scotch_candidate_builds_the_pair_link_matrix_before_its_refinement_limit(
    monkeypatch,
):
    """Built inside the contention stage's budget (a quarter of Scotch's time), the matrix
    used it all up in a fresh process and `petacomm map --candidates scotch` returned
    Scotch's own mapping: the stage now starts with the matrix built and handed to it,
    with the rest of what it reads whatever the placement (prepared while Scotch maps)."""
    from petacomm.topology import contention

    net = parse_network("torus:4x4x2:t=4")
    pattern = make_graph("rgg", 128, seed=2)
    routing = parse_routing("adaptive", net)
    monkeypatch.setattr(contention, "_PAIR_CACHE", {})  # a fresh process's
    seen = []
    stage = contention.contention_stage

    def spy(*args, prepared=None, **kwargs):
        seen.append((prepared, contention.cached_pair_links(net, routing)))
        return stage(*args, prepared=prepared, **kwargs)

    monkeypatch.setattr(contention, "contention_stage", spy)
    scotch.scotch_mapping(pattern, net, 60, routing=routing)
    ((given, cached),) = seen
    assert given is not None and cached is not None and given.pairs is cached
    src, dst, nbytes = pattern.edges()
    assert np.array_equal(given.src, src) and np.array_equal(given.nbytes, nbytes)


@needs_scotch
def test_the_scotch_candidate_builds_the_pair_link_matrix_while_scotch_maps(monkeypatch):
    """The matrix does not depend on the placement, and Scotch's C code runs without
    Python's lock: the matrix is built beside Scotch, so a fresh process pays the longer
    of the two, not their sum. Here each waits (5 s at most) for the other to have started:
    one run after the other, in either order, fails."""
    import threading

    from petacomm.topology import contention

    net = parse_network("torus:4x4x2:t=4")
    pattern = make_graph("rgg", 128, seed=2)
    routing = parse_routing("adaptive", net)
    monkeypatch.setattr(contention, "_PAIR_CACHE", {})
    building, mapping_started = threading.Event(), threading.Event()
    build, place = contention.pair_link_matrix, scotch.scotch_placement

    def spy_build(*args):
        building.set()
        assert mapping_started.wait(timeout=5), "the matrix was built before Scotch mapped"
        return build(*args)

    def spy_place(*args, **kwargs):
        mapping_started.set()
        assert building.wait(timeout=5), "the matrix was not being built while Scotch mapped"
        return place(*args, **kwargs)

    monkeypatch.setattr(contention, "pair_link_matrix", spy_build)
    monkeypatch.setattr(scotch, "scotch_placement", spy_place)
    mapping = scotch.scotch_mapping(pattern, net, 60, routing=routing)
    mapping.validate(net)
    assert contention.cached_pair_links(net, routing) is not None


@needs_scotch
@pytest.mark.parametrize("failing", ["matrix", "scotch"])
def test_an_error_beside_scotch_reaches_the_caller_and_leaves_no_thread(monkeypatch, failing):
    import threading

    from petacomm.topology import contention

    net = parse_network("torus:4x4x2:t=4")
    pattern = make_graph("rgg", 128, seed=2)
    routing = parse_routing("adaptive", net)
    monkeypatch.setattr(contention, "_PAIR_CACHE", {})
    threads = threading.active_count()
    real = {"matrix": contention.pair_link_matrix, "scotch": scotch.scotch_placement}[failing]
    calls = []

    def broken_once(*args, **kwargs):  # a second call (a rebuild after a lost error) works
        calls.append(1)
        if len(calls) == 1:
            raise scotch.ScotchError(f"{failing} broke")
        return real(*args, **kwargs)

    target = (
        (contention, "pair_link_matrix") if failing == "matrix" else (scotch, "scotch_placement")
    )
    monkeypatch.setattr(*target, broken_once)
    with pytest.raises(scotch.ScotchError, match=f"{failing} broke"):
        scotch.scotch_mapping(pattern, net, 60, routing=routing)
    assert threading.active_count() == threads


@needs_scotch
def test_an_interrupt_while_scotch_maps_is_not_replaced_by_an_error_beside_it(monkeypatch):
    """Ctrl-C during Scotch reaches the caller as KeyboardInterrupt even when the thread
    beside it fails too (its error would turn the interrupt into a candidate's error)."""
    import threading

    from petacomm.topology import contention

    net = parse_network("torus:4x4x2:t=4")
    pattern = make_graph("rgg", 128, seed=2)
    routing = parse_routing("adaptive", net)
    monkeypatch.setattr(contention, "_PAIR_CACHE", {})
    building = threading.Event()

    def broken_build(*args):
        building.set()
        raise ValueError("matrix broke")

    def interrupted(*args, **kwargs):
        building.wait(timeout=5)
        raise KeyboardInterrupt

    monkeypatch.setattr(contention, "pair_link_matrix", broken_build)
    monkeypatch.setattr(scotch, "scotch_placement", interrupted)
    threads = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        scotch.scotch_mapping(pattern, net, 60, routing=routing)
    assert threading.active_count() == threads


@needs_scotch
def test_scotch_placement_stays_when_refinement_loads_the_busiest_link_more(monkeypatch):
    # A hop-bytes stage that made the busiest link worse, and a contention stage that ran
    # out of time: the candidate falls back to Scotch's own placement.
    from petacomm.topology import contention, multilevel

    net = parse_network("torus:4x4:t=2")
    pattern = make_graph("rgg", 32, seed=1)
    graph = communication_graph(pattern)
    routing = parse_routing("dor", net)
    first = scotch.scotch_placement(graph, net, seed=0)
    piled = np.repeat(np.arange(16), 2)  # ranks in rank order: a worse busiest link here
    m_first = evaluate_mapping(
        net, routing, pattern, Mapping("s", first, cores_in_rank_order(first))
    )
    m_piled = evaluate_mapping(
        net, routing, pattern, Mapping("p", piled, cores_in_rank_order(piled))
    )
    assert m_piled.max_link_bytes > m_first.max_link_bytes  # the case is what it claims
    monkeypatch.setattr(multilevel, "refine_placement", lambda *a, **k: (piled, MultilevelStats()))
    # The stage reports its busiest link (from its own loads), or None when it had no time
    # to compute them: either way the worse placement is dropped for Scotch's.
    for after in (m_piled.max_link_bytes, None):
        monkeypatch.setattr(
            contention,
            "contention_stage",
            lambda *a, after=after, **k: (piled, "time budget", after),
        )
        out = scotch.scotch_mapping(
            pattern, net, 60, graph=graph, routing=routing, refine_passes=None, refine_steps=None
        )
        assert np.array_equal(out.node, first)
    # No contention stage at all (no change allowed on the busiest link): the same.
    monkeypatch.setattr(contention, "contention_stage", None)  # not called
    out = scotch.scotch_mapping(
        pattern, net, 60, graph=graph, routing=routing, refine_passes=1, refine_steps=0
    )
    assert np.array_equal(out.node, first)


@needs_scotch
@pytest.mark.parametrize(
    "network_text, routing_name",
    [("mesh:4x4:t=2", "adaptive"), ("fattree:2;4,4;1,4;1,1:t=2", "ecmp")],
)
def test_no_slow_pair_link_matrix_and_never_a_busier_link_than_scotch(
    monkeypatch, network_text, routing_name
):
    """Routing unit flows for every node pair (adaptive on a mesh, ECMP) made the candidate
    take 2.6-7.9 s against Scotch's 0.05-0.07 s on 256 nodes: it then refines hop-bytes
    only, and a refined placement that loads the busiest link more than Scotch's (found by
    routing both) gives way to Scotch's."""
    from petacomm.topology import contention, multilevel

    net = parse_network(network_text)
    routing = parse_routing(routing_name, net)
    assert not contention.builds_quickly(net, routing)  # the case is what it claims

    def no_matrix(*args, **kwargs):
        raise AssertionError("the pair-link matrix was built")

    monkeypatch.setattr(contention, "pair_link_matrix", no_matrix)
    monkeypatch.setattr(contention, "prepare_contention", no_matrix)
    pattern = make_graph("rgg", 32, seed=1)
    graph = communication_graph(pattern)
    first = scotch.scotch_placement(graph, net, seed=0)

    def busiest(node):
        placed = Mapping("m", node, cores_in_rank_order(node))
        return evaluate_mapping(net, routing, pattern, placed).max_link_bytes

    out = scotch.scotch_mapping(
        pattern, net, 60, graph=graph, routing=routing, refine_passes=None, refine_steps=None
    )
    out.validate(net)
    assert busiest(out.node) <= busiest(first) * (1 + 1e-12)
    # A hop-bytes stage that loads the busiest link more: Scotch's placement stays.
    rng = np.random.default_rng(0)
    shuffles = (rng.permutation(np.repeat(np.arange(net.num_nodes), 2)) for _ in range(50))
    piled = next(node for node in shuffles if busiest(node) > busiest(first))
    monkeypatch.setattr(multilevel, "refine_placement", lambda *a, **k: (piled, MultilevelStats()))
    out = scotch.scotch_mapping(
        pattern, net, 60, graph=graph, routing=routing, refine_passes=None, refine_steps=None
    )
    assert np.array_equal(out.node, first)
