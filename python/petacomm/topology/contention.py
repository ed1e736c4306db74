"""Contention-aware refinement: lower the most loaded link's bytes without raising hop-bytes.

Hop-bytes (what ``multilevel.py`` minimises) is the *sum* of link loads; the time a phase
takes depends on the *most loaded* link. :func:`refine_contention` takes a placement and
repeatedly looks at the busiest link: the ranks whose messages cross it most are candidates
to move, each tried against every rank on the nodes within two hops of it (a swap) and
every free core there (a move). Every candidate is evaluated exactly under the routing
model - the loads of all links after the change - and the best is applied if it lowers the
busiest link's bytes (or, at equal bytes, the number of links that carry them) while the
placement's hop-bytes stays at or below what it was when refinement started. So neither
the maximum link load nor hop-bytes ever rises.

Link loads come from :func:`pair_link_matrix`: the share of a message between every pair
of nodes on every link, from the routing model itself (the routes from node 0 as the
routing lists them, ``route_shares`` or ``route_links``, on a torus or mesh with
wrap-around in every dimension, shifted to every source by translation symmetry, for
routing models whose routes a translation moves alike;
otherwise every node pair's links as the routing lists them when it routes each message on
one path, as ``dor-simgrid`` (whose half-ring direction depends on the source's coordinate)
and ``dmodk`` do, else one ``route`` call per chunk of node pairs). It is built only when it
has at most ``MAX_PAIR_ENTRIES`` entries (networks of up to about a thousand nodes);
placements on larger ones are left as they are and the stop reason says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from petacomm.topology.csr import csr_entries
from petacomm.topology.network import TorusNetwork
from petacomm.topology.routing import lists_routes

MAX_PAIR_ENTRIES = 30_000_000
# How much hop-bytes may rise (a fraction of it) to relieve the busiest link, when the
# caller sets no cap of its own.
HOP_BYTES_ALLOWANCE = 0.01
_NEIGHBOURHOOD_HOPS = 2
_CANDIDATE_RANKS = 8
# Candidate changes evaluated per step are limited so that the affected messages stay
# below this many (a dense graph's rank has a thousand partners).
_EVALUATED_MESSAGES = 50_000
_OUT_OF_TIME = "out of time"
# Entries of the temporaries of _shifted_links (a block of sources at a time).
_SHIFT_BLOCK_ENTRIES = 4_000_000


@dataclass
class ContentionStats:
    """What the refinement did: steps applied and why it stopped, loads before/after."""

    steps: int = 0
    stop_reason: str = "converged"
    max_link_bytes_before: float | None = None  # None: the loads were not computed
    max_link_bytes_after: float | None = None


class PairLinks:
    """The share of a message between any two nodes on every link (module docstring).

    ``matrix`` is a CSR matrix of ``num_nodes**2`` rows and ``num_links`` columns;
    :meth:`rows` gives the row of each (source node, destination node) pair. On a torus the
    rows of a source are ordered by displacement (destination minus source, wrapped), so
    the matrix is built directly in row order from one routed template per displacement.
    """

    def __init__(self, network, matrix: sp.csr_matrix, template=None):
        self.network = network
        self.matrix = matrix
        # On a torus: the routed unit flows from node 0, (displacement, link kind, tail
        # coordinates, share) per entry; they give any link's column without a transpose.
        self._template = template
        self._by_displacement = template is not None
        self._csc = None
        if template is not None:
            nn = network.num_nodes
            self._coords = network.coordinates(np.arange(nn))
            self._dims = np.asarray(network.dims)
            # Row of every (source, destination) pair, looked up rather than recomputed.
            disp = np.mod(self._coords[None, :, :] - self._coords[:, None, :], self._dims)
            self._row_table = (
                np.arange(nn)[:, None] * nn
                + network.node_ids(disp.reshape(-1, disp.shape[-1])).reshape(nn, nn)
            ).astype(np.int64)

    def column(self, link: int) -> np.ndarray:
        """The share of every row (node pair) on one link, as a dense array."""
        nn = self.network.num_nodes
        if self._template is not None:
            disp, kind, tail_coords, frac = self._template
            link_kind, link_tail = divmod(int(link), nn)
            mine = kind == link_kind
            # The entry's tail shifted by source s is the link's tail: s = tail - entry tail.
            source = self.network.node_ids(
                np.mod(self._coords[link_tail] - tail_coords[mine], self._dims)
            )
            out = np.zeros(nn * nn)
            np.add.at(out, source * nn + disp[mine] + 1, frac[mine])
            return out
        if self._csc is None:
            self._csc = self.matrix.tocsc()
        out = np.zeros(self.matrix.shape[0])
        start, end = self._csc.indptr[link], self._csc.indptr[link + 1]
        out[self._csc.indices[start:end]] = self._csc.data[start:end]
        return out

    def rows(self, src, dst) -> np.ndarray:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if not self._by_displacement:
            return src * self.network.num_nodes + dst
        return self._row_table[src, dst]

    def loads(self, rows, *weights) -> np.ndarray:
        """On every link, per weight array: the rows (one per flow, repeats allowed) summed
        with those weights, shape (len(weights), num_links)."""
        nrows = self.matrix.shape[0]
        per_row = np.stack([np.bincount(rows, weights=w, minlength=nrows) for w in weights], 1)
        return np.asarray(self.matrix.T @ per_row).T


_PAIR_CACHE: dict[tuple, PairLinks | None] = {}


def _cache_key(network, routing) -> tuple:
    # The routing object itself (frozen dataclasses: equal fields, equal routes), not only
    # its description, which may leave out what does not show on the command line.
    return (network.to_text(), routing.describe(network), routing)


def pair_link_matrix(network, routing) -> PairLinks | None:
    """:class:`PairLinks` for the network and routing model (cached: the candidates of one
    search share it); None when the network is too large for it."""
    key = _cache_key(network, routing)
    if key in _PAIR_CACHE:
        return _PAIR_CACHE[key]
    built = _build_pair_links(network, routing)
    if len(_PAIR_CACHE) >= 4:
        _PAIR_CACHE.clear()
    _PAIR_CACHE[key] = built
    return built  # not read back: another thread may have emptied the cache meanwhile


def cached_pair_links(network, routing) -> PairLinks | None:
    """The :func:`pair_link_matrix` already built in this process for the network and
    routing model, else None (nothing is built)."""
    return _PAIR_CACHE.get(_cache_key(network, routing))


def forget_pair_links() -> None:
    """Empties the cache of pair-link matrices and of the routing templates they are built
    from, as a fresh process starts (benchmarks that time a single use start from there)."""
    from petacomm.topology.routing import forget_templates

    _PAIR_CACHE.clear()
    forget_templates()


def builds_quickly(network, routing) -> bool:
    """Whether :func:`pair_link_matrix` is built from one routed template or by listing
    each node pair's single route (0.01-0.34 s on 256-512 nodes), not by routing unit flows
    for every pair of nodes (0.7-7.0 s on 224-256 nodes of a mesh, a fat tree with ECMP or a
    dragonfly: more than the evaluations of a search it would serve)."""
    return _by_template(network, routing) or lists_routes(routing)


def _by_template(network, routing) -> bool:
    return (
        isinstance(network, TorusNetwork)
        and all(network.wrap)
        and getattr(routing, "translation_invariant", False)
    )


def _build_pair_links(network, routing) -> PairLinks | None:
    nn = network.num_nodes
    if nn < 2:
        return PairLinks(network, sp.csr_matrix((nn * nn, network.num_links)))
    if _by_template(network, routing):
        # Unit flows from node 0 to every other node; entry (d, link) of the template of
        # displacement d (node d's coordinates) shifts to source s as link + s.
        if nn * nn > MAX_PAIR_ENTRIES:  # every pair uses at least one link
            return None
        disp, link, frac = _routes_from_origin(network, routing)
        if disp.size * nn > MAX_PAIR_ENTRIES:
            return None
        kind, tail = np.divmod(link, nn)  # link id = kind * num_nodes + tail node
        tail_coords = network.coordinates(tail)
        per_disp = np.bincount(disp + 1, minlength=nn)  # displacement 0 has no entry
        indptr = np.r_[0, np.cumsum(np.tile(per_disp, nn))]
        cols = _shifted_links(network, kind, tail)
        matrix = sp.csr_matrix(
            (np.tile(frac, nn), cols, indptr), shape=(nn * nn, network.num_links)
        )
        return PairLinks(network, matrix, (disp, kind, tail_coords, frac))
    if lists_routes(routing):
        return _listed_pair_links(network, routing)
    # Other networks: route every node pair, a chunk of unit flows at a time.
    if nn * nn * 8 > MAX_PAIR_ENTRIES:
        return None
    src_all, dst_all = np.divmod(np.arange(nn * nn), nn)
    keep = src_all != dst_all
    src_all, dst_all = src_all[keep], dst_all[keep]
    rows, cols, vals = [], [], []
    total = 0
    for s in range(0, src_all.size, 256):
        a, b = src_all[s : s + 256], dst_all[s : s + 256]
        shares = routing.route(network, a, b, np.eye(a.size))
        r, c = np.nonzero(np.abs(shares) > 1e-12)
        rows.append(a[r] * nn + b[r])
        cols.append(c)
        vals.append(shares[r, c])
        total += r.size
        if total > MAX_PAIR_ENTRIES:
            return None
    matrix = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(nn * nn, network.num_links),
    )
    return PairLinks(network, matrix)


def _routes_from_origin(network, routing):
    """The routes from node 0 to every other node, by destination: arrays (destination
    minus one, link id, share), as the routing lists them (``route_shares``,
    ``route_links``) or else routed as unit flows, 128 destinations a time."""
    targets = np.arange(1, network.num_nodes)
    origin = np.zeros(targets.size, np.int64)
    if hasattr(routing, "route_shares"):
        message, link, share = routing.route_shares(network, origin, targets)
    elif lists_routes(routing):
        message, link = routing.route_links(network, origin, targets)
        share = np.ones(message.size)
    else:
        parts = []
        for first in range(0, targets.size, 128):
            part = targets[first : first + 128]
            shares = routing.route(network, origin[: part.size], part, np.eye(part.size))
            row, column = np.nonzero(np.abs(shares) > 1e-12)
            parts.append((first + row, column, shares[row, column]))
        message, link, share = (np.concatenate(p) for p in zip(*parts, strict=True))
    order = np.argsort(message, kind="stable")
    return message[order], link[order], share[order]


def _listed_pair_links(network, routing) -> PairLinks | None:
    """Every node pair's links as a single-path routing lists them (``route_links``), one
    entry per hop (routing unit flows instead fills a pairs x links array: 16.7 s for
    dor-simgrid on 8x8x8, against 0.25 s listed). The entries are counted first from the
    hop distances: listing costs about 50 bytes per entry while it runs (1.2 GiB on
    ``mesh:460`` before its 32 M entries were found to be over the limit), so a network
    over ``MAX_PAIR_ENTRIES`` is refused before any route is listed, and the routes are
    listed a block of sources at a time."""
    nn = network.num_nodes
    if nn * (nn - 1) > MAX_PAIR_ENTRIES:  # every pair of distinct nodes takes a hop
        return None
    ids = np.arange(nn, dtype=np.int64)
    block = max(1, _SHIFT_BLOCK_ENTRIES // nn)
    starts = range(0, nn, block)

    def pairs_of(first):
        src = np.repeat(ids[first : first + block], nn)
        dst = np.tile(ids, src.size // nn)
        keep = src != dst
        return src[keep], dst[keep]

    hops = 0
    for first in starts:
        hops += int(network.hop_distance(*pairs_of(first)).sum())
        if hops > MAX_PAIR_ENTRIES:
            return None
    # int32 holds every row and link id: nn**2 <= MAX_PAIR_ENTRIES + nn here.
    rows = np.empty(hops, dtype=np.int32)
    links = np.empty(hops, dtype=np.int32)
    filled = 0
    for first in starts:
        src, dst = pairs_of(first)
        message, link = routing.route_links(network, src, dst)
        if filled + message.size > hops:  # the routing takes a path longer than minimal
            raise RuntimeError(
                f"routing {routing.describe(network)!r} lists more links than the hop "
                f"distances of {network.to_text()} count"
            )
        rows[filled : filled + message.size] = src[message] * nn + dst[message]
        links[filled : filled + message.size] = link
        filled += message.size
    matrix = sp.csr_matrix(
        (np.ones(filled), (rows[:filled], links[:filled])), shape=(nn * nn, network.num_links)
    )
    return PairLinks(network, matrix)


def _shifted_links(network, kind, tail) -> np.ndarray:
    """Link ids of the template entries (link ``kind``, tail node ``tail``) moved to every
    source node in turn: source-major, ``num_nodes * len(kind)`` ids (int32). Translation by
    a source is a permutation of the nodes: for a block of sources, a table of every node
    moved by each of them (node ids are sums over dimensions of the wrapped coordinate times
    the dimension's stride, first dimension fastest) gives each moved tail by one lookup per
    entry. Blocks keep every temporary within a few million entries. (Shifting coordinates
    dimension by dimension per entry, as before, took 3-12x longer: 43-189 ms against
    15-16 ms for torus 4x8x8 with adaptive routing.)"""
    nn, e = network.num_nodes, kind.size
    # int32 holds every id: the matrix is built only for nn**2 <= MAX_PAIR_ENTRIES.
    dims = [int(s) for s in network.dims]
    coords = network.coordinates(np.arange(nn)).astype(np.int32)
    base = (kind * nn).astype(np.int32)  # link id = kind * num_nodes + tail node
    cols = np.empty((nn, e), dtype=np.int32)
    block = max(1, _SHIFT_BLOCK_ENTRIES // max(e, nn))
    for first in range(0, nn, block):
        src = coords[first : first + block]
        moved = np.zeros((src.shape[0], nn), dtype=np.int32)  # [source, node]
        stride = 1
        for d, size in enumerate(dims):
            moved += (src[:, d][:, None] + coords[:, d][None, :]) % size * stride
            stride *= size
        np.add(moved[:, tail], base, out=cols[first : first + block])
    return cols.ravel()


def contention_stage(
    pattern,
    network,
    routing,
    node,
    graph,
    time_budget: float,
    allowance: float = 0.0,
    hop_bytes_cap: float | None = None,
    pairs=None,
    prepared=None,
    max_steps: int | None = None,
    start: Placed | None = None,
) -> tuple[np.ndarray, str, float | None]:
    """:func:`refine_contention` (``prepared``, ``start``: see there) as the last stage of an
    optimiser: (node of every rank, stop reason: ``converged``, ``time budget``,
    ``refinement limit`` (``max_steps`` made) or why link loads were not refined, the
    busiest link's bytes at the end or None when the loads were not computed)."""
    node, stats = refine_contention(
        pattern,
        network,
        routing,
        node,
        graph,
        time_budget,
        pairs=pairs,
        hop_slack=allowance,
        hop_bytes_cap=hop_bytes_cap,
        prepared=prepared,
        max_steps=max_steps,
        start=start,
    )
    after = stats.max_link_bytes_after
    if stats.stop_reason not in ("converged", "time budget", "refinement limit"):
        return node, "converged", after
    return node, stats.stop_reason, after


def directed_messages(pattern) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (sender, receiver) pair of the pattern with its bytes over all phases (each
    phase's bytes times its repeat count), self-messages dropped."""
    return pattern.edges()


def link_loads(pattern, network, routing, node, pairs: PairLinks | None = None):
    """Bytes on every link with the ranks on ``node``, from the :func:`pair_link_matrix`
    (the same figures as ``metrics.evaluate_mapping``'s, without routing every message);
    None when the network is too large for the matrix."""
    pairs = pair_link_matrix(network, routing) if pairs is None else pairs
    if pairs is None:
        return None
    return _placed(pairs, *directed_messages(pattern), np.asarray(node))[1]


def _placed(pairs: PairLinks, src, dst, nbytes, node) -> tuple[np.ndarray, np.ndarray]:
    """(pair-link row of every message, bytes on every link) of the messages (src, dst,
    nbytes) with the ranks on ``node``."""
    node_src, node_dst = node[src], node[dst]
    rows = pairs.rows(node_src, node_dst)
    inter = node_src != node_dst
    return rows, pairs.loads(rows[inter], nbytes[inter])[0]


def prepare_contention(pattern, network, routing, graph, pairs: PairLinks | None = None):
    """What :func:`refine_contention` reads and never changes, whatever the placement: the
    directed messages, the messages touching each rank, the pair-link matrix (``pairs``, or
    built), the bytes graph (symmetric: each edge's bytes in both directions, as
    ``mapping_search.communication_graph`` makes it), node distances and neighbourhoods. A
    caller with time to spare before the placement is known (``scotch.scotch_mapping``,
    while Scotch maps) prepares it then. None when the network is too large for the
    pair-link matrix."""
    pairs = pair_link_matrix(network, routing) if pairs is None else pairs
    if pairs is None:
        return None
    src, dst, nbytes = directed_messages(pattern)
    rank_start, incident = messages_by_rank(src, dst, pattern.nranks)
    distance = _distances(network)
    graph = sp.csr_matrix(graph)
    near = _near_nodes(network, distance)
    return _Messages(
        src, dst, nbytes, rank_start, incident, pairs, graph, graph.tocoo(), distance, near
    )


def messages_by_rank(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The messages touching each of the ``n`` ranks, as CSR over ranks: rank r's are
    ``incident[rank_start[r]:rank_start[r + 1]]``, those it sends in message order, then
    those it receives in message order."""
    m = src.size
    index = np.int32 if m < 2**31 else np.int64  # half the memory of int64 for the list
    sends = np.bincount(src, minlength=n)
    receives = np.bincount(dst, minlength=n)
    rank_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sends + receives, out=rank_start[1:])
    messages = np.arange(m, dtype=index)
    sent_through = np.cumsum(sends)  # messages sent by the ranks up to each one
    received_before = rank_start[:-1] - (sent_through - sends)
    # numpy's stable sort is a radix sort on 16-bit integers: O(messages) for n <= 65536.
    small = n <= 1 << 16
    received = np.argsort(dst.astype(np.uint16) if small else dst, kind="stable")
    incident = np.empty(2 * m, dtype=index)
    # The k-th message sent (by sender) lands after the receives of the ranks below its
    # sender; the j-th received (by receiver) after the sends of the ranks up to its own.
    if np.all(src[1:] >= src[:-1]):  # sorted by sender, as CommPattern.edges() gives
        incident[messages + received_before[src]] = messages
    else:
        sent = np.argsort(src.astype(np.uint16) if small else src, kind="stable")
        incident[messages + received_before[src[sent]]] = sent
    incident[messages + sent_through[dst[received]]] = received
    return rank_start, incident


def refine_contention(
    pattern,
    network,
    routing,
    node: np.ndarray,
    graph: sp.csr_matrix,
    time_budget: float = 5.0,
    pairs: PairLinks | None = None,
    hop_slack: float = 0.0,
    hop_bytes_cap: float | None = None,
    prepared=None,
    max_steps: int | None = None,
    start: Placed | None = None,
) -> tuple[np.ndarray, ContentionStats]:
    """Node of every rank after contention-aware refinement of ``node`` (module docstring),
    and what it did: at most ``max_steps`` changes, if given (stop reason ``refinement
    limit``; a limit of work, not of time, so the same input gives the same placement on
    any machine). ``graph`` is the symmetric bytes graph hop-bytes is measured on;
    ``pairs`` the :func:`pair_link_matrix` already built for this network and routing;
    ``prepared`` what :func:`prepare_contention` gave for them; ``start`` a placement
    ``prepared.place`` placed (so ``start`` needs ``prepared``), from which ``node``'s loads
    and hop-bytes are updated for the ranks that moved instead of computed anew. Hop-bytes
    stays at or below ``hop_bytes_cap`` if given, else at or below the start's hop-bytes
    times ``1 + hop_slack``."""
    deadline = time.perf_counter() + time_budget
    stats = ContentionStats()
    node = np.asarray(node, dtype=np.int64).copy()
    if time_budget <= 0:  # not even the set-up below
        stats.stop_reason = "time budget"
        return node, stats
    nn, cores = network.num_nodes, network.cores_per_node
    fixed = prepared
    if fixed is None:
        fixed = prepare_contention(pattern, network, routing, graph, pairs)
    if fixed is None:
        stats.stop_reason = "network too large for exact link loads"
        return node, stats
    src, dst, nbytes, pairs = fixed.src, fixed.dst, fixed.nbytes, fixed.pairs
    rank_start, incident, near = fixed.rank_start, fixed.incident, fixed.near
    if src.size == 0:  # no link carries anything
        stats.max_link_bytes_before = stats.max_link_bytes_after = 0.0
        return node, stats
    n = node.size
    here = fixed.place(node) if start is None else fixed.moved(start, node)
    message_rows, loads, hop_now = here.rows, here.loads, here.hop_bytes
    hop_cap = hop_now * (1.0 + hop_slack) if hop_bytes_cap is None else hop_bytes_cap
    stats.max_link_bytes_before = float(loads.max(initial=0.0))
    free = np.full(nn, cores) - np.bincount(node, minlength=nn)
    while True:
        if time.perf_counter() > deadline:
            stats.stop_reason = "time budget"
            break
        top = float(loads.max(initial=0.0))
        if max_steps is not None and stats.steps >= max_steps and top > 0:
            stats.stop_reason = "refinement limit"
            break
        if top <= 0:
            break
        tol = 1e-9 * top
        hot = int(np.argmax(loads))
        at_top = int((loads >= top - tol).sum())
        # Bytes each rank puts on the hot link.
        on_hot = pairs.column(hot)[message_rows] * nbytes
        contribution = np.bincount(src, on_hot, n) + np.bincount(dst, on_hot, n)
        movers = np.argsort(-contribution)[:_CANDIDATE_RANKS]
        movers = movers[contribution[movers] > 0]
        cand_v, cand_u, cand_x = [], [], []
        for v in movers.tolist():
            targets = near[node[v]]
            occupants = np.flatnonzero(np.isin(node, targets) & (node != node[v]))
            cand_v.append(np.full(occupants.size, v))
            cand_u.append(occupants)
            cand_x.append(node[occupants])
            roomy = targets[(free[targets] > 0) & (targets != node[v])]
            cand_v.append(np.full(roomy.size, v))
            cand_u.append(np.full(roomy.size, -1))
            cand_x.append(roomy)
        if not cand_v:
            break
        cv, cu, cx = (np.concatenate(c) for c in (cand_v, cand_u, cand_x))
        best = _best_change(
            cv, cu, cx, node, loads, top, at_top, tol, hop_cap - hop_now, fixed, deadline
        )
        if best is _OUT_OF_TIME:
            stats.stop_reason = "time budget"
            break
        if best is None:
            break
        v, u, x, hop_change, load_change = best
        hop_now += hop_change
        a = node[v]
        node[v] = x
        if u >= 0:
            node[u] = a
        else:
            free[a] += 1
            free[x] -= 1
        moved = incident[rank_start[v] : rank_start[v + 1]]
        if u >= 0:
            moved = np.concatenate([moved, incident[rank_start[u] : rank_start[u + 1]]])
        message_rows[moved] = pairs.rows(node[src[moved]], node[dst[moved]])
        loads = loads + load_change
        stats.steps += 1
    stats.max_link_bytes_after = float(loads.max(initial=0.0))
    return node, stats


@dataclass(frozen=True, eq=False)
class Placed:
    """A placement with what the refinement derives from it: the pair-link row of every
    message (:meth:`PairLinks.rows` of its ends' nodes), the bytes on every link and
    hop-bytes (:meth:`_Messages.hop_bytes`), for the ``messages`` that placed it."""

    node: np.ndarray
    rows: np.ndarray
    loads: np.ndarray
    hop_bytes: float
    messages: _Messages


@dataclass(frozen=True)
class _Messages:
    """What a refinement reads and never changes (:func:`prepare_contention`): the directed
    messages, the messages touching each rank (CSR over ranks, both ends), the
    pair-to-links matrix, the bytes graph (CSR and COO), the node distance and the nodes
    near each node."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    rank_start: np.ndarray
    incident: np.ndarray
    pairs: PairLinks
    graph: sp.csr_matrix
    coo: sp.coo_matrix
    distance: object
    near: list

    def hop_bytes(self, node) -> float:
        """Hop-bytes of the bytes graph with the ranks on ``node``, as the refinement
        counts it (each edge of the symmetric graph once)."""
        coo = self.coo
        return 0.5 * float((coo.data * self.distance(node[coo.row], node[coo.col])).sum())

    def place(self, node) -> Placed:
        """``node`` (copied) with its message rows, link loads and hop-bytes."""
        node = np.array(node, dtype=np.int64)
        rows, loads = _placed(self.pairs, self.src, self.dst, self.nbytes, node)
        return Placed(node, rows, loads, self.hop_bytes(node), self)

    def moved(self, start: Placed, node) -> Placed:
        """:meth:`place` of ``node`` from ``start``'s: only the messages of the ranks placed
        elsewhere are looked at again. A refinement pass moves a few ranks: on ``cmb``
        (1,024 ranks, a million messages) Scotch's placement has 152 ranks moved by one pass,
        updated in 18-21 ms where placing it anew takes 34."""
        if start.messages is not self:  # its rows and loads would be another pattern's
            raise ValueError(
                "start: placed for other messages (another pattern, network or routing): "
                "place it with the same prepared messages"
            )
        node = np.array(node, dtype=np.int64)
        if node.shape != start.node.shape:
            raise ValueError(f"node: {node.size} ranks, the start placed {start.node.size}")
        moved = np.flatnonzero(start.node != node)
        rows = start.rows.copy()
        if moved.size == 0:
            return Placed(node, rows, start.loads.copy(), start.hop_bytes, self)
        # Each message once, though both its ends may have moved.
        _, position = csr_entries(self.rank_start, moved)
        touched = np.zeros(self.src.size, dtype=bool)
        touched[self.incident[position]] = True
        messages = np.flatnonzero(touched)
        w = self.nbytes[messages]
        old_rows = rows[messages]
        new_src, new_dst = node[self.src[messages]], node[self.dst[messages]]
        rows[messages] = new_rows = self.pairs.rows(new_src, new_dst)
        # The rows of messages within a node carry nothing: no mask needed.
        change = self.pairs.loads(np.concatenate([old_rows, new_rows]), np.concatenate([-w, w]))[0]
        # Hop-bytes counts each edge of the symmetric graph once: an edge between a moved
        # rank and one that stayed is listed once among the moved ranks' entries, an edge
        # between two moved ranks twice.
        graph = self.graph
        owner, entry = csr_entries(graph.indptr, moved)
        i, j = moved[owner], graph.indices[entry]
        mover = np.zeros(node.size, dtype=bool)
        mover[moved] = True
        length_change = self.distance(node[i], node[j]) - self.distance(
            start.node[i], start.node[j]
        )
        hop_change = float((graph.data[entry] * np.where(mover[j], 0.5, 1.0) * length_change).sum())
        return Placed(node, rows, start.loads + change, start.hop_bytes + hop_change, self)


def _best_change(cv, cu, cx, node, loads, top, at_top, tol, hop_room, fixed, deadline):
    """The candidate (v, u or -1, target node of v, its hop-bytes change) that lowers the
    busiest link most (or, at equal bytes, the number of links at the top) while raising
    hop-bytes by at most ``hop_room``; None if none does, ``_OUT_OF_TIME`` if the deadline
    passed first."""
    # Hop-bytes change of each candidate, exactly, from the moved ranks' edges; candidates
    # are taken in order (the hot link's biggest contributors first) in batches whose
    # evaluation stays cheap, until a batch holds an improvement.
    degree = np.diff(fixed.graph.indptr)
    work = degree[cv] + np.where(cu >= 0, degree[np.maximum(cu, 0)], 0)
    start = 0
    while start < cv.size:
        if time.perf_counter() > deadline:
            return _OUT_OF_TIME
        stop = start + max(1, int(np.searchsorted(np.cumsum(work[start:]), _EVALUATED_MESSAGES)))
        batch = slice(start, stop)
        found = _best_in_batch(
            cv[batch], cu[batch], cx[batch], node, loads, top, at_top, tol, hop_room, fixed
        )
        if found is not None:
            return found
        start = stop
    return None


def _best_in_batch(cv, cu, cx, node, loads, top, at_top, tol, hop_room, fixed: _Messages):
    """:func:`_best_change` over one batch of candidates."""
    src, dst, nbytes, pairs = fixed.src, fixed.dst, fixed.nbytes, fixed.pairs
    a = node[cv]
    delta_hop = _hop_delta(cv, cu, cx, a, node, fixed.graph, fixed.distance)
    ok = delta_hop <= hop_room + 1e-9 * max(1.0, abs(hop_room))
    cv, cu, cx, a, delta_hop = cv[ok], cu[ok], cx[ok], a[ok], delta_hop[ok]
    if cv.size == 0:
        return None
    k = cv.size
    # Messages of v, then those of u that do not involve v (counted once), per candidate.
    of_v, msg_v = _incident_expanded(cv, fixed.rank_start, fixed.incident)
    has_u = np.flatnonzero(cu >= 0)
    of_u, msg_u = _incident_expanded(cu[has_u], fixed.rank_start, fixed.incident)
    of_u = has_u[of_u]
    mover = cv[of_u]
    not_shared = (src[msg_u] != mover) & (dst[msg_u] != mover)
    msg = np.concatenate([msg_v, msg_u[not_shared]])
    cand_of = np.concatenate([of_v, of_u[not_shared]])
    s_old, d_old = node[src[msg]], node[dst[msg]]
    # New nodes of the ends: v -> x, u -> a.
    s_new, d_new = s_old.copy(), d_old.copy()
    for ends, new in ((src[msg], s_new), (dst[msg], d_new)):
        moved_v = ends == cv[cand_of]
        new[moved_v] = cx[cand_of][moved_v]
        moved_u = ends == cu[cand_of]
        new[moved_u] = a[cand_of][moved_u]
    w = nbytes[msg]
    rows = np.concatenate([pairs.rows(s_old, d_old), pairs.rows(s_new, d_new)])
    signs = np.concatenate([-w * (s_old != d_old), w * (s_new != d_new)])
    nrows = pairs.matrix.shape[0]
    change = sp.csr_matrix((signs, (np.concatenate([cand_of, cand_of]), rows)), shape=(k, nrows))
    delta = (change @ pairs.matrix).toarray()
    new_loads = loads[None, :] + delta
    new_top = new_loads.max(axis=1)
    new_at_top = (new_loads >= new_top[:, None] - tol).sum(axis=1)
    better = (new_top < top - tol) | ((np.abs(new_top - top) <= tol) & (new_at_top < at_top))
    if not better.any():
        return None
    score = np.lexsort((new_at_top, new_top))
    best = score[better[score]][0]
    return int(cv[best]), int(cu[best]), int(cx[best]), float(delta_hop[best]), delta[best]


def _incident_expanded(ranks, rank_start, incident):
    """(index into ``ranks``, message) for every message of every rank listed."""
    owner, position = csr_entries(rank_start, ranks)
    return owner, incident[position]


def _hop_delta(cv, cu, cx, a, node, graph, distance) -> np.ndarray:
    """Exact hop-bytes change of moving each cv to node cx (and cu, when >= 0, to a): the
    two ranks' edges at their new places, an edge between them keeping its length."""

    def cost(ranks, at):
        owner, entry = csr_entries(graph.indptr, ranks)
        where = node[graph.indices[entry]]
        return np.bincount(
            owner, graph.data[entry] * distance(at[owner], where), minlength=ranks.size
        )

    delta = cost(cv, cx) - cost(cv, a)
    swap = np.flatnonzero(cu >= 0)
    if swap.size:
        v, u, x, av = cv[swap], cu[swap], cx[swap], a[swap]
        graph_vu = np.asarray(graph[v, u]).ravel()
        delta[swap] += cost(u, av) - cost(u, x) + 2 * graph_vu * distance(av, x)
    return delta


def _distances(network):
    """Hop distance between node ids as a lookup in the all-pairs table (the networks this
    refinement handles have at most a few thousand nodes)."""
    from petacomm.topology.mapping_search import _Distance

    ids = np.arange(network.num_nodes)
    table = _Distance(network)(ids[:, None], ids[None, :]).astype(np.float32)

    def distance(a, b):
        return table[a, b].astype(np.float64)

    return distance


def _near_nodes(network, distance) -> list[np.ndarray]:
    """Nodes within ``_NEIGHBOURHOOD_HOPS`` of every node (itself included)."""
    ids = np.arange(network.num_nodes)
    return [np.flatnonzero(distance(np.full(ids.size, i), ids) <= _NEIGHBOURHOOD_HOPS) for i in ids]
