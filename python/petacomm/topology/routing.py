"""Routing models: which links a message between two nodes uses, as (fractional) link loads.

All routers take *node-level* flows: arrays ``src``, ``dst`` (node ids, ``src != dst``) and a
``weights`` array of shape ``(k, n_flows)`` (typically row 0 = bytes, row 1 = message count) and
return per-link loads of shape ``(k, network.num_links)``. Loads are fractional where a model
splits traffic. Every router also gives the expected hop count of each flow, so that
``loads.sum() == (weights * hops).sum()`` (conservation; tested for every model).

Models and their text names (``parse_routing``):

* ``dor`` / ``dor:ZYX`` - torus/mesh dimension-ordered routing; the letters give the order
  (default: the dimension letters in order, X then Y then Z). A half-ring displacement
  (both directions minimal) goes in the + direction.
* ``dor-simgrid`` - torus: SimGrid's routing (``petacomm simulate``'s platforms): ``dor``
  in X, Y, Z order, a half-ring displacement + except from coordinate n/2, which goes -.
* ``adaptive`` - torus/mesh minimal adaptive, the study's first-order model: at every hop the
  traffic splits evenly over all outgoing links that reduce the distance (both directions of a
  half-ring dimension count while that dimension has not been entered).
* ``adaptive:paths`` - torus/mesh minimal adaptive where every minimal path carries an equal
  share (including both directions of half-ring dimensions).
* ``dmodk`` / ``ecmp`` - fat tree: D-mod-K deterministic up-port selection from the destination,
  or an even split over all up-ports and parallel cables (ECMP).
* ``minimal`` / ``valiant`` - dragonfly: minimal (local, global, local; an even split over the
  parallel global links between two groups), or Valiant through every other group evenly.

Each name is registered in ``ROUTING_KINDS`` with the network kinds it applies to (one
:class:`RoutingKind` line each, at the end of this module); ``parse_routing`` reads it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from petacomm.lazy_module import LazyModule
from petacomm.topology.network import DragonflyNetwork, FatTreeNetwork, TorusNetwork

# numpy is imported on first use: the registries below are read by `petacomm map --help`.
np = LazyModule("numpy")


def _as_weights(weights, n: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        w = w[None, :]
    if w.shape[1] != n:
        raise ValueError(f"weights: expected shape (k, {n}), got {w.shape}")
    return w


# --------------------------------------------------------------------------------------------
# Torus / mesh: dimension-ordered routing with difference arrays along each ring
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DimensionOrderRouting:
    """Static dimension-ordered routing; ``order`` lists dimension indices, first routed first.

    ``ties`` says where a half-ring displacement (n/2 hops both ways on a ring of even size
    n) goes: ``"plus"``, always +; ``"simgrid"``, + except from coordinate n/2, which goes -
    (SimGrid's TorusZone decides the direction from the source coordinate s and the target t
    as + when s < t <= s + n/2, or s > n/2 and t <= (s + n/2) mod n; docs/simulate.md).
    """

    order: tuple[int, ...] | None = None
    ties: str = "plus"

    name = "dor"
    # Routing a message costs a few array operations whatever its length: routing every
    # message is cheaper than sorting them into node pairs first (metrics.evaluate_mapping).
    aggregates_flows = False

    @property
    def translation_invariant(self) -> bool:
        """Whether a message's route moved by a translation of the torus is the moved
        message's route. Not with SimGrid's tie rule: it depends on the source coordinate."""
        return self.ties != "simgrid"

    def describe(self, network: TorusNetwork) -> str:
        if self.ties == "simgrid":
            return "dor-simgrid"
        order = self.order if self.order is not None else tuple(range(network.ndim))
        return "dor:" + "".join(network.letters[d] for d in order)

    def route(self, network: TorusNetwork, src, dst, weights) -> np.ndarray:
        return self.route_and_hops(network, src, dst, weights)[0]

    def route_and_hops(self, network: TorusNetwork, src, dst, weights):
        """(:meth:`route`, :meth:`expected_hops`) from one computation of the offsets."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        w = _as_weights(weights, src.size)
        cs, cd = network.coordinates(src), network.coordinates(dst)
        k, nn = w.shape[0], network.num_nodes
        loads = np.zeros((k, network.ndim, 2, nn))
        hops = np.zeros(src.size)
        dims = network.dims
        # Where each message is, one 1-D array per dimension: its source coordinates, then,
        # dimension by dimension as it is routed, its destination's.
        position = [cs[:, j] for j in range(network.ndim)]
        for d in self._order(network):
            offset = self._offset(network, cs, cd, d)
            hops += np.abs(offset)
            moving = np.flatnonzero(offset)
            if moving.size:
                loads[:, d] += _ring_segments(
                    dims, d, [p[moving] for p in position], offset[moving], w[:, moving]
                ).reshape(k, 2, nn)
            position[d] = cd[:, d]
        return loads.reshape(k, -1), hops

    def route_links(self, network: TorusNetwork, src, dst):
        """Every link of every message's route, in the link numbering of :meth:`route`:
        arrays (message index, link id), one entry per hop, the hops of a message in the
        order it takes them. The flow model (``topology/flow_model.py``) needs each
        message's own links, not only their summed loads."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        cs, cd = network.coordinates(src), network.coordinates(dst)
        position = cs.copy()
        nn = network.num_nodes
        messages, links = [], []
        for d in self._order(network):
            offset = self._offset(network, cs, cd, d)
            steps = np.abs(offset)
            minus = offset < 0
            for step in range(int(steps.max(initial=0))):
                moving = np.flatnonzero(steps > step)
                here = network.node_ids(position[moving])
                # The link leaving `here` in the message's direction along d: + links first,
                # then - links, as in route()'s (dimension, direction, node) layout.
                messages.append(moving)
                links.append((2 * d + minus[moving]) * nn + here)
                move = np.where(minus[moving], -1, 1)
                position[moving, d] = np.mod(position[moving, d] + move, network.dims[d])
        if not messages:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(messages), np.concatenate(links).astype(np.int64)

    def _order(self, network: TorusNetwork) -> tuple[int, ...]:
        order = self.order if self.order is not None else tuple(range(network.ndim))
        if sorted(order) != list(range(network.ndim)):
            raise ValueError(f"dor order: expected a permutation of 0..{network.ndim - 1}")
        return order

    def _offset(self, network: TorusNetwork, cs, cd, d: int) -> np.ndarray:
        """Signed hops of each message along dimension d."""
        raw = cd[:, d] - cs[:, d]
        if not network.wrap[d]:
            return raw
        n = network.dims[d]
        forward = np.mod(raw, n)
        # Minimal offset; a half-ring displacement goes in the + direction ...
        offset = np.where(2 * forward > n, forward - n, forward)
        if self.ties == "simgrid":  # ... but - from coordinate n/2, as in SimGrid
            tie = (2 * forward == n) & (2 * cs[:, d] == n)
            offset = np.where(tie, -forward, offset)
        return offset

    def expected_hops(self, network: TorusNetwork, src, dst) -> np.ndarray:
        return network.hop_distance(src, dst).astype(float)


def _ring_segments(dims, d, coords, offset, w) -> np.ndarray:
    """Loads (k, 2, num_nodes) of straight segments along dimension d; ``coords`` holds the
    segments' start coordinates, one array per dimension.

    A segment starting at ``coords`` moving ``offset`` steps uses the ``+`` links at ring
    positions s..s+h-1, or the ``-`` links at positions s-h+1..s. Each segment adds +w at its
    first position and -w after its last in a difference array (one extra slot per ring), split
    in two where it wraps; a cumulative sum along the ring then gives every link's load, so the
    cost is independent of the segment length.
    """
    n = dims[d]
    k = w.shape[0]
    h = np.abs(offset)
    neg = offset < 0
    s = coords[d]
    start = np.mod(np.where(neg, s - h + 1, s), n)
    end = start + h  # exclusive; > n means the segment wraps to the ring's start
    ext = list(dims)
    ext[d] = n + 1
    ext_size = math.prod(ext)
    direction = neg.astype(np.int64)

    # Cell of a position on the segment's ring: the other coordinates' part of the index
    # (first dimension fastest) is the same for all four cells of a segment.
    strides = np.cumprod([1, *ext[:-1]])
    others = direction * ext_size
    for dim in range(len(dims)):
        if dim != d:
            others = others + coords[dim] * strides[dim]

    def cell(position):
        return others + position * strides[d]

    wraps = end > n
    cells = [cell(start), cell(np.minimum(end, n))]
    signed = [w, -w]
    if wraps.any():
        zero = np.zeros(len(s), dtype=np.int64)
        cells += [cell(zero)[wraps], cell(np.clip(end - n, 0, n))[wraps]]
        signed += [w[:, wraps], -w[:, wraps]]
    all_idx = np.concatenate(cells)
    all_w = np.concatenate(signed, axis=1)
    out = np.empty((k, 2, math.prod(dims)))
    for row in range(k):
        diff = np.bincount(all_idx, weights=all_w[row], minlength=2 * ext_size)
        diff = diff.reshape([2, *ext[::-1]])  # F-order cells == C-order reversed axes
        axis = 1 + (len(dims) - 1 - d)
        acc = np.cumsum(diff, axis=axis)
        acc = np.take(acc, np.arange(n), axis=axis)
        out[row] = acc.reshape(2, -1)
    return out


# --------------------------------------------------------------------------------------------
# Torus / mesh: minimal adaptive routing via per-displacement templates
# --------------------------------------------------------------------------------------------


def forget_templates() -> None:
    """Empties the adaptive routing's template caches, as a fresh process starts (benchmarks
    that time a single use start from there)."""
    _adaptive_template.cache_clear()
    _adaptive_template_of_magnitudes.cache_clear()


@functools.lru_cache(maxsize=4096)
def _adaptive_template(offset: tuple[int, ...], tie: tuple[bool, ...], split: str):
    """Fractional use of every link by one unit flow with this displacement, as arrays
    (disp (E, ndim) of the link's tail relative to the source, dim (E,), sign (E,), frac (E,)).

    A displacement is the mirror image of its magnitudes': the same shares, on the links of
    the other direction in every negative dimension. So the template is built once per
    magnitudes (a third of a 3-D torus's displacements) and mirrored here."""
    negative = np.asarray(offset) < 0
    disp, dim, sign, frac = _adaptive_template_of_magnitudes(
        tuple(abs(v) for v in offset), tie, split
    )
    if not negative.any():
        return disp, dim, sign, frac
    return disp * np.where(negative, -1, 1), dim, np.where(negative[dim], 1 - sign, sign), frac


@functools.lru_cache(maxsize=4096)
def _adaptive_template_of_magnitudes(offset: tuple[int, ...], tie: tuple[bool, ...], split: str):
    """:func:`_adaptive_template` of a displacement without negative components.

    States are progress vectors p (p_d in 0..|o_d|, or -a..a for a half-ring dimension whose
    direction is still open). Mass flows from the source state layer by layer (layer = hops
    taken); ``split='hop'`` divides a state's mass evenly over its productive moves,
    ``split='path'`` in proportion to the number of minimal paths behind each move, so every
    minimal path carries the same share.
    """
    ndim = len(offset)
    mag = np.abs(np.asarray(offset, dtype=np.int64))
    lo = np.where(tie, -mag, 0)
    shape = tuple(int(v) for v in mag - lo + 1)
    grid = np.indices(shape).reshape(ndim, -1).T + lo  # progress vectors
    nstate = grid.shape[0]
    layer = np.abs(grid).sum(axis=1)
    tie_arr = np.asarray(tie, dtype=bool)
    remaining = mag - np.abs(grid)
    # Candidate moves: (dim, step in progress space, link sign index)
    moves = []
    for d in range(ndim):
        if mag[d] == 0:
            continue
        if tie_arr[d]:
            moves.append((d, +1, 0, (grid[:, d] >= 0) & (grid[:, d] < mag[d])))
            moves.append((d, -1, 1, (grid[:, d] <= 0) & (grid[:, d] > -mag[d])))
        else:
            moves.append((d, +1, 0, grid[:, d] < mag[d]))  # the + link
    strides = np.cumprod((1,) + shape[::-1])[:-1][::-1]  # C-order strides of the state grid
    state_index = ((grid - lo) * strides).sum(axis=1)
    assert np.array_equal(state_index, np.arange(nstate))
    # Each move's target state from every state (meaningful where the move is valid).
    targets = [state_index + step * strides[d] for d, step, _, _ in moves]
    if split == "hop":
        nmoves = sum(valid.astype(np.int64) for *_, valid in moves)
        probs = [np.where(valid, 1.0 / np.maximum(nmoves, 1), 0.0) for *_, valid in moves]
    elif split == "path":
        uncommitted = (tie_arr & (mag > 0))[None, :] & (grid == 0)
        log_paths = (
            np.array([math.lgamma(r + 1) for r in remaining.sum(axis=1)])
            - np.vectorize(lambda r: math.lgamma(r + 1), otypes=[float])(remaining).sum(axis=1)
            + uncommitted.sum(axis=1) * math.log(2.0)
        )
        probs = []
        for (*_, valid), target in zip(moves, targets, strict=True):
            at = np.where(valid, target, 0)
            probs.append(np.where(valid, np.exp(log_paths[at] - log_paths), 0.0))
    else:
        raise ValueError(f"adaptive split: expected 'hop' or 'path', got {split!r}")
    if not moves:
        empty = np.zeros((0, ndim), dtype=np.int64)
        return empty, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    # Every move of a layer at once, move by move (the order of the entries and of the
    # additions to each state is the move-by-move loop's: the same floats, 1.0-1.6x
    # faster). A move's target is a state of the next layer, so a layer's additions never
    # change the masses it reads.
    valid = np.stack([v for *_, v in moves])  # (moves, states)
    prob = np.stack(probs)
    target = np.stack(targets)
    move_dim = np.array([d for d, *_ in moves], dtype=np.int64)
    move_sign = np.array([sign for _, _, sign, _ in moves], dtype=np.int64)
    mass = np.zeros(nstate)
    mass[state_index[layer == 0]] = 1.0
    order = np.argsort(layer, kind="stable")
    bounds = np.searchsorted(layer[order], np.arange(int(layer.max()) + 2))
    sel_parts, move_parts, frac_parts = [], [], []
    for lay in range(int(layer.max())):
        states = order[bounds[lay] : bounds[lay + 1]]
        move, at = np.nonzero(valid[:, states])  # move-major
        sel = states[at]
        flow = mass[sel] * prob[move, sel]
        np.add.at(mass, target[move, sel], flow)
        sel_parts.append(sel)
        move_parts.append(move)
        frac_parts.append(flow)
    sel, move = np.concatenate(sel_parts), np.concatenate(move_parts)
    # The tail's displacement from the source, the link's dimension and direction, share.
    return grid[sel], move_dim[move], move_sign[move], np.concatenate(frac_parts)


@dataclass(frozen=True)
class MinimalAdaptiveRouting:
    """Minimal adaptive routing with exact fractional splitting (see module docstring).

    Flows with the same displacement share one template (the translation symmetry of a torus);
    the template is applied to all their sources either by direct scatter or, when that would
    be larger, as a circular convolution by FFT. ``method`` forces one ('direct' or 'fft');
    tests check both against per-flow routing.
    """

    split: str = "hop"
    method: str = "auto"

    name = "adaptive"
    translation_invariant = True  # a template per displacement

    def describe(self, network: TorusNetwork) -> str:
        return "adaptive" if self.split == "hop" else "adaptive:paths"

    def route(self, network: TorusNetwork, src, dst, weights) -> np.ndarray:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        w = _as_weights(weights, src.size)
        k, nn, ndim = w.shape[0], network.num_nodes, network.ndim
        dims = np.asarray(network.dims, dtype=np.int64)
        loads = np.zeros((k, ndim, 2, nn))
        if src.size == 0:
            return loads.reshape(k, -1)
        offsets, tie = network.dimension_offsets(src, dst)
        groups = _displacement_groups(dims, offsets, tie)
        src_coords = network.coordinates(src)
        # Direct scatter costs ~ sources x template links; one FFT convolution costs a few
        # transforms of the whole torus per link kind. Measured crossover: ~8 N elements.
        fft_threshold = 8 * nn
        flat = loads.reshape(k, -1)
        pending_links, pending_vals, pending_size = [], [], 0

        def flush():
            if pending_links:
                links = np.concatenate(pending_links)
                vals = np.concatenate(pending_vals, axis=1)
                for row in range(k):
                    flat[row] += np.bincount(links, weights=vals[row], minlength=flat.shape[1])
                pending_links.clear()
                pending_vals.clear()

        for members, disp, dim, sign, frac in self._templates(offsets, tie, groups):
            use_fft = self.method == "fft" or (
                self.method == "auto" and members.size * frac.size > fft_threshold
            )
            if use_fft:
                _apply_template_fft(
                    loads, dims, src_coords[members], w[:, members], disp, dim, sign, frac
                )
                continue
            # Chunk the (sources x template links) outer product to bound memory.
            chunk = max(1, 2_000_000 // max(1, frac.size))
            for start in range(0, members.size, chunk):
                part = members[start : start + chunk]
                links, vals = _template_direct_terms(
                    dims, nn, src_coords[part], w[:, part], disp, dim, sign, frac
                )
                pending_links.append(links)
                pending_vals.append(vals)
                pending_size += links.size
                if pending_size > 4_000_000:
                    flush()
                    pending_size = 0
        flush()
        return loads.reshape(k, -1)

    def route_shares(self, network: TorusNetwork, src, dst):
        """Every link of every message's routes with the message's share on it, in the
        link numbering of :meth:`route`: arrays (message index, link id, share), a
        message's entries together, a link at most once per message. The fractional
        counterpart of dimension order's ``route_links`` (``contention.pair_link_matrix``
        reads the routes from node 0 to every node; routing them as unit flows filled a
        flows x links array, 2-3x slower)."""
        from petacomm.topology.csr import csr_entries  # numpy: not at import (map --help)

        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        nn, dims = network.num_nodes, np.asarray(network.dims, dtype=np.int64)
        offsets, tie = network.dimension_offsets(src, dst)
        groups = _displacement_groups(dims, offsets, tie)
        first, order, bounds = groups
        # Every group's template once, then every (message, template entry) at once: one
        # numpy pass over all entries, not a few per group (255 groups from one source).
        none = np.zeros(0, np.int64)
        empty = (np.zeros((0, dims.size), np.int64), none, none, np.zeros(0))
        templates = [empty] + [t[1:] for t in self._templates(offsets, tie, groups)]
        disp, dim, sign, frac = (np.concatenate(p) for p in zip(*templates, strict=True))
        entries = np.r_[0, np.cumsum([t[3].size for t in templates[1:]], dtype=np.int64)]
        group_of = np.repeat(np.arange(first.size), np.diff(bounds))  # of order's messages
        owner, entry = csr_entries(entries, group_of)
        message = order[owner]
        tail = network.node_ids(np.mod(network.coordinates(src)[message] + disp[entry], dims))
        link = (2 * dim[entry] + sign[entry]) * nn + tail
        # Two states of a template may be one node (+n/2 and -n/2 on a ring): one entry each.
        key, where = np.unique(message * network.num_links + link, return_inverse=True)
        share = np.bincount(where, weights=frac[entry], minlength=key.size)
        keep = np.abs(share) > 1e-12
        message, link = np.divmod(key[keep], network.num_links)
        return message, link, share[keep]

    def _templates(self, offsets, tie, groups):
        """(members, template arrays) of every group of messages with one displacement."""
        first, order, bounds = groups
        for g in range(first.size):
            f0 = first[g]
            template = _adaptive_template(
                tuple(int(v) for v in offsets[f0]), tuple(bool(v) for v in tie[f0]), self.split
            )
            yield (order[bounds[g] : bounds[g + 1]], *template)

    def expected_hops(self, network: TorusNetwork, src, dst) -> np.ndarray:
        return network.hop_distance(src, dst).astype(float)


def _displacement_groups(dims, offsets, tie):
    """Messages grouped by (offsets, half-ring ties): (first message of each group, the
    messages in group order, each group's bounds in that order)."""
    radix = 2 * (2 * dims - 1)
    key = np.zeros(offsets.shape[0], dtype=np.int64)
    for d in range(len(dims)):
        key = key * radix[d] + (offsets[:, d] + dims[d] - 1) * 2 + tie[:, d]
    groups, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(groups.size + 1))
    return first, order, bounds


def _template_direct_terms(dims, nn, coords, w, disp, dim, sign, frac):
    """(link ids, per-row weights) of a template applied at every source, for one bincount."""
    nodes_coords = np.mod(coords[:, None, :] + disp[None, :, :], dims)
    node = np.zeros(nodes_coords.shape[:2], dtype=np.int64)
    for d in range(len(dims) - 1, -1, -1):
        node = node * dims[d] + nodes_coords[:, :, d]
    link = (2 * dim + sign)[None, :] * nn + node
    return link.ravel(), (w[:, :, None] * frac[None, None, :]).reshape(w.shape[0], -1)


def _apply_template_fft(loads, dims, coords, w, disp, dim, sign, frac):
    shape = tuple(int(v) for v in dims)
    k = loads.shape[0]
    axes = tuple(range(len(shape)))
    src_spec = []
    for row in range(k):
        field = np.zeros(shape)
        np.add.at(field, tuple(coords.T), w[row])
        src_spec.append(np.fft.rfftn(field, axes=axes))
    for link_kind in np.unique(2 * dim + sign):
        d, s = divmod(int(link_kind), 2)
        sel = (2 * dim + sign) == link_kind
        template = np.zeros(shape)
        np.add.at(template, tuple(np.mod(disp[sel], dims).T), frac[sel])
        tspec = np.fft.rfftn(template, axes=axes)
        for row in range(k):
            conv = np.fft.irfftn(src_spec[row] * tspec, s=shape, axes=axes)
            loads[row, d, s] += conv.ravel(order="F")


# --------------------------------------------------------------------------------------------
# Fat tree
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FatTreeRouting:
    """Up to the nearest common ancestor, then down. ``mode='dmodk'``: the up-port at level l
    is ``(dst // (w_1...w_{l-1})) mod w_l`` and the cable ``(dst // (w_1...w_l)) mod p_l``;
    ``mode='ecmp'``: an even split over all up-ports and cables."""

    mode: str = "dmodk"

    @property
    def name(self) -> str:
        return self.mode

    def describe(self, network: FatTreeNetwork) -> str:
        return self.mode

    def route(self, network: FatTreeNetwork, src, dst, weights) -> np.ndarray:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        w = _as_weights(weights, src.size)
        k = w.shape[0]
        loads = np.zeros((k, network.num_links))
        top = network.common_level(src, dst)
        m, up, par = network.down, network.up, network.parallel
        if self.mode == "dmodk":
            for active, link in self._dmodk_links(network, src, dst):
                for row in range(k):
                    loads[row] += np.bincount(
                        link[active], weights=w[row, active], minlength=network.num_links
                    )
        elif self.mode == "ecmp":
            # All links of a level below one subtree get equal shares: the port choices below
            # are uniform, so it suffices to total the traffic per subtree and spread it.
            wprod = 1
            for lv in range(1, network.levels + 1):
                active = top >= lv
                span = math.prod(m[: lv - 1])
                groups = network.num_nodes // span
                block = wprod * up[lv - 1] * par[lv - 1]
                for direction, node in (("up", src), ("down", dst)):
                    start = network.link_offset(direction, lv)
                    for row in range(k):
                        totals = np.bincount(
                            node[active] // span, weights=w[row, active], minlength=groups
                        )
                        loads[row, start : start + groups * block] += np.repeat(
                            totals / block, block
                        )
                wprod *= up[lv - 1]
        else:
            raise ValueError(f"fat tree routing: expected 'dmodk' or 'ecmp', got {self.mode!r}")
        return loads

    @property
    def lists_links(self) -> bool:
        """Whether every message has one route (dmodk), which the flow model needs."""
        return self.mode == "dmodk"

    def _dmodk_links(self, network: FatTreeNetwork, src, dst):
        """Per level and direction (up from ``src``, down to ``dst``): the messages that
        cross it (a mask) and the link each would cross there."""
        top = network.common_level(src, dst)
        m, up, par = network.down, network.up, network.parallel
        # Element index at level l-1 along the path: subtree digits, then port choices.
        b_index_src = np.zeros_like(src)
        wprod = 1
        for lv in range(1, network.levels + 1):
            active = top >= lv
            span = math.prod(m[: lv - 1])
            port = (dst // wprod) % up[lv - 1]
            cable = (dst // (wprod * up[lv - 1])) % par[lv - 1]
            for direction, node in (("up", src), ("down", dst)):
                elem = (node // span) * wprod + b_index_src
                yield (
                    active,
                    (
                        network.link_offset(direction, lv)
                        + (elem * up[lv - 1] + port) * par[lv - 1]
                        + cable
                    ),
                )
            b_index_src = b_index_src + port * wprod
            wprod *= up[lv - 1]

    def route_links(self, network: FatTreeNetwork, src, dst):
        """Every link of every message's route (dmodk only), in :meth:`route`'s numbering:
        arrays (message index, link id), one entry per hop."""
        if not self.lists_links:
            raise ValueError(f"fat tree routing {self.mode!r} splits messages over links")
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        messages, links = [], []
        for active, link in self._dmodk_links(network, src, dst):
            messages.append(np.flatnonzero(active))
            links.append(link[active])
        if not messages:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(messages), np.concatenate(links).astype(np.int64)

    def expected_hops(self, network: FatTreeNetwork, src, dst) -> np.ndarray:
        return network.hop_distance(src, dst).astype(float)


# --------------------------------------------------------------------------------------------
# Dragonfly
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DragonflyRouting:
    """Minimal (local-global-local) routing, or Valiant through every other group evenly.
    Parallel global links between two groups share the traffic evenly."""

    valiant: bool = False

    @property
    def name(self) -> str:
        return "valiant" if self.valiant else "minimal"

    def describe(self, network: DragonflyNetwork) -> str:
        return self.name

    def _minimal(self, network, src_router, dst_router, w, loads):
        """Add minimal-route loads for router pairs; returns expected hops per pair."""
        a = network.routers
        src_router = np.asarray(src_router, dtype=np.int64)
        dst_router = np.asarray(dst_router, dtype=np.int64)
        hops = np.zeros(src_router.size)
        k = w.shape[0]
        nl = network.num_links

        def add(link, weight_rows, mask):
            for row in range(k):
                loads[row] += np.bincount(link[mask], weights=weight_rows[row][mask], minlength=nl)

        gs, gd = src_router // a, dst_router // a
        same_router = src_router == dst_router
        local = (gs == gd) & ~same_router
        if local.any():
            add(network.local_link(src_router, dst_router), w, local)
            hops[local] = 1.0
        far = gs != gd
        if far.any() and network.groups > 1:
            gw, glink, land = network.global_ports(gs[far], gd[far])
            npar = gw.shape[1]
            share = np.broadcast_to(w[:, far][:, :, None] / npar, (k, int(far.sum()), npar))
            rs = np.broadcast_to(src_router[far][:, None], gw.shape)
            rd = np.broadcast_to(dst_router[far][:, None], gw.shape)
            sh = share.reshape(k, -1)
            first = (gw != rs).ravel()
            add(network.local_link(rs, gw).ravel(), sh, first)
            add(glink.ravel(), sh, np.ones(glink.size, dtype=bool))
            last = (land != rd).ravel()
            add(network.local_link(land, rd).ravel(), sh, last)
            hops[far] = 1.0 + ((gw != rs).astype(float) + (land != rd)).mean(axis=1)
        return hops

    def route(self, network: DragonflyNetwork, src, dst, weights) -> np.ndarray:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        w = _as_weights(weights, src.size)
        loads = np.zeros((w.shape[0], network.num_links))
        self._route(network, src, dst, w, loads)
        return loads

    def _route(self, network, src, dst, w, loads):
        rs, rd = network.router_of(src), network.router_of(dst)
        if not self.valiant or network.groups < 3:
            return self._minimal(network, rs, rd, w, loads)
        a, g = network.routers, network.groups
        gs, gd = rs // a, rd // a
        far = gs != gd
        hops = np.zeros(rs.size)
        if (~far).any():
            hops[~far] = self._minimal(network, rs[~far], rd[~far], w[:, ~far], loads)
        if far.any():
            # Every intermediate group other than source and destination, equally likely; the
            # first leg ends at each landing router of the parallel global links, equally.
            rsf, rdf, gsf, gdf, wf = rs[far], rd[far], gs[far], gd[far], w[:, far]
            inter = np.broadcast_to(np.arange(g)[None, :], (rsf.size, g))
            inter = inter[(inter != gsf[:, None]) & (inter != gdf[:, None])].reshape(
                rsf.size, g - 2
            )
            n_int = g - 2
            _, _, land = network.global_ports(
                np.repeat(gsf, n_int), inter.ravel()
            )  # (n*(g-2), par)
            npar = land.shape[1]
            reps = n_int * npar
            leg_src = np.repeat(rsf, reps)
            leg_mid = land.ravel()
            leg_dst = np.repeat(rdf, reps)
            leg_w = np.repeat(wf, reps, axis=1) / reps
            h1 = self._minimal(network, leg_src, leg_mid, leg_w, loads)
            h2 = self._minimal(network, leg_mid, leg_dst, leg_w, loads)
            hops[far] = ((h1 + h2).reshape(rsf.size, reps)).mean(axis=1)
        return hops

    def expected_hops(self, network: DragonflyNetwork, src, dst) -> np.ndarray:
        src = np.asarray(src, dtype=np.int64)
        scratch = np.zeros((1, network.num_links))
        return self._route(
            network, src, np.asarray(dst, dtype=np.int64), np.zeros((1, src.size)), scratch
        )


Routing = DimensionOrderRouting | MinimalAdaptiveRouting | FatTreeRouting | DragonflyRouting


def lists_routes(routing) -> bool:
    """Whether ``routing`` routes each message on one path and lists its links
    (``route_links``): the torus's dimension orders and the fat tree's dmodk."""
    return hasattr(routing, "route_links") and getattr(routing, "lists_links", True)


# --------------------------------------------------------------------------------------------
# The registry of routing models: one entry per name, read by parse_routing, the command's
# help and the docs' table (checked by a test).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoutingKind:
    """A routing model's text name, the network kinds it applies to, and how to build it:
    ``build(argument, network)`` gets the text after ``NAME:`` ('' when absent) and raises
    ValueError naming what is wrong."""

    name: str
    networks: tuple[str, ...]
    build: Callable[[str, object], object]
    syntax: str
    summary: str


ROUTING_KINDS: dict[str, RoutingKind] = {}


def register_routing(kind: RoutingKind) -> RoutingKind:
    """Adds a routing model (or replaces the one of the same name); returns it."""
    ROUTING_KINDS[kind.name] = kind
    return kind


def routings_for(network_kind: str) -> list[str]:
    """Names of the routing models that apply to a network kind, in registration order."""
    return [k.name for k in ROUTING_KINDS.values() if network_kind in k.networks]


def _no_argument(name: str, routing):
    def build(arg: str, network):
        if arg:
            raise ValueError(f"routing '{name}:{arg}': {name} takes no ':' argument")
        return routing

    return build


def _build_dor(arg: str, network) -> DimensionOrderRouting:
    if not arg:
        return DimensionOrderRouting()
    letters = network.letters
    order = []
    for ch in arg.upper():
        if ch not in letters:
            raise ValueError(
                f"routing 'dor:{arg}': unknown dimension letter {ch!r} (expected {letters})"
            )
        order.append(letters.index(ch))
    if sorted(order) != list(range(network.ndim)):
        raise ValueError(f"routing 'dor:{arg}': the order must name each of {letters} exactly once")
    return DimensionOrderRouting(tuple(order))


def _build_dor_simgrid(arg: str, network) -> DimensionOrderRouting:
    if arg:
        raise ValueError(
            f"routing 'dor-simgrid:{arg}': takes no argument (SimGrid routes the dimensions in "
            "order, X first)"
        )
    return DimensionOrderRouting(None, "simgrid")


def _build_adaptive(arg: str, network) -> MinimalAdaptiveRouting:
    if arg not in ("", "hop", "paths"):
        raise ValueError(
            f"routing 'adaptive:{arg}': expected adaptive, adaptive:hop or adaptive:paths"
        )
    return MinimalAdaptiveRouting("path" if arg == "paths" else "hop")


_GRIDS = ("torus", "mesh")
register_routing(
    RoutingKind("dor", _GRIDS, _build_dor, "dor, dor:ZYX", "dimension-ordered, static")
)
register_routing(
    RoutingKind(
        "dor-simgrid",
        ("torus",),
        _build_dor_simgrid,
        "dor-simgrid",
        "SimGrid's torus routing: dor, half-ring ties - from n/2",
    )
)
register_routing(
    RoutingKind(
        "adaptive",
        _GRIDS,
        _build_adaptive,
        "adaptive, adaptive:paths",
        "minimal adaptive, split per hop (or per path)",
    )
)
register_routing(
    RoutingKind(
        "dmodk", ("fattree",), _no_argument("dmodk", FatTreeRouting("dmodk")), "dmodk", "D-mod-K"
    )
)
register_routing(
    RoutingKind(
        "ecmp", ("fattree",), _no_argument("ecmp", FatTreeRouting("ecmp")), "ecmp", "even split"
    )
)
register_routing(
    RoutingKind(
        "minimal",
        ("dragonfly",),
        _no_argument("minimal", DragonflyRouting(False)),
        "minimal",
        "local, global, local",
    )
)
register_routing(
    RoutingKind(
        "valiant",
        ("dragonfly",),
        _no_argument("valiant", DragonflyRouting(True)),
        "valiant",
        "through every other group",
    )
)


def parse_routing(text: str | None, network):
    """Routing model from its text name (module docstring); ``None`` = the network's default."""
    kind = network.kind
    if text is not None and not text.strip():
        raise ValueError(
            "routing: empty name (expected one of " + ", ".join(routings_for(kind)) + ")"
        )
    name = (text or network.default_routing).strip()
    base, _, arg = name.partition(":")
    base = base.lower()
    allowed = routings_for(kind)
    if base not in allowed:
        raise ValueError(
            f"routing {name!r} does not apply to a {kind} network (expected one of "
            f"{', '.join(allowed)})"
        )
    return ROUTING_KINDS[base].build(arg, network)
