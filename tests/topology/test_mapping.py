"""Placements: permutation strings, block/cyclic, tiles, and the optimisers."""

import numpy as np
import pytest

from petacomm.topology import mapping as mp
from petacomm.topology.mapping_search import (
    bisection_mapping,
    communication_graph,
    greedy_mapping,
    hop_bytes,
    refine_by_swaps,
)
from petacomm.topology.network import parse_network
from petacomm.topology.pattern_language import parse_pattern


def test_permutation_strings_enumerate_and_round_trip():
    net = parse_network("torus:2x3x4:t=2")
    perms = mp.all_permutations(net)
    assert len(perms) == 24 and len(set(perms)) == 24
    for perm in perms:
        axes = mp.parse_permutation(perm, net)
        assert mp.format_permutation(axes, net) == perm
        m = mp.permutation_mapping(perm, net, net.num_slots)
        m.validate(net)  # a bijection onto all slots
        assert mp.permutation_of(m, net) == perm  # distinct mappings, recovered from placement


def test_bgq_permutations():
    net = parse_network("torus:2x2x2x2x2:t=2")
    perms = mp.all_permutations(net)
    assert len(perms) == 720 and "ABCDET" in perms and "TABCDE" in perms
    m = mp.permutation_mapping("ABCDET", net, 64)
    assert m.core.tolist() == [0] * 32 + [1] * 32


def test_permutation_semantics():
    net = parse_network("torus:4x2:t=2")
    txy = mp.permutation_mapping("TXY", net, 16)
    assert txy.core[:4].tolist() == [0, 1, 0, 1]
    assert net.coordinates(txy.node[:6]).tolist() == [
        [0, 0],
        [0, 0],
        [1, 0],
        [1, 0],
        [2, 0],
        [2, 0],
    ]
    xyt = mp.permutation_mapping("xyt", net, 16)  # case-insensitive
    assert xyt.core.tolist() == [0] * 8 + [1] * 8
    assert np.array_equal(mp.block_mapping(net, 16).node, txy.node)  # node ids are X fastest
    assert np.array_equal(mp.cyclic_mapping(net, 16).node, xyt.node)
    partial = mp.permutation_mapping("TXY", net, 5)
    assert partial.nranks == 5


@pytest.mark.parametrize(
    "args, message",
    [
        (("TXX", "torus:4x2:t=2", 4), "expected each of TXY exactly once"),
        (("TXY", "torus:4x2:t=2", 17), "17 ranks do not fit on 8 nodes x 2 cores = 16 slots"),
        (("TXYZ", "fattree:1;4;1;1", 4), "need a torus or mesh network"),
    ],
)
def test_permutation_errors(args, message):
    perm, net, n = args
    with pytest.raises(ValueError) as err:
        mp.permutation_mapping(perm, parse_network(net), n)
    assert message in str(err.value)


def test_mapping_validation():
    net = parse_network("mesh:2x2:t=2")
    with pytest.raises(ValueError, match="two ranks share a slot"):
        mp.Mapping("x", [0, 0], [1, 1]).validate(net)
    with pytest.raises(ValueError, match="core out of range"):
        mp.Mapping("x", [0], [2]).validate(net)


def test_tiled_mapping():
    grid = parse_pattern("grid2d 4x4 star 1").grid
    net = parse_network("torus:2x2:t=4")
    assert mp.tile_shapes(grid, 4) == [(1, 4), (2, 2), (4, 1)]
    m = mp.tiled_mapping(grid, (2, 2), net)
    m.validate(net)
    coords = grid.coordinates(np.arange(16))
    # Ranks in the same 2x2 block share a node; blocks are numbered row-major.
    assert np.array_equal(m.node, (coords[:, 0] // 2) * 2 + coords[:, 1] // 2)
    m2 = mp.tiled_mapping(grid, (2, 2), net, node_order="YX")
    assert m2.name == "tile2x2:YX"
    assert net.coordinates(m2.node[2]).tolist() == [0, 1]  # tile 1 goes along Y first
    with pytest.raises(ValueError, match="must divide the grid"):
        mp.tiled_mapping(grid, (3, 1), net)


@pytest.mark.parametrize(
    "network_text", ["torus:4x4x2:t=2", "fattree:2;4,4;1,2;1,1:t=4", "dragonfly:5,2,2,2:t=4"]
)
def test_optimisers_produce_valid_mappings_and_refinement_never_hurts(network_text):
    net = parse_network(network_text)
    pattern = parse_pattern("grid2d 8x8 periodic box 1MiB")
    graph = communication_graph(pattern)
    for build in (greedy_mapping, bisection_mapping):
        m = build(pattern, net, time_budget=5, graph=graph)
        m.validate(net)
        assert m.nranks == 64 and "budget" not in m.name
        refined = refine_by_swaps(m, pattern, net, time_budget=0.5, seed=1, graph=graph)
        refined.validate(net)
        assert hop_bytes(graph, refined.node, net) <= hop_bytes(graph, m.node, net)


def test_greedy_finds_the_obvious_placement():
    # A ring of 8 ranks on an 8-node ring: greedy growth follows the ring, 1 hop per message.
    net = parse_network("torus:8")
    pattern = parse_pattern("ranks 8; ring 1 both")
    graph = communication_graph(pattern)
    m = greedy_mapping(pattern, net, graph=graph)
    assert hop_bytes(graph, m.node, net) == 8 * 2


def test_swaps_repair_a_scrambled_mapping():
    net = parse_network("torus:4x4")
    pattern = parse_pattern("grid2d 4x4 periodic star 1")
    graph = communication_graph(pattern)
    rng = np.random.default_rng(0)
    scrambled = mp.Mapping("random", rng.permutation(16), np.zeros(16, dtype=int))
    before = hop_bytes(graph, scrambled.node, net)
    after = hop_bytes(graph, refine_by_swaps(scrambled, pattern, net, 1.0, graph=graph).node, net)
    assert after < before


def test_time_budgets_are_respected():
    # Checked by the optimisers' own stop reasons, not by a clock: a tiny budget stops them
    # before they finish, and what they return is still a complete valid placement.
    net = parse_network("torus:8x8x8:t=2")
    pattern = parse_pattern("grid3d 16x8x8 box 1")
    m = greedy_mapping(pattern, net, time_budget=1e-9)
    m.validate(net)
    assert m.name == "greedy (budget hit)" and m.stop_reason == "time budget"
    m = bisection_mapping(pattern, net, time_budget=1e-9)
    m.validate(net)
    assert m.name == "bisection (budget hit)" and m.stop_reason == "time budget"
    refined = refine_by_swaps(m, pattern, net, time_budget=1e-9)
    refined.validate(net)
    assert refined.stop_reason == "time budget"
    done = greedy_mapping(pattern, net, time_budget=60)
    assert done.stop_reason == "converged" and "budget" not in done.name
