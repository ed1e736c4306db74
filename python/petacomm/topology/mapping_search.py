"""General mapping optimisers for arbitrary weighted communication graphs.

The objective is hop-bytes (sum over rank pairs of bytes x network distance between their
nodes), cheap to evaluate incrementally; candidates are then compared on full routed metrics
by the caller. Every optimiser takes a ``time_budget`` in seconds; when the budget runs out it
finishes cheaply (remaining ranks in order onto the free slots; refinement simply stops) and
says so in the mapping's name.

* :func:`greedy_mapping` - greedy growth: start from the heaviest rank, repeatedly place the
  unplaced rank most strongly connected to the placed ones on the free node that minimises
  its weighted distance to its placed neighbours (on a torus, among the nodes within two
  hops of theirs unless those are full, so a placement costs the same on any machine size).
* :func:`bisection_mapping` - recursive bisection: cut the machine in two halves along its
  longest coordinate, cut the ranks in two parts of matching capacity along a reverse
  Cuthill-McKee order of the communication graph (of the part, for parts of 1,024 ranks or
  more; smaller parts keep their parent's order), recurse.
* :func:`refine_by_swaps` - pairwise-swap refinement of any mapping: try moving a rank next to
  one of its neighbours by swapping it with a rank there; keep swaps that lower hop-bytes.
"""

from __future__ import annotations

import heapq
import time

import numpy as np
import scipy.sparse as sp

from petacomm.topology.mapping import Mapping, check_rank_count
from petacomm.topology.network import TorusNetwork
from petacomm.topology.pattern import CommPattern

# Parts of fewer ranks than this are cut along their parent's order instead of a new RCM
# order of their own: the recursion then costs O(n log n) on any machine size.
_REORDER_MIN_RANKS = 1024


def _reason(budget_hit: bool) -> str:
    return "time budget" if budget_hit else "converged"


def communication_graph(pattern: CommPattern) -> sp.csr_matrix:
    """Symmetric CSR matrix of bytes exchanged between rank pairs (both directions summed)."""
    src, dst, nb = pattern.edges()
    n = pattern.nranks
    graph = sp.coo_matrix((nb, (src, dst)), shape=(n, n)).tocsr()
    return (graph + graph.T).tocsr()


class _Distance:
    """Hop distance between node ids, with a fast path for tori (precomputed coordinates)."""

    def __init__(self, network):
        self.network = network
        if isinstance(network, TorusNetwork):
            self.coords = network.coordinates(np.arange(network.num_nodes))
            self.dims = np.asarray(network.dims)
            self.wrap = np.asarray(network.wrap)

    def near(self, nodes) -> np.ndarray | None:
        """The nodes within two hops of any of ``nodes`` on a torus (None elsewhere)."""
        if not isinstance(self.network, TorusNetwork):
            return None
        if not hasattr(self, "_neighbours"):
            table = []
            for d in range(self.network.ndim):
                for step in (1, -1):
                    c = self.coords.copy()
                    c[:, d] = np.mod(c[:, d] + step, self.dims[d])
                    table.append(self.network.node_ids(c))
            self._neighbours = np.stack(table, axis=1)
        ring = np.unique(np.concatenate([nodes, self._neighbours[nodes].ravel()]))
        return np.unique(np.concatenate([ring, self._neighbours[ring].ravel()]))

    # Node pairs up to which a table of all distances is kept (2048 nodes: 8 MiB).
    TABLE_NODES = 2048

    def __call__(self, a, b) -> np.ndarray:
        if not isinstance(self.network, TorusNetwork):
            return np.asarray(self.network.hop_distance(a, b), dtype=np.float64)
        a, b = np.asarray(a), np.asarray(b)
        nn = self.network.num_nodes
        if a.size > nn and nn <= self.TABLE_NODES:  # many pairs: look them up
            if not hasattr(self, "_table"):
                every = np.arange(nn)
                self._table = self._hops(every[:, None], every[None, :]).astype(np.uint16)
            return self._table[a, b].astype(np.float64)
        return self._hops(a, b).astype(np.float64)

    def _hops(self, a, b) -> np.ndarray:
        diff = np.abs(self.coords[a] - self.coords[b])
        diff = np.where(self.wrap, np.minimum(diff, self.dims - diff), diff)
        return diff.sum(axis=-1)


def hop_bytes(graph: sp.csr_matrix, node: np.ndarray, network) -> float:
    """Hop-bytes of a placement (each undirected pair once: the entries above the
    diagonal, read from the CSR arrays as they are, without building the triangle)."""
    graph = graph.tocsr()
    row = np.repeat(np.arange(graph.shape[0]), np.diff(graph.indptr))
    upper = graph.indices > row
    hops = _Distance(network)(node[row[upper]], node[graph.indices[upper]])
    return float((graph.data[upper] * hops).sum())


def _fill_remaining(node, core, capacity, network, order):
    """Place unplaced ranks (in ``order``) onto free slots in node-id order."""
    free_nodes = np.repeat(np.arange(network.num_nodes), capacity)
    todo = [r for r in order if node[r] < 0]
    for r, n in zip(todo, free_nodes, strict=False):
        node[r] = n
        core[r] = network.cores_per_node - capacity[n]
        capacity[n] -= 1


def greedy_mapping(pattern: CommPattern, network, time_budget: float = 10.0, graph=None) -> Mapping:
    """Greedy growth placement (module docstring)."""
    start_time = time.perf_counter()
    check_rank_count(pattern.nranks, network)
    graph = communication_graph(pattern) if graph is None else graph
    n = pattern.nranks
    dist = _Distance(network)
    capacity = np.full(network.num_nodes, network.cores_per_node, dtype=np.int64)
    node = np.full(n, -1, dtype=np.int64)
    core = np.zeros(n, dtype=np.int64)
    degree = np.asarray(graph.sum(axis=1)).ravel()
    by_degree = np.argsort(-degree, kind="stable")
    next_seed = 0  # position in by_degree of the next candidate start rank
    conn = np.zeros(n)
    heap: list[tuple[float, int]] = []
    last_node = 0
    placed = 0
    budget_hit = False
    indptr, indices, data = graph.indptr, graph.indices, graph.data
    while placed < n:
        if placed % 64 == 0 and time.perf_counter() - start_time > time_budget:
            budget_hit = True
            break
        r = -1
        while heap:
            neg, cand = heapq.heappop(heap)
            if node[cand] < 0 and -neg == conn[cand]:
                r = cand
                break
        if r < 0:  # start, or a new connected component: the heaviest unplaced rank
            while node[by_degree[next_seed]] >= 0:
                next_seed += 1
            r = int(by_degree[next_seed])
        nb = indices[indptr[r] : indptr[r + 1]]
        w = data[indptr[r] : indptr[r + 1]]
        mapped = node[nb] >= 0
        if mapped.any():
            where = node[nb[mapped]]
            # Nodes within two hops of the placed neighbours (a torus) hold the best free
            # node unless they are full: then every free node is scored.
            free = dist.near(where)
            free = free[capacity[free] > 0] if free is not None else free
            if free is None or free.size == 0:
                free = np.flatnonzero(capacity > 0)
            cost = (dist(free[:, None], where[None, :]) * w[mapped]).sum(axis=1)
            target = free[np.argmin(cost)]
        else:
            free = np.flatnonzero(capacity > 0)
            target = free[np.argmin(dist(free, np.full(free.size, last_node)))]
        node[r] = target
        core[r] = network.cores_per_node - capacity[target]
        capacity[target] -= 1
        last_node = target
        placed += 1
        unplaced = node[nb] < 0
        conn[nb[unplaced]] += w[unplaced]
        for v, c in zip(nb[unplaced], conn[nb[unplaced]], strict=True):
            heapq.heappush(heap, (-c, int(v)))
    if budget_hit:
        _fill_remaining(node, core, capacity, network, range(n))
    return Mapping(
        "greedy" + (" (budget hit)" if budget_hit else ""), node, core, _reason(budget_hit)
    )


def bisection_mapping(
    pattern: CommPattern, network, time_budget: float = 10.0, graph=None
) -> Mapping:
    """Recursive bisection placement (module docstring)."""
    # scipy.sparse.csgraph is imported here: it costs 0.1 s of every command's start.
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    start_time = time.perf_counter()
    check_rank_count(pattern.nranks, network)
    graph = communication_graph(pattern) if graph is None else graph
    n = pattern.nranks
    node = np.full(n, -1, dtype=np.int64)
    core = np.zeros(n, dtype=np.int64)
    cores = network.cores_per_node
    all_nodes = np.arange(network.num_nodes)
    coords = network.split_coordinates(all_nodes)
    budget_hit = False
    stack = [(np.arange(n), all_nodes)]
    while stack:
        ranks, nodes = stack.pop()
        if ranks.size == 0:
            continue
        if nodes.size == 1:
            node[ranks] = nodes[0]
            core[ranks] = np.arange(ranks.size)
            continue
        c = coords[nodes]
        spread = c.max(axis=0) - c.min(axis=0)
        axis = int(np.argmax(spread))
        order_nodes = nodes[np.lexsort((nodes, c[:, axis]))]
        half = order_nodes.size // 2
        first_nodes, second_nodes = order_nodes[:half], order_nodes[half:]
        cap1, cap2 = first_nodes.size * cores, second_nodes.size * cores
        k1 = int(round(ranks.size * first_nodes.size / nodes.size))
        k1 = min(cap1, max(ranks.size - cap2, k1))
        if time.perf_counter() - start_time > time_budget:
            budget_hit = True
            ordered = ranks
        elif ranks.size < _REORDER_MIN_RANKS and ranks.size < n:
            ordered = ranks  # small parts keep the order their parent's RCM gave them
        else:
            sub = graph[ranks][:, ranks]
            ordered = ranks[reverse_cuthill_mckee(sub.tocsr(), symmetric_mode=True)]
        stack.append((ordered[:k1], first_nodes))
        stack.append((ordered[k1:], second_nodes))
    return Mapping(
        "bisection" + (" (budget hit)" if budget_hit else ""), node, core, _reason(budget_hit)
    )


def refine_by_swaps(
    mapping: Mapping,
    pattern: CommPattern,
    network,
    time_budget: float = 5.0,
    seed: int = 0,
    graph=None,
    batch: int = 4096,
) -> Mapping:
    """Pairwise-swap refinement minimising hop-bytes (module docstring); deterministic for a
    given seed. Swaps are proposed in vectorised batches; of the improving ones, only swaps
    whose ranks and neighbourhoods do not overlap are applied together so that each applied
    gain is exact."""
    start_time = time.perf_counter()
    graph = communication_graph(pattern) if graph is None else graph
    n = mapping.nranks
    rng = np.random.default_rng(seed)
    dist = _Distance(network)
    node = mapping.node.copy()
    core = mapping.core.copy()
    deg = np.diff(graph.indptr)
    if n < 2 or deg.max(initial=0) == 0:
        return Mapping(mapping.name + "+swaps", node, core, mapping.stop_reason or "converged")
    maxdeg = int(deg.max())
    # Padded neighbour lists (rank -> neighbours, weights); pad with self and weight 0.
    pad_nb = np.repeat(np.arange(n)[:, None], maxdeg, axis=1)
    pad_w = np.zeros((n, maxdeg))
    row = np.repeat(np.arange(n), deg)
    col = np.arange(graph.nnz) - np.repeat(graph.indptr[:-1], deg)
    pad_nb[row, col] = graph.indices
    pad_w[row, col] = graph.data
    slot_rank = {}
    for r in range(n):
        slot_rank[(int(node[r]), int(core[r]))] = r
    rounds_without_gain = 0
    while time.perf_counter() - start_time < time_budget and rounds_without_gain < 20:
        u = rng.integers(0, n, batch)
        # Move u towards one of its neighbours: swap with a random occupant of that node,
        # or (half the time) a random rank, to escape local structure.
        pick = rng.integers(0, np.maximum(deg[u], 1))
        target_node = node[pad_nb[u, pick]]
        target_core = rng.integers(0, network.cores_per_node, batch)
        v = np.array(
            [
                slot_rank.get((int(a), int(b)), -1)
                for a, b in zip(target_node, target_core, strict=True)
            ]
        )
        random_v = rng.integers(0, n, batch)
        use_random = (rng.random(batch) < 0.5) | (v < 0)
        v = np.where(use_random, random_v, v)
        ok = (u != v) & (node[u] != node[v])
        u, v = u[ok], v[ok]
        if u.size == 0:
            rounds_without_gain += 1
            continue
        a, b = node[u], node[v]

        def cost(ranks, at):
            return (
                pad_w[ranks]
                * dist(np.broadcast_to(at[:, None], pad_nb[ranks].shape), node[pad_nb[ranks]])
            ).sum(axis=1)

        delta = cost(u, b) - cost(u, a) + cost(v, a) - cost(v, b)
        w_uv = (pad_w[u] * (pad_nb[u] == v[:, None])).sum(axis=1)
        delta += 2 * w_uv * dist(a, b)
        improving = np.flatnonzero(delta < -1e-9 * max(1.0, float(np.abs(delta).max())))
        if improving.size == 0:
            rounds_without_gain += 1
            continue
        touched = np.zeros(n, dtype=bool)
        applied = 0
        for i in improving[np.argsort(delta[improving], kind="stable")]:
            uu, vv = int(u[i]), int(v[i])
            group = np.concatenate(([uu, vv], pad_nb[uu], pad_nb[vv]))
            if touched[group].any():
                continue
            touched[group] = True
            node[uu], node[vv] = node[vv], node[uu]
            core[uu], core[vv] = core[vv], core[uu]
            slot_rank[(int(node[uu]), int(core[uu]))] = uu
            slot_rank[(int(node[vv]), int(core[vv]))] = vv
            applied += 1
        rounds_without_gain = 0 if applied else rounds_without_gain + 1
    # The refined mapping stopped on the budget if its start or the swaps did.
    swaps_hit = rounds_without_gain < 20
    reason = _reason(swaps_hit or mapping.stop_reason == "time budget")
    return Mapping(mapping.name + "+swaps", node, core, reason)
