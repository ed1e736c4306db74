"""``petacomm map --routing dor-simgrid`` routes every message over exactly the links SimGrid's
torus routes it over (read back from SimGrid with route_dump.cpp), so the model's link loads
and the simulator's can be compared one to one; plain ``dor`` differs exactly on the
half-ring ties that start at coordinate n/2."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_platform import route_dump, simgrid_routes  # noqa: F401 (fixture)

from petacomm.topology.network import parse_network
from petacomm.topology.routing import parse_routing

_LINK = re.compile(r"^machine_link_from_(\d+)_to_(\d+)_(UP|DOWN)$")


def link_ids(network, names: list[str]) -> list[int]:
    """petacomm link ids of SimGrid torus link names. SimGrid's link "from a to b" joins node
    a to its + neighbour b in one dimension; UP is a -> b (a's + link), DOWN is b -> a (b's -
    link); petacomm numbers the link of dimension d, direction s (0 = +, 1 = -) leaving node n
    as (2d + s) N + n."""
    ids = []
    for name in names:
        a, b, way = _LINK.match(name).groups()
        a, b = int(a), int(b)
        (d,) = np.flatnonzero(network.coordinates(a) != network.coordinates(b))
        n = network.num_nodes
        ids.append((2 * d) * n + a if way == "UP" else (2 * d + 1) * n + b)
    return sorted(ids)


def model_link_ids(network, routing, src: int, dst: int) -> list[int]:
    loads = routing.route(network, np.array([src]), np.array([dst]), np.ones((1, 1)))[0]
    ids = np.flatnonzero(loads > 1e-9)
    assert np.allclose(loads[ids], 1.0)  # one whole message per link: a single path
    return sorted(ids.tolist())


@pytest.mark.parametrize("text", ["torus:4x4", "torus:6x3x2", "torus:2x4x3"])
def test_dor_simgrid_takes_simgrids_links(route_dump, tmp_path, text):  # noqa: F811
    network = parse_network(text)
    routing = parse_routing("dor-simgrid", network)
    routes = simgrid_routes(route_dump, tmp_path, text)
    assert len(routes) == network.num_nodes * (network.num_nodes - 1)
    for (src, dst), (_, names) in routes.items():
        assert model_link_ids(network, routing, src, dst) == link_ids(network, names), (src, dst)


def test_plain_dor_differs_only_on_ties_from_the_middle(route_dump, tmp_path):  # noqa: F811
    network = parse_network("torus:4x4")
    dor = parse_routing("dor", network)
    routes = simgrid_routes(route_dump, tmp_path, "torus:4x4")
    differ = sorted(
        (s, d)
        for (s, d), (_, names) in routes.items()
        if model_link_ids(network, dor, s, d) != link_ids(network, names)
    )
    # By hand: a tie in X (x 2 -> 0) or in Y (y 2 -> 0) from coordinate 2 = n/2; every pair
    # with such a step differs: x_s = 2, x_d = 0 (4 y_s x 4 y_d = 16 pairs) or y_s = 2,
    # y_d = 0 (16 pairs), the one pair with both counted once: 31 pairs.
    coords = network.coordinates(np.arange(16))
    by_hand = sorted(
        (s, d)
        for s in range(16)
        for d in range(16)
        if s != d and any(coords[s][j] == 2 and coords[d][j] == 0 for j in range(2))
    )
    assert len(by_hand) == 31
    assert differ == by_hand


def test_dor_simgrid_by_hand():
    network = parse_network("torus:4x4")
    routing = parse_routing("dor-simgrid", network)
    n = network.num_nodes
    plus_x, minus_x, minus_y = 0, n, 3 * n
    # 2 -> 0: x 2 -> 1 -> 0 on the - links of nodes 2 and 1.
    assert model_link_ids(network, routing, 2, 0) == [minus_x + 1, minus_x + 2]
    # 0 -> 2: + links of nodes 0 and 1 (the tie from 0 goes +, as in plain dor).
    assert model_link_ids(network, routing, 0, 2) == [plus_x + 0, plus_x + 1]
    # 8 (x 0, y 2) -> 0: y 2 -> 1 -> 0 on the - Y links of nodes 8 and 4.
    assert model_link_ids(network, routing, 8, 0) == [minus_y + 4, minus_y + 8]
    assert routing.describe(network) == "dor-simgrid"
