"""Straightforward per-flow routers and distances, used only as references for the fast ones.

Nothing here asks the code under test how far two nodes are: node coordinates are computed
from the documented numbering (first dimension fastest), hop distances by breadth-first
search over the links the network's definition says exist, productive links as those whose
far end is one BFS hop closer, fat-tree link ids from the documented offsets, and dragonfly
hops by enumerating the documented global cabling. Only the networks' parameters (dims, wrap
flags, per-level counts) are read from the objects.
"""

from __future__ import annotations

import itertools
import math
from collections import deque

import numpy as np

# ---- torus / mesh --------------------------------------------------------------------------


def coords_of(net, node: int) -> list[int]:
    """Coordinates of a node id: first dimension fastest (x + X*(y + Y*z))."""
    out = []
    for size in net.dims:
        out.append(node % size)
        node //= size
    return out


def node_of(net, coords) -> int:
    node = 0
    for c, size in zip(reversed(coords), reversed(net.dims), strict=True):
        node = node * size + c
    return node


def neighbour(net, node: int, d: int, s: int) -> int | None:
    """The node at the far end of link (d, s) leaving ``node`` (s=0: +1, s=1: -1), if any."""
    if net.dims[d] == 1:
        return None
    c = coords_of(net, node)
    step = 1 if s == 0 else -1
    if not net.wrap[d] and not 0 <= c[d] + step < net.dims[d]:
        return None
    c[d] = (c[d] + step) % net.dims[d]
    return node_of(net, c)


def torus_bfs_distances(net, target: int) -> list[int]:
    """Hops from every node to ``target`` by breadth-first search over existing links."""
    dist = [-1] * net.num_nodes
    dist[target] = 0
    queue = deque([target])
    while queue:
        u = queue.popleft()
        for d in range(len(net.dims)):
            for s in (0, 1):
                v = neighbour(net, u, d, s)
                if v is not None and dist[v] < 0:
                    dist[v] = dist[u] + 1
                    queue.append(v)
    return dist


def torus_adaptive_reference(net, src, dst, weights, split):
    """Minimal adaptive routing by walking nodes: productive links are those whose far end is
    one BFS hop closer to the destination."""
    loads = np.zeros((weights.shape[0], net.num_links))
    nn = net.num_nodes
    to_target: dict[int, list[int]] = {}

    def dist(a, t):
        if t not in to_target:
            to_target[t] = torus_bfs_distances(net, t)
        return to_target[t][a]

    def productive(u, t):
        out = []
        for d in range(len(net.dims)):
            for s in (0, 1):
                v = neighbour(net, u, d, s)
                if v is not None and dist(v, t) == dist(u, t) - 1:
                    out.append((d, s, v))
        return out

    def count_paths(u, t, memo):
        if u == t:
            return 1
        if u not in memo:
            memo[u] = sum(count_paths(v, t, memo) for _, _, v in productive(u, t))
        return memo[u]

    for f in range(len(src)):
        s0, t = int(src[f]), int(dst[f])
        mass = {s0: 1.0}
        memo: dict = {}
        for _ in range(dist(s0, t)):
            nxt: dict = {}
            for u, m in mass.items():
                moves = productive(u, t)
                if split == "hop":
                    shares = [1.0 / len(moves)] * len(moves)
                else:
                    total = count_paths(u, t, memo)
                    shares = [count_paths(v, t, memo) / total for _, _, v in moves]
                for (d, s, v), share in zip(moves, shares, strict=True):
                    link = (2 * d + s) * nn + u
                    loads[:, link] += weights[:, f] * m * share
                    nxt[v] = nxt.get(v, 0.0) + m * share
            mass = nxt
    return loads


def torus_dor_reference(net, src, dst, weights, order):
    """Dimension-ordered routing by walking; half-ring ties go in the + direction."""
    loads = np.zeros((weights.shape[0], net.num_links))
    nn = net.num_nodes
    for f in range(len(src)):
        u, t = int(src[f]), int(dst[f])
        ct = coords_of(net, t)
        for d in order:
            n = net.dims[d]
            while coords_of(net, u)[d] != ct[d]:
                cu = coords_of(net, u)[d]
                if net.wrap[d]:
                    fwd = (ct[d] - cu) % n
                    s = 0 if fwd * 2 <= n else 1
                else:
                    s = 0 if ct[d] > cu else 1
                loads[:, (2 * d + s) * nn + u] += weights[:, f]
                u = neighbour(net, u, d, s)
    return loads


# ---- fat tree (XGFT) -------------------------------------------------------------------------


def fattree_elements(net, level: int) -> int:
    """Elements at a level: the subtrees' digits above it times the port choices below."""
    return math.prod(net.down[level:]) * math.prod(net.up[:level])


def fattree_parents(net, level: int, element: int) -> list[int]:
    """Level-``level`` parents of an element one level below (one per up-port): an element
    is labelled (subtree digits S, port choices B) with index S * prod(up below) + B; its
    parent through port b drops the lowest subtree digit and appends b to the choices."""
    below = math.prod(net.up[: level - 1])
    subtree, choices = divmod(element, below)
    return [
        (subtree // net.down[level - 1]) * below * net.up[level - 1] + choices + b * below
        for b in range(net.up[level - 1])
    ]


def fattree_bfs_leaf_distances(net, source: int) -> list[int]:
    """Hops from leaf ``source`` to every leaf, by BFS over the tree's element graph."""
    adjacency: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for level in range(1, len(net.down) + 1):
        for element in range(fattree_elements(net, level - 1)):
            for parent in fattree_parents(net, level, element):
                adjacency.setdefault((level - 1, element), set()).add((level, parent))
                adjacency.setdefault((level, parent), set()).add((level - 1, element))
    dist = {(0, source): 0}
    queue = deque([(0, source)])
    while queue:
        u = queue.popleft()
        for v in adjacency.get(u, ()):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return [dist[(0, leaf)] for leaf in range(net.num_nodes)]


def fattree_link_offset(net, direction: str, level: int) -> int:
    """First link id of a level's up or down links: levels in order, up links then down
    links, each level holding elements(level-1) x up x parallel cables (docstring)."""
    total = 0
    for lv in range(1, level):
        total += 2 * fattree_elements(net, lv - 1) * net.up[lv - 1] * net.parallel[lv - 1]
    count = fattree_elements(net, level - 1) * net.up[level - 1] * net.parallel[level - 1]
    return total + (count if direction == "down" else 0)


def fattree_common_level(net, a: int, b: int) -> int:
    level, span = 0, 1
    for lv in range(1, len(net.down) + 1):
        if a // span != b // span:
            level = lv
        span *= net.down[lv - 1]
    return level


def fattree_ecmp_reference(net, src, dst, weights):
    """ECMP by enumerating every choice of up-ports and cables up to the common ancestor."""
    loads = np.zeros((weights.shape[0], net.num_links))
    m, up, par = net.down, net.up, net.parallel
    for f in range(len(src)):
        s, t = int(src[f]), int(dst[f])
        levels = fattree_common_level(net, s, t)
        choices = [range(up[lv]) for lv in range(levels)]
        cables = [range(par[lv]) for lv in range(levels)]
        paths = list(itertools.product(itertools.product(*choices), itertools.product(*cables)))
        for ports, cabs in paths:
            b_index, wprod = 0, 1
            for lv in range(1, levels + 1):
                span = math.prod(m[: lv - 1])
                for direction, node in (("up", s), ("down", t)):
                    elem = (node // span) * wprod + b_index
                    link = (
                        fattree_link_offset(net, direction, lv)
                        + (elem * up[lv - 1] + ports[lv - 1]) * par[lv - 1]
                        + cabs[lv - 1]
                    )
                    loads[:, link] += weights[:, f] / len(paths)
                b_index += ports[lv - 1] * wprod
                wprod *= up[lv - 1]
    return loads


# ---- dragonfly -------------------------------------------------------------------------------


def dragonfly_cables(net, group_a: int, group_b: int) -> list[tuple[int, int]]:
    """(gateway router in a, landing router in b) of each global cable joining two groups,
    from the documented cabling: port q = r*h + k of group i reaches group
    (i + 1 + q mod (g-1)) mod g, and the i-th port of a towards b is cabled to the i-th port
    of b towards a."""
    g, h, a = net.groups, net.global_links, net.routers

    def ports_towards(source: int, target: int) -> list[int]:
        return [
            source * a + q // h for q in range(a * h) if (source + 1 + q % (g - 1)) % g == target
        ]

    return list(zip(ports_towards(group_a, group_b), ports_towards(group_b, group_a), strict=True))


def dragonfly_expected_hops(net, src: int, dst: int) -> float:
    """Router hops of minimal routing (local, global, local), averaged over the cables that
    share the traffic between two groups; node-router links do not count."""
    rs, rd = src // net.nodes, dst // net.nodes
    if rs == rd:
        return 0.0
    gs, gd = rs // net.routers, rd // net.routers
    if gs == gd:
        return 1.0
    hops = [(gw != rs) + 1 + (land != rd) for gw, land in dragonfly_cables(net, gs, gd)]
    return sum(hops) / len(hops)
