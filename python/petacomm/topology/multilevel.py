"""Multilevel mapping of a weighted communication graph onto a network, minimising hop-bytes.

The machine and the graph are both coarsened, and the mapping is built from the coarsest
pair down (the scheme of Scotch's dual recursive bipartitioning, done level-synchronously):

1. **Machine hierarchy** (:class:`MachineHierarchy`): the nodes are cut in halves
   recursively along their longest coordinate extent (``network.split_coordinates``), as
   recursive bisection does; depth ``d`` has up to ``2**d`` groups of nodes, each with the
   capacity of its cores. Each group is represented by the centre of its box of coordinates
   (torus/mesh, ring distances) or its first node (other networks), so the distance of two
   groups at depth ``D`` (single nodes) is the exact hop distance.
2. **Graph coarsening** by heavy-edge matching: every free vertex proposes to the neighbour
   it shares the heaviest edge with (per unit of the two vertex weights, a seeded jitter
   breaking ties), mutual proposals merge; vertex weights (ranks) and edge weights (bytes)
   add up. Level ``l`` is paired with machine depth ``D - l`` and its vertices never outweigh
   that depth's smallest group.
3. **Initial mapping** of the coarsest graph: the machine tree is descended from its root to
   the coarsest graph's depth, each group's vertices split between its two children (below)
   and refined at every depth, i.e. recursive bisection of graph and machine together.
4. **Uncoarsening**: each level inherits its coarse vertices' groups, splits every group
   between its two children - vertices sorted by how much closer their neighbours are to
   one child than to the other (a breadth-first order of the graph breaking ties), each
   child filled up to its share of the capacity, three rounds - then is refined.
5. **Refinement** (Fiduccia-Mattheyses / Kernighan-Lin style, only improving steps): for
   every vertex the groups its neighbours are in (every group when the distance matrix is
   small) are scored by the exact change of hop-bytes; vertices are visited by decreasing
   gain and moved when the target has room, else swapped with the member of the target
   whose swap gains most; each step's gain is recomputed from the current placement before
   it is applied, so hop-bytes never increase. Passes repeat until no step gains; then
   every pair of sibling groups is re-split optimally (all ways to share their vertices,
   for up to 12 vertices) and refined again while that gains.
6. **V-cycles** (two by default): the graph is coarsened again, vertices merging only
   within one group of the placement, and every level is refined from the coarsest down
   (whole clusters move at the coarse levels); a cycle is kept only if it lowers
   hop-bytes.

Each rank ends on a node with a free core (cores numbered in rank order); node capacities
are never exceeded. The optimiser stops refining when ``time_budget`` seconds have passed
and then only projects and balances the remaining levels; its :attr:`Mapping.stop_reason`
says which of ``converged`` / ``time budget`` happened. :func:`multilevel_mapping` is the
entry point; ``contention.py`` then lowers the maximum link load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from petacomm.topology.mapping import Mapping, check_rank_count
from petacomm.topology.network import TorusNetwork
from petacomm.topology.unique_keys import unique_keys

# Groups per depth up to which a dense group-distance matrix is kept (8 MB of float64).
_DENSE_GROUPS = 1024
# A move or swap is applied only when it gains more than this fraction of the level's
# total edge weight x one hop: rounding noise must not count as a gain.
_GAIN_TOLERANCE = 1e-12
_MAX_PASSES = 8
_TARGETS_PER_VERTEX = 4
_STAY_FACTOR = 1e9
_EXACT_SPLIT = 12
_RESPLIT_ROUNDS = 3
# Share of the time budget for the placement when contention refinement follows.
_PLACEMENT_SHARE = 0.6


class MachineHierarchy:
    """Recursive bisection tree of a network's nodes (module docstring, step 1).

    ``group[d]`` gives every node's group at depth ``d`` (groups numbered left to right in
    the tree, so consecutive groups are machine neighbours), ``capacity[d]`` the cores of
    each group, ``children[d]`` the two groups of depth ``d + 1`` a group splits into (the
    second is -1 when the group is a single node). Depth ``depth`` has one node per group.
    """

    def __init__(self, network, cores_per_node: int | None = None):
        self.network = network
        cores = network.cores_per_node if cores_per_node is None else cores_per_node
        nn = network.num_nodes
        coords = np.asarray(network.split_coordinates(np.arange(nn)), dtype=np.float64)
        order = np.arange(nn)
        group_of_position = np.zeros(nn, dtype=np.int64)  # group of order[i] at this depth
        self.group: list[np.ndarray] = []
        self.children: list[np.ndarray] = []
        while True:
            node_group = np.empty(nn, dtype=np.int64)
            node_group[order] = group_of_position
            self.group.append(node_group)
            starts = np.flatnonzero(np.r_[True, np.diff(group_of_position) != 0])
            sizes = np.diff(np.r_[starts, nn])
            if sizes.max() == 1:
                break
            # Split every group along its longest extent: sort its nodes by that coordinate.
            c = coords[order]
            spread = np.maximum.reduceat(c, starts, axis=0) - np.minimum.reduceat(c, starts, axis=0)
            axis = np.argmax(spread, axis=1)[group_of_position]
            key = c[np.arange(nn), axis]
            order = order[np.lexsort((np.arange(nn), key, group_of_position))]
            position_in_group = np.arange(nn) - np.repeat(starts, sizes)
            left = (sizes // 2)[group_of_position]
            right_half = (position_in_group >= left) & (sizes[group_of_position] > 1)
            # New group ids: each old group g becomes (g0, g1) in order.
            splits = (sizes > 1).astype(np.int64)
            first_child = np.r_[0, np.cumsum(1 + splits)[:-1]]
            children = np.stack([first_child, np.where(splits == 1, first_child + 1, -1)], axis=1)
            self.children.append(children)
            group_of_position = first_child[group_of_position] + right_half
        self.depth = len(self.group) - 1
        # parent[d][g]: the group of depth d - 1 that group g of depth d came from.
        self.parent = [np.zeros(1, dtype=np.int64)]
        for d in range(1, self.depth + 1):
            up = np.empty(int(self.group[d].max()) + 1, dtype=np.int64)
            up[self.group[d]] = self.group[d - 1]
            self.parent.append(up)
        self.capacity = [
            np.bincount(g, minlength=int(g.max()) + 1).astype(np.float64) * cores
            for g in self.group
        ]
        self.order = order  # nodes in tree order
        self._torus = isinstance(network, TorusNetwork)
        if self._torus:
            node_coords = network.coordinates(np.arange(nn)).astype(np.float64)
            self._dims = np.asarray(network.dims, dtype=np.float64)
            self._wrap = np.asarray(network.wrap, dtype=bool)
            self.reps = [
                np.stack(
                    [
                        np.bincount(g, weights=node_coords[:, k]) / np.bincount(g)
                        for k in range(network.ndim)
                    ],
                    axis=1,
                )
                for g in self.group
            ]
        else:
            first = []
            for g in self.group:
                rep = np.full(int(g.max()) + 1, nn, dtype=np.int64)
                np.minimum.at(rep, g, np.arange(nn))
                first.append(rep)
            self.reps = first
        self._dense: dict[int, np.ndarray] = {}

    def ancestor(self, groups: np.ndarray, depth: int, to_depth: int) -> np.ndarray:
        """The groups at ``to_depth`` (<= ``depth``) containing ``groups`` of ``depth``."""
        for d in range(depth, to_depth, -1):
            groups = self.parent[d][groups]
        return groups

    def num_groups(self, depth: int) -> int:
        return self.capacity[depth].size

    def distance(self, depth_a: int, a, depth_b: int, b) -> np.ndarray:
        """Distances between groups ``a`` (depth ``depth_a``) and ``b`` (depth ``depth_b``),
        broadcast; exact hop distances between single nodes."""
        if self._torus:
            diff = np.abs(self.reps[depth_a][a] - self.reps[depth_b][b])
            diff = np.where(self._wrap, np.minimum(diff, self._dims - diff), diff)
            return diff.sum(axis=-1)
        ra, rb = np.broadcast_arrays(self.reps[depth_a][a], self.reps[depth_b][b])
        return np.asarray(self.network.hop_distance(ra, rb), dtype=np.float64)

    def distance_matrix(self, depth: int) -> np.ndarray | None:
        """All group-to-group distances at ``depth`` when there are few groups, else None."""
        g = self.num_groups(depth)
        if g > _DENSE_GROUPS:
            return None
        if depth not in self._dense:
            ids = np.arange(g)
            self._dense[depth] = self.distance(depth, ids[:, None], depth, ids[None, :])
        return self._dense[depth]


@dataclass
class _Level:
    """One graph of the coarsening hierarchy: symmetric CSR without diagonal, vertex
    weights, and the coarse vertex each vertex merged into (for all but the coarsest)."""

    graph: sp.csr_matrix
    weight: np.ndarray
    depth: int
    coarse: np.ndarray | None = None
    group: np.ndarray | None = None  # in a V-cycle: each vertex's group at ``depth``


@dataclass
class MultilevelStats:
    """What the optimiser did: levels, refinement passes and steps, hop-bytes per stage."""

    levels: int = 0
    passes: int = 0
    moves: int = 0
    swaps: int = 0
    rebalanced: int = 0
    v_cycles: int = 0
    stop_reason: str = "converged"
    seconds: dict[str, float] = field(default_factory=dict)


_HIERARCHIES: dict[str, MachineHierarchy] = {}


def machine_hierarchy(network) -> MachineHierarchy:
    """The :class:`MachineHierarchy` of a network, kept for the last few networks (the
    optimisers of one search, and repeated runs, share it; it is never modified)."""
    key = network.to_text()
    if key not in _HIERARCHIES:
        if len(_HIERARCHIES) >= 4:
            _HIERARCHIES.clear()
        _HIERARCHIES[key] = MachineHierarchy(network)
    return _HIERARCHIES[key]


def heavy_edge_matching(
    graph: sp.csr_matrix,
    weight: np.ndarray,
    max_weight: float,
    rng: np.random.Generator,
    label: np.ndarray | None = None,
) -> np.ndarray:
    """Coarse vertex of every vertex after matching heavy edges (module docstring, step 2).

    Each round, every free vertex proposes to its best free neighbour by edge weight per
    unit of the two vertex weights; a seeded random priority of the *edge* (the same from
    both ends) breaks ties, so an edge that is the best of both its ends is proposed from
    both sides and merges even when all weights are equal. Merged weights never exceed
    ``max_weight``; with ``label``, only vertices of equal labels merge."""
    n = graph.shape[0]
    match = np.full(n, -1, dtype=np.int64)
    indptr, indices, data = graph.indptr, graph.indices, graph.data
    row = np.repeat(np.arange(n), np.diff(indptr))
    has_edges = np.diff(indptr) > 0
    starts = indptr[:-1][has_edges]
    lo, hi = np.minimum(row, indices), np.maximum(row, indices)
    salt = int(rng.integers(1, 1 << 31))
    edge_priority = ((lo * 0x9E3779B1 + hi * 0x85EBCA77 + salt) % 1_000_003) / 1_000_003.0
    score_all = data / (weight[row] * weight[indices]) * (1.0 + 1e-3 * edge_priority)
    for _ in range(8):
        free = match < 0
        ok = free[row] & free[indices] & (weight[row] + weight[indices] <= max_weight)
        if label is not None:
            ok &= label[row] == label[indices]
        if not ok.any():
            break
        score = np.where(ok, score_all, -1.0)
        best = np.full(n, -1.0)
        best[has_edges] = np.maximum.reduceat(score, starts)
        is_best = (score == best[row]) & ok
        proposal = np.full(n, -1, dtype=np.int64)
        # The first best edge of every row (reversed assignment keeps the first).
        pos = np.flatnonzero(is_best)[::-1]
        proposal[row[pos]] = indices[pos]
        proposers = np.flatnonzero(proposal >= 0)
        mutual = proposers[proposal[proposal[proposers]] == proposers]
        if mutual.size == 0:
            break
        match[mutual] = proposal[mutual]
    single = match < 0
    match[single] = np.flatnonzero(single)
    leader = np.minimum(np.arange(n), match)
    _, coarse = np.unique(leader, return_inverse=True)
    return coarse.astype(np.int64)


def _contract(graph: sp.csr_matrix, weight: np.ndarray, coarse: np.ndarray):
    """The coarse graph (edge weights summed, internal edges dropped) and vertex weights."""
    nc = int(coarse.max()) + 1
    n = graph.shape[0]
    p = sp.csr_matrix((np.ones(n), (np.arange(n), coarse)), shape=(n, nc))
    cg = without_diagonal((p.T @ graph @ p).tocsr())
    return cg, np.bincount(coarse, weights=weight, minlength=nc)


def _bfs_rank(graph: sp.csr_matrix) -> np.ndarray:
    """Position of every vertex in a reverse Cuthill-McKee order (a breadth-first order from
    a peripheral vertex), scaled to [0, 1): the tie-break of the first splits."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n = graph.shape[0]
    order = reverse_cuthill_mckee(graph, symmetric_mode=True)
    rank = np.empty(n, dtype=np.float64)
    rank[order] = np.arange(n) / max(1, n)
    return rank


class _Refiner:
    """Placement of one graph level on the groups of one machine depth, with the split,
    balance and refinement steps (module docstring, steps 4-5)."""

    def __init__(self, level: _Level, hier: MachineHierarchy, depth: int, group: np.ndarray):
        self.graph = level.graph
        self.weight = level.weight
        self.hier = hier
        self.depth = depth
        self.group = group
        self.capacity = hier.capacity[depth]
        self.load = np.bincount(group, weights=self.weight, minlength=self.capacity.size)
        self.dense = hier.distance_matrix(depth)
        self._keys = None  # sorted (row * n + column) of the edges, built on first use

    # ---- costs --------------------------------------------------------------------------
    def _dist(self, a, b) -> np.ndarray:
        if self.dense is not None:
            return self.dense[a, b]
        return self.hier.distance(self.depth, a, self.depth, b)

    def costs(self, v: int, targets: np.ndarray) -> np.ndarray:
        """Sum over v's edges of weight x distance if v sat in each of ``targets``."""
        g = self.graph
        s, e = g.indptr[v], g.indptr[v + 1]
        where = self.group[g.indices[s:e]]
        return self._dist(targets[:, None], where[None, :]) @ g.data[s:e]

    def hop_bytes(self) -> float:
        coo = sp.triu(self.graph, k=1).tocoo()
        return float((coo.data * self._dist(self.group[coo.row], self.group[coo.col])).sum())

    def _sparse_candidates(self, k: int):
        """Candidate targets among the groups of each vertex's neighbours (the boundary),
        the ``k`` holding most of its edge weight; exact gains by expanding its edges."""
        g = self.graph
        n = g.shape[0]
        row = np.repeat(np.arange(n), np.diff(g.indptr))
        ngroups = self.capacity.size
        key = row * ngroups + self.group[g.indices]
        uniq, inverse = unique_keys(key, n * ngroups)
        wsum = np.bincount(inverse, weights=g.data)
        brow, bgroup = uniq // ngroups, uniq % ngroups
        bstart = np.searchsorted(brow, np.arange(n + 1))
        # Candidates: the k heaviest neighbour groups other than the vertex's own.
        own = bgroup == self.group[brow]
        order = np.lexsort((-wsum, own, brow))  # per vertex: other groups, heaviest first
        rank_in_row = np.arange(order.size) - bstart[brow[order]]
        pick = order[(rank_in_row < k) & ~own[order]]
        cand_v, cand_g = brow[pick], bgroup[pick]
        pairs_v = np.concatenate([cand_v, np.arange(n)])
        pairs_g = np.concatenate([cand_g, self.group])
        # Exact cost of each (vertex, group) pair over the vertex's aggregated edges.
        lengths = bstart[pairs_v + 1] - bstart[pairs_v]
        pair_of = np.repeat(np.arange(pairs_v.size), lengths)
        entry = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        entry += bstart[pairs_v][pair_of]
        cost = np.bincount(
            pair_of,
            weights=wsum[entry] * self._dist(pairs_g[pair_of], bgroup[entry]),
            minlength=pairs_v.size,
        )
        current = cost[cand_v.size :]
        gains_flat = current[cand_v] - cost[: cand_v.size]
        targets = np.full((n, k), -1, dtype=np.int64)
        gains = np.full((n, k), -np.inf)
        slot = np.arange(cand_v.size) - np.searchsorted(cand_v, cand_v)
        targets[cand_v, slot] = cand_g
        gains[cand_v, slot] = gains_flat
        return targets, gains

    # ---- split, balance -------------------------------------------------------------------
    def split_from(self, parent_depth: int, parent: np.ndarray, tiebreak: np.ndarray) -> None:
        """Place every vertex in one of the two children of its group at ``parent_depth``
        (module docstring, step 4); ``tiebreak`` in [0, 1) orders vertices with equal
        preference (a breadth-first position)."""
        hier, depth, g = self.hier, self.depth, self.graph
        children = hier.children[parent_depth][parent]
        c0, c1 = children[:, 0], children[:, 1]
        single = c1 < 0
        c1 = np.where(single, c0, c1)
        cap0, cap1 = self.capacity[c0], self.capacity[c1]
        n = g.shape[0]
        row = np.repeat(np.arange(n), np.diff(g.indptr))
        nparents = hier.num_groups(parent_depth)
        parent_load = np.bincount(parent, weights=self.weight, minlength=nparents)
        share0 = np.where(single, 1.0, cap0 / (cap0 + cap1))
        target0 = parent_load[parent] * share0
        position_depth, position = parent_depth, parent
        group = c0.copy()
        for _ in range(3):
            # Edge weight per (vertex, group of the neighbour): dense graphs shrink a lot.
            ngroups = hier.num_groups(position_depth)
            key = row * ngroups + position[g.indices]
            uniq, inverse = unique_keys(key, n * ngroups)
            by_group = np.bincount(inverse, weights=g.data)
            vrow, nb = uniq // ngroups, uniq % ngroups
            d0 = hier.distance(depth, c0[vrow], position_depth, nb)
            d1 = hier.distance(depth, c1[vrow], position_depth, nb)
            pref = np.bincount(vrow, weights=by_group * (d0 - d1), minlength=n)
            scale = max(1.0, float(np.abs(pref).max(initial=0.0)))
            pref = pref / scale + 1e-9 * tiebreak
            order = np.lexsort((pref, parent))
            w = self.weight[order]
            cum = np.cumsum(w)
            p_sorted = parent[order]
            seg_start = np.flatnonzero(np.r_[True, p_sorted[1:] != p_sorted[:-1]])
            base = np.repeat(cum[seg_start] - w[seg_start], np.diff(np.r_[seg_start, n]))
            middle = cum - base - w / 2
            first = middle < target0[order]
            group = np.empty(n, dtype=np.int64)
            group[order] = np.where(first, c0[order], c1[order])
            position_depth, position = depth, group
        self.group = group
        self._split_exactly(parent_depth, parent, target0)
        self.load = np.bincount(self.group, weights=self.weight, minlength=self.capacity.size)

    def _split_exactly(self, parent_depth: int, parent: np.ndarray, target0: np.ndarray) -> None:
        """Re-split every group of at most ``_EXACT_SPLIT`` vertices optimally: of all the
        ways to share its vertices between its two children that are as balanced as the
        weights allow, the one with the least hop-bytes (cut edges at the children's
        distance plus edges to the other vertices at their current groups), groups taken
        one after another so that later ones see earlier ones' children."""
        g, hier = self.graph, self.hier
        nparents = hier.num_groups(parent_depth)
        children = hier.children[parent_depth]
        members = _members(parent, nparents)
        local = np.full(g.shape[0], -1, dtype=np.int64)
        for p in range(nparents):
            mem = members[p]
            m = len(mem)
            c0, c1 = int(children[p, 0]), int(children[p, 1])
            if c1 < 0 or m < 2 or m > _EXACT_SPLIT:
                continue
            mem = np.asarray(mem)
            local[mem] = np.arange(m)
            lengths = g.indptr[mem + 1] - g.indptr[mem]
            owner = np.repeat(np.arange(m), lengths)
            entry = np.concatenate([np.arange(g.indptr[v], g.indptr[v + 1]) for v in mem])
            nb, w = g.indices[entry], g.data[entry]
            inside = local[nb] >= 0
            internal = np.zeros((m, m))
            np.add.at(internal, (owner[inside], local[nb[inside]]), w[inside])
            out = ~inside
            where = self.group[nb[out]]
            e0 = np.bincount(owner[out], w[out] * self._dist(np.full(where.size, c0), where), m)
            e1 = np.bincount(owner[out], w[out] * self._dist(np.full(where.size, c1), where), m)
            local[mem] = -1
            masks = _subset_masks(m)
            weights = self.weight[mem]
            load0 = masks @ weights
            deviation = np.abs(load0 - target0[mem[0]])
            feasible = deviation <= deviation.min() + float(weights.max()) - 1.0 + 1e-9
            cut = ((masks @ internal) * (1.0 - masks)).sum(axis=1)
            cost = masks @ e0 + (1.0 - masks) @ e1 + cut * float(self._dist(c0, c1))
            cost[~feasible] = np.inf
            best = masks[int(np.argmin(cost))].astype(bool)
            self.group[mem] = np.where(best, c0, c1)

    def rebalance(self, stats: MultilevelStats) -> None:
        """Bring every group's load within its capacity plus the level's slack (the heaviest
        vertex's weight minus one, so 0 for ranks: a group under capacity always has room
        for any vertex) by moving vertices to the nearest groups with room, choosing the
        vertex and target that raise hop-bytes least."""
        allowed = self.capacity + (float(self.weight.max()) - 1.0)
        over = np.flatnonzero(self.load > allowed + 1e-9)
        if over.size == 0:
            return
        members = _members(self.group, self.capacity.size)
        for gid in over:
            while self.load[gid] > allowed[gid] + 1e-9:
                inside = np.asarray(members[gid])
                room = allowed - self.load
                fits = np.flatnonzero(room >= self.weight[inside].min() - 1e-9)
                if fits.size == 0:
                    raise ValueError("multilevel mapping: the ranks do not fit on the network")
                near = fits[np.argsort(self._dist(np.full(fits.size, gid), fits), kind="stable")]
                near = near[:16]
                best = None
                for v in inside.tolist():
                    ok = near[room[near] >= self.weight[v] - 1e-9]
                    if ok.size == 0:
                        continue
                    c = self.costs(v, np.r_[gid, ok])
                    i = int(np.argmin(c[1:]))
                    increase = c[1 + i] - c[0]
                    if best is None or increase < best[0]:
                        best = (increase, v, int(ok[i]))
                _, v, target = best  # some vertex fits: the lightest one does
                self._move(v, target, members)
                stats.rebalanced += 1

    def _move(self, v: int, target: int, members) -> None:
        source = self.group[v]
        members[source].remove(v)
        members[target].append(v)
        self.group[v] = target
        self.load[source] -= self.weight[v]
        self.load[target] += self.weight[v]

    # ---- refinement ---------------------------------------------------------------------
    def pair_costs(self, vertices: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Cost of each vertex if it sat in the paired group (vectorised :meth:`costs`)."""
        g = self.graph
        lengths = g.indptr[vertices + 1] - g.indptr[vertices]
        pair_of = np.repeat(np.arange(vertices.size), lengths)
        entry = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        entry += g.indptr[vertices][pair_of]
        where = self.group[g.indices[entry]]
        return np.bincount(
            pair_of,
            weights=g.data[entry] * self._dist(groups[pair_of], where),
            minlength=vertices.size,
        )

    def edge_weight_pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Weight of the edge between a[i] and b[i] (0 where there is none)."""
        g = self.graph
        n = g.shape[0]
        if g.nnz == 0:
            return np.zeros(a.size)
        if self._keys is None:
            self._keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(g.indptr)) * n + g.indices
        keys = self._keys
        wanted = a.astype(np.int64) * n + b
        pos = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
        return np.where(keys[pos] == wanted, g.data[pos], 0.0)

    def _proposals(self, tolerance: float):
        """Moves and swaps that gain hop-bytes on the current placement, best first, as
        arrays (gain, v, u or -1 for a move, target group of v)."""
        n = self.graph.shape[0]
        ngroups = self.capacity.size
        k = min(_TARGETS_PER_VERTEX, ngroups - 1)
        dense_costs = None
        if self.dense is not None and n * ngroups <= 8_000_000:
            # graph @ onehot(group) @ dense: as a sparse times dense product (nnz x groups
            # operations) when the graph is sparser than the groups are many, else as a
            # dense product (n x groups x groups, by BLAS).
            if self.graph.nnz < n * ngroups:
                dense_costs = np.asarray(self.graph @ self.dense[self.group])
            else:
                onehot = sp.csr_matrix((np.ones(n), (np.arange(n), self.group)), shape=(n, ngroups))
                dense_costs = (self.graph @ onehot).toarray() @ self.dense
            cost = dense_costs.copy()
            current = cost[np.arange(n), self.group]
            cost[np.arange(n), self.group] = np.inf
            targets = np.argpartition(cost, k - 1, axis=1)[:, :k]
            gains = current[:, None] - np.take_along_axis(cost, targets, axis=1)
        else:
            targets, gains = self._sparse_candidates(k)
        v, slot = np.nonzero(gains > tolerance)
        x = targets[v, slot]
        gain_v = gains[v, slot]
        a = self.group[v]
        # Moves into groups with room.
        movable = self.load[x] + self.weight[v] <= self.capacity[x] + 1e-9
        # Swaps with every member of the target group.
        order = np.argsort(self.group, kind="stable")
        counts = np.bincount(self.group, minlength=ngroups)
        first = np.r_[0, np.cumsum(counts)[:-1]]
        width = int(counts.max(initial=0))
        members = np.full((ngroups, max(width, 1)), -1, dtype=np.int64)
        members[self.group[order], np.arange(n) - first[self.group[order]]] = order
        sv = np.repeat(np.arange(v.size), members.shape[1])
        su = members[x].ravel()
        keep = su >= 0
        sv, su = sv[keep], su[keep]
        pv, pa, px = v[sv], a[sv], x[sv]
        w_v, w_u = self.weight[pv], self.weight[su]
        new_a = self.load[pa] - w_v + w_u
        new_x = self.load[px] - w_u + w_v
        fits = (new_a <= np.maximum(self.capacity[pa], self.load[pa]) + 1e-9) & (
            new_x <= np.maximum(self.capacity[px], self.load[px]) + 1e-9
        )
        sv, su, pv, pa, px = sv[fits], su[fits], pv[fits], pa[fits], px[fits]
        if dense_costs is not None:
            gain_u = dense_costs[su, px] - dense_costs[su, pa]
        else:
            both = self.pair_costs(np.r_[su, su], np.r_[px, pa])
            gain_u = both[: su.size] - both[su.size :]
        total = gain_v[sv] + gain_u - 2 * self.edge_weight_pairs(pv, su) * self._dist(pa, px)
        good = total > tolerance
        gain = np.r_[gain_v[movable], total[good]]
        out_v = np.r_[v[movable], pv[good]]
        out_u = np.r_[np.full(int(movable.sum()), -1), su[good]]
        out_x = np.r_[x[movable], px[good]]
        best = np.argsort(-gain, kind="stable")
        return gain[best], out_v[best], out_u[best], out_x[best]

    def refine(
        self, deadline: float, stats: MultilevelStats, max_passes: int | None = None
    ) -> bool:
        """Improving moves and swaps until a pass gains nothing (module docstring, step 5),
        or ``max_passes`` passes (then ``stats.stop_reason`` is ``refinement limit``).
        Returns False when the deadline stopped it."""
        g = self.graph
        if g.nnz == 0 or self.capacity.size < 2:
            return True
        tolerance = _GAIN_TOLERANCE * float(g.data.sum()) * 2
        weight, capacity, load, group = self.weight, self.capacity, self.load, self.group
        for _ in range(_MAX_PASSES if max_passes is None else min(max_passes, _MAX_PASSES)):
            if time.perf_counter() > deadline:
                return False
            stats.passes += 1
            gains, vs, us, xs = self._proposals(tolerance)
            if gains.size == 0:
                return True
            done = np.zeros(g.shape[0], dtype=bool)
            steps = 0
            for count, (v, u, x) in enumerate(
                zip(vs.tolist(), us.tolist(), xs.tolist(), strict=True)
            ):
                if count % 256 == 0 and time.perf_counter() > deadline:
                    return False
                if done[v] or (u >= 0 and done[u]):
                    continue
                a = int(group[v])
                if u < 0:
                    if load[x] + weight[v] > capacity[x] + 1e-9:
                        continue
                    c = self.costs(v, np.array([a, x]))
                    if c[0] - c[1] <= tolerance:
                        continue
                    self._apply(v, x)
                    done[v] = True
                    stats.moves += 1
                else:
                    if group[u] != x:
                        continue
                    new_a = load[a] - weight[v] + weight[u]
                    new_x = load[x] - weight[u] + weight[v]
                    if new_a > max(capacity[a], load[a]) + 1e-9 or (
                        new_x > max(capacity[x], load[x]) + 1e-9
                    ):
                        continue
                    cv = self.costs(v, np.array([a, x]))
                    cu = self.costs(u, np.array([x, a]))
                    w_vu = self.edge_weight_pairs(np.array([v]), np.array([u]))[0]
                    d_ax = float(self._dist(np.asarray(a), np.asarray(x)))
                    if (cv[0] - cv[1]) + (cu[0] - cu[1]) - 2 * w_vu * d_ax <= tolerance:
                        continue
                    self._apply(v, x)
                    self._apply(u, a)
                    done[v] = done[u] = True
                    stats.swaps += 1
                steps += 1
            if steps == 0:
                return True
        if max_passes is not None:  # the passes not made might have gained
            stats.stop_reason = "refinement limit"
        return True

    def _apply(self, v: int, target: int) -> None:
        source = self.group[v]
        self.group[v] = target
        self.load[source] -= self.weight[v]
        self.load[target] += self.weight[v]


_MASKS: dict[int, np.ndarray] = {}


def _subset_masks(m: int) -> np.ndarray:
    """Every subset of m items as a (2**m, m) array of 0/1 (float)."""
    if m not in _MASKS:
        _MASKS[m] = ((np.arange(1 << m)[:, None] >> np.arange(m)[None, :]) & 1).astype(float)
    return _MASKS[m]


def _members(group: np.ndarray, ngroups: int) -> list[list[int]]:
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(ngroups + 1))
    flat = order.tolist()
    return [flat[bounds[i] : bounds[i + 1]] for i in range(ngroups)]


def _match(level: _Level, hier: MachineHierarchy, depth: int, rng) -> np.ndarray:
    """Heavy-edge matching of a level for a coarser level at ``depth``."""
    label = None
    if level.group is not None:
        label = hier.ancestor(level.group, level.depth, depth)
    max_weight = float(hier.capacity[depth].min())
    return heavy_edge_matching(level.graph, level.weight, max_weight, rng, label)


def _coarsen(
    graph, hier: MachineHierarchy, rng, min_vertices: int, placement: np.ndarray | None = None
) -> list[_Level]:
    """Graph levels, finest first, each with the machine depth it is placed at: a level
    stays at its finer neighbour's depth while that depth still has two vertices per group
    to merge (so ranks are first clustered into node-sized vertices), else goes one depth
    up; a level's vertices never outweigh its depth's smallest group. With a
    ``placement`` (every rank's group at the deepest depth; a V-cycle), vertices merge only
    within one group of the new level's depth, and every level records its groups."""
    levels = [_Level(graph, np.ones(graph.shape[0]), depth=hier.depth, group=placement)]
    while True:
        current = levels[-1]
        size = current.graph.shape[0]
        if size <= min_vertices or current.graph.nnz == 0:
            break
        depth = current.depth
        if size < _STAY_FACTOR * hier.num_groups(depth):
            depth -= 1
        if depth < 1:
            break

        coarse = _match(current, hier, depth, rng)
        nc = int(coarse.max()) + 1
        if nc > 0.95 * size:
            if depth == current.depth and depth > 1:
                # Nothing left to merge within this depth's capacity: go up a depth.
                depth -= 1
                coarse = _match(current, hier, depth, rng)
                nc = int(coarse.max()) + 1
            if nc > 0.95 * size:
                break
        cg, cw = _contract(current.graph, current.weight, coarse)
        current.coarse = coarse
        coarse_group = None
        if current.group is not None:
            coarse_group = np.empty(nc, dtype=np.int64)
            coarse_group[coarse] = hier.ancestor(current.group, current.depth, depth)
        levels.append(_Level(cg, cw, depth=depth, group=coarse_group))
    return levels


def multilevel_placement(
    graph: sp.csr_matrix,
    network,
    time_budget: float = 10.0,
    seed: int = 0,
    hierarchy: MachineHierarchy | None = None,
    v_cycles: int = 2,
) -> tuple[np.ndarray, MultilevelStats]:
    """Node of every rank (module docstring) for a symmetric graph of bytes between ranks,
    and what the optimiser did. Node capacities (cores per node) are respected."""
    start = time.perf_counter()
    deadline = start + time_budget
    n = graph.shape[0]
    check_rank_count(n, network)
    stats = MultilevelStats()
    graph = _clean(graph)
    hier = hierarchy if hierarchy is not None else machine_hierarchy(network)
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    levels = _coarsen(graph, hier, rng, min_vertices=8)
    stats.levels = len(levels)
    stats.seconds["coarsen"] = time.perf_counter() - t
    # Initial mapping: descend the machine tree with the coarsest graph.
    t = time.perf_counter()
    coarsest = levels[-1]
    tiebreak = _bfs_rank(coarsest.graph)
    group = np.zeros(coarsest.graph.shape[0], dtype=np.int64)
    for depth in range(1, coarsest.depth + 1):
        group = _place_level(coarsest, hier, depth, depth - 1, group, tiebreak, deadline, stats)
    stats.seconds["initial"] = time.perf_counter() - t
    # Uncoarsening.
    t = time.perf_counter()
    for finer, coarser in zip(levels[-2::-1], levels[:0:-1], strict=True):
        parent = group[finer.coarse]
        group = _place_level(finer, hier, finer.depth, coarser.depth, parent, None, deadline, stats)
    stats.seconds["uncoarsen"] = time.perf_counter() - t
    # V-cycles: coarsen again within the current placement and refine every level.
    t = time.perf_counter()
    for _ in range(v_cycles):
        if stats.stop_reason != "converged":
            break
        before = _Refiner(levels[0], hier, hier.depth, group).hop_bytes()
        candidate = _v_cycle(graph, hier, group, rng, deadline, stats)
        after = _Refiner(levels[0], hier, hier.depth, candidate).hop_bytes()
        stats.v_cycles += 1
        if after < before:
            group = candidate
        if after >= before * (1 - 1e-4):
            break
    stats.seconds["v-cycles"] = time.perf_counter() - t
    node_of_group = np.empty(hier.num_groups(hier.depth), dtype=np.int64)
    node_of_group[hier.group[hier.depth]] = np.arange(network.num_nodes)
    return node_of_group[group], stats


def _v_cycle(graph, hier, group, rng, deadline, stats) -> np.ndarray:
    """One V-cycle (module docstring, step 6): the placement's groups at the deepest depth
    after re-coarsening within it and refining every level from the coarsest down."""
    levels = _coarsen(graph, hier, rng, min_vertices=8, placement=group)
    coarsest = levels[-1]
    current = _place_level(
        coarsest, hier, coarsest.depth, coarsest.depth, coarsest.group, None, deadline, stats
    )
    for finer, coarser in zip(levels[-2::-1], levels[:0:-1], strict=True):
        parent = current[finer.coarse]
        if finer.depth == coarser.depth:
            start = parent
        else:
            # Vertices whose coarse vertex stayed keep their group; the others take the
            # child of their new group that suits their neighbours best.
            start = finer.group.copy()
            moved = np.flatnonzero(hier.ancestor(start, finer.depth, coarser.depth) != parent)
            if moved.size:
                children = hier.children[coarser.depth][parent[moved]]
                refiner = _Refiner(finer, hier, finer.depth, start)
                for v, pair in zip(moved.tolist(), children.tolist(), strict=True):
                    options = np.array([c for c in pair if c >= 0])
                    start[v] = options[int(np.argmin(refiner.costs(v, options)))]
        current = _place_level(finer, hier, finer.depth, finer.depth, start, None, deadline, stats)
    return current


def _place_level(
    level,
    hier,
    depth,
    parent_depth,
    parent,
    tiebreak,
    deadline,
    stats,
    resplit_rounds=None,
    max_passes=None,
):
    """Groups at ``depth`` of a level's vertices, from their groups at ``parent_depth``
    (the same depth, or one above: then split first); balanced, then refined unless the
    time budget is spent (at most ``max_passes`` passes, if given); then up to
    ``resplit_rounds`` (default ``_RESPLIT_ROUNDS``) rounds of sibling re-splits."""
    if depth == parent_depth:
        refiner = _Refiner(level, hier, depth, parent.copy())
    else:
        refiner = _Refiner(level, hier, depth, np.zeros_like(parent))
        if tiebreak is None:
            tiebreak = np.zeros(level.graph.shape[0])
        refiner.split_from(parent_depth, parent, tiebreak)
    refiner.rebalance(stats)
    if stats.stop_reason == "converged" and not refiner.refine(deadline, stats, max_passes):
        stats.stop_reason = "time budget"
    # Alternate optimal re-splits of sibling groups with refinement while they gain.
    rounds = _RESPLIT_ROUNDS if resplit_rounds is None else resplit_rounds
    for _ in range(rounds):
        if depth == 0 or stats.stop_reason != "converged":
            break
        before = refiner.hop_bytes()
        kept = refiner.group.copy()
        ancestors = hier.parent[depth][refiner.group]
        share = (
            hier.capacity[depth][hier.children[depth - 1][ancestors, 0]]
            / hier.capacity[depth - 1][ancestors]
        )
        load = np.bincount(ancestors, weights=level.weight, minlength=hier.num_groups(depth - 1))
        refiner._split_exactly(depth - 1, ancestors, load[ancestors] * share)
        refiner.load = np.bincount(
            refiner.group, weights=level.weight, minlength=refiner.capacity.size
        )
        refiner.rebalance(stats)
        if not refiner.refine(deadline, stats, max_passes):
            stats.stop_reason = "time budget"
        after = refiner.hop_bytes()
        if after > before:  # the rebalance after a re-split can cost more than it gained
            refiner.group = kept
        if after >= before * (1 - 1e-6):
            break
    return refiner.group


def cores_in_rank_order(node: np.ndarray) -> np.ndarray:
    """Core index of every rank: the ranks of a node take its cores in rank order."""
    order = np.argsort(node, kind="stable")
    sorted_nodes = node[order]
    first = np.searchsorted(sorted_nodes, sorted_nodes)
    core = np.empty(node.size, dtype=np.int64)
    core[order] = np.arange(node.size) - first
    return core


def refine_placement(
    graph: sp.csr_matrix,
    network,
    node: np.ndarray,
    time_budget: float = 5.0,
    hierarchy: MachineHierarchy | None = None,
    resplit: bool = True,
    clean: bool = False,
    max_passes: int | None = None,
) -> tuple[np.ndarray, MultilevelStats]:
    """Refine any placement (node of every rank) on hop-bytes with the finest level's
    moves, swaps and, with ``resplit``, sibling re-splits (module docstring, step 5);
    hop-bytes never rises and node capacities are respected (an over-full node is emptied
    first). Without re-splits it is several times quicker: on a placement as good as
    Scotch's they gain a few tenths of a percent more. ``clean``: ``graph`` is already a
    float64 CSR matrix without diagonal or explicit zeros, indices sorted (as
    :func:`without_diagonal` gives it), and is used as it is. ``max_passes``: at most that
    many passes of moves and swaps in each refinement (one without re-splits; each re-split
    round refines again), a limit of work, not of time: the same input gives the same
    placement on any machine, unless ``time_budget`` stops it first."""
    check_rank_count(graph.shape[0], network)
    stats = MultilevelStats()
    graph = graph if clean else _clean(graph)
    hier = hierarchy if hierarchy is not None else machine_hierarchy(network)
    level = _Level(graph, np.ones(graph.shape[0]), depth=hier.depth)
    group_of_node = hier.group[hier.depth]
    deadline = time.perf_counter() + time_budget
    group = _place_level(
        level,
        hier,
        hier.depth,
        hier.depth,
        group_of_node[node],
        None,
        deadline,
        stats,
        None if resplit else 0,
        max_passes,
    )
    node_of_group = np.empty(network.num_nodes, dtype=np.int64)
    node_of_group[group_of_node] = np.arange(network.num_nodes)
    return node_of_group[group], stats


def _clean(graph) -> sp.csr_matrix:
    return without_diagonal(sp.csr_matrix(graph, dtype=np.float64))


def without_diagonal(graph: sp.csr_matrix) -> sp.csr_matrix:
    """A copy of a CSR matrix without its diagonal and explicit zeros, indices sorted
    (``setdiag(0)`` inserts the missing diagonal entries one by one: slow)."""
    graph = graph.tocsr()
    row = np.repeat(np.arange(graph.shape[0]), np.diff(graph.indptr))
    keep = (row != graph.indices) & (graph.data != 0)
    out = sp.csr_matrix(
        (
            graph.data[keep],
            graph.indices[keep],
            np.r_[0, np.cumsum(np.bincount(row[keep], minlength=graph.shape[0]))],
        ),
        shape=graph.shape,
    )
    out.sort_indices()
    return out


def multilevel_mapping(
    pattern,
    network,
    time_budget: float = 10.0,
    graph=None,
    seed: int = 0,
    routing=None,
) -> Mapping:
    """The multilevel mapping of ``pattern`` (module docstring) as a :class:`Mapping` named
    ``multilevel``; with a ``routing`` model its busiest link is then relieved by
    :func:`petacomm.topology.contention.refine_contention` (hop-bytes may rise by at most
    ``contention.HOP_BYTES_ALLOWANCE``). ``stop_reason`` says why the optimisers stopped."""
    from petacomm.topology.contention import HOP_BYTES_ALLOWANCE, contention_stage
    from petacomm.topology.mapping_search import communication_graph

    check_rank_count(pattern.nranks, network)
    start = time.perf_counter()
    graph = communication_graph(pattern) if graph is None else graph
    share = time_budget if routing is None else time_budget * _PLACEMENT_SHARE
    node, stats = multilevel_placement(graph, network, share, seed)
    reason = stats.stop_reason
    if routing is not None:
        left = max(0.0, time_budget - (time.perf_counter() - start))
        node, reason2, _ = contention_stage(
            pattern, network, routing, node, graph, left, allowance=HOP_BYTES_ALLOWANCE
        )
        reason = "time budget" if "time budget" in (reason, reason2) else reason
    name = "multilevel" + (" (budget hit)" if reason == "time budget" else "")
    return Mapping(name, node, cores_in_rank_order(node), stop_reason=reason)
