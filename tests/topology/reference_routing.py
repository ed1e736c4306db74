"""Straightforward per-flow routers used only as references for the vectorised ones.

They walk the actual network node by node, deciding productive links from hop distances
(not from the offset/tie logic the fast routers use), so agreement is meaningful.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _neighbour(net, node, d, s):
    c = net.coordinates(node).copy()
    n = net.dims[d]
    step = 1 if s == 0 else -1
    if not net.wrap[d] and not 0 <= c[d] + step < n:
        return None
    c[d] = (c[d] + step) % n
    return int(net.node_ids(c[None, :])[0])


def torus_adaptive_reference(net, src, dst, weights, split):
    """Minimal adaptive routing by walking nodes: productive links are those whose far end is
    one hop closer to the destination."""
    loads = np.zeros((weights.shape[0], net.num_links))
    nn = net.num_nodes
    dist_cache = {}

    def dist(a, b):
        key = (a, b)
        if key not in dist_cache:
            dist_cache[key] = int(net.hop_distance([a], [b])[0])
        return dist_cache[key]

    def productive(u, t):
        out = []
        for d in range(net.ndim):
            if net.dims[d] == 1:
                continue
            for s in (0, 1):
                v = _neighbour(net, u, d, s)
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
        ct = net.coordinates(t)
        for d in order:
            n = net.dims[d]
            while net.coordinates(u)[d] != ct[d]:
                cu = net.coordinates(u)[d]
                if net.wrap[d]:
                    fwd = (ct[d] - cu) % n
                    s = 0 if fwd * 2 <= n else 1
                else:
                    s = 0 if ct[d] > cu else 1
                loads[:, (2 * d + s) * nn + u] += weights[:, f]
                u = _neighbour(net, u, d, s)
    return loads


def fattree_ecmp_reference(net, src, dst, weights):
    """ECMP by enumerating every choice of up-ports and cables up to the common ancestor."""
    loads = np.zeros((weights.shape[0], net.num_links))
    m, up, par = net.down, net.up, net.parallel
    top = net.common_level(src, dst)
    for f in range(len(src)):
        s, t, levels = int(src[f]), int(dst[f]), int(top[f])
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
                        net.link_offset(direction, lv)
                        + (elem * up[lv - 1] + ports[lv - 1]) * par[lv - 1]
                        + cabs[lv - 1]
                    )
                    loads[:, link] += weights[:, f] / len(paths)
                b_index += ports[lv - 1] * wprod
                wprod *= up[lv - 1]
    return loads
