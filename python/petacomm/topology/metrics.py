"""Mapping quality: link loads, contention, hop-bytes, dilation, intra/inter-node bytes and a
predicted communication time.

Definitions (all over the whole pattern: every phase, times its repeat count):

* link load in bytes / in flows: bytes and number of messages crossing each directed link,
  fractional when the routing model splits traffic;
* contention: flows per link; ``avg`` and ``max`` over *used* links (load > 0);
* hop-bytes: sum over messages of bytes x hops (= sum of link byte loads);
* dilation: hops of a message (0 inside a node); ``avg`` over messages, ``max`` over messages;
* intra-/inter-node bytes: bytes of messages whose ends share / do not share a node;
* predicted time: phases run one after another; a phase costs the busiest sender's
  alpha-beta time (the sum over the messages it sends of alpha + beta x bytes, alpha and beta
  taken from the machine model's ``pingpong`` fit piece that covers each message's size)
  plus the most loaded link's bytes x link beta (seconds per byte of one link; defaults to
  the model's large-message beta). With ``CostParameters.flow_links`` set it is the flow
  model's instead (``flow_model.py``: every message's route latency, then links shared by
  latency-weighted max-min fairness; torus routings only).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from petacomm.topology.mapping import Mapping, check_rank_count
from petacomm.topology.pattern import CommPattern
from petacomm.topology.unique_keys import unique_keys

# Loads below this fraction of a message are rounding noise from prefix sums / FFTs.
_USED_LINK_TOLERANCE = 1e-9


@dataclass(frozen=True)
class CostParameters:
    """alpha (s per message), beta (s per byte at an endpoint), link_beta (s per byte on a
    network link).

    ``pieces`` (optional) makes alpha and beta depend on the message size, as a machine
    model's piecewise point-to-point fit does: ``(from_bytes, alpha, beta)`` triples ordered
    by size; a message of n bytes uses the last piece with ``from_bytes <= n`` (the first
    piece below it). Without pieces, ``alpha`` and ``beta`` apply to every size.
    """

    alpha: float
    beta: float
    link_beta: float
    pieces: tuple[tuple[float, float, float], ...] = ()
    # The flow model's links (flow_model.FlowLinks): when set, the predicted time is the
    # flow model's and alpha, beta and link_beta only describe the machine model.
    flow_links: object = None

    def __post_init__(self):
        values = [("alpha", self.alpha), ("beta", self.beta), ("link_beta", self.link_beta)]
        values += [
            (f"piece {i} {n}", v)
            for i, p in enumerate(self.pieces)
            for n, v in zip(("from_bytes", "alpha", "beta"), p, strict=True)
        ]
        for name, value in values:
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"cost {name}: expected a finite value >= 0, got {value!r}")
        starts = [p[0] for p in self.pieces]
        if starts != sorted(starts):
            raise ValueError("cost pieces: expected increasing from_bytes")

    def alpha_beta_for(self, nbytes) -> tuple[np.ndarray, np.ndarray]:
        """Arrays (alpha, beta) for each message size in ``nbytes``."""
        n = np.asarray(nbytes, dtype=np.float64)
        if not self.pieces:
            return np.full(n.shape, self.alpha), np.full(n.shape, self.beta)
        starts = np.array([p[0] for p in self.pieces])
        index = np.clip(np.searchsorted(starts, n, side="right") - 1, 0, len(self.pieces) - 1)
        alphas = np.array([p[1] for p in self.pieces])
        betas = np.array([p[2] for p in self.pieces])
        return alphas[index], betas[index]

    def message_seconds(self, nbytes) -> np.ndarray:
        """alpha + beta n of each message, with the piece covering its size n."""
        n = np.asarray(nbytes, dtype=np.float64)
        alpha, beta = self.alpha_beta_for(n)
        return alpha + beta * n

    def pieces_for_sizes(self, sizes) -> list[tuple[float, float, float, float]]:
        """(smallest size, largest size, alpha, beta) per (alpha, beta) that covers some of
        ``sizes``, smallest sizes first (pieces of equal alpha and beta count as one). Sizes
        may repeat: no sort (the 1 M messages of ``cmb``: 45 ms with one)."""
        n = np.asarray(sizes, dtype=np.float64).ravel()
        if n.size == 0:
            return []
        if not self.pieces:
            return [(float(n.min()), float(n.max()), self.alpha, self.beta)]
        starts = np.array([p[0] for p in self.pieces])
        index = np.clip(np.searchsorted(starts, n, side="right") - 1, 0, len(self.pieces) - 1)
        spans: dict[tuple[float, float], list[float]] = {}
        for i, (_, a, b) in enumerate(self.pieces):  # ascending sizes
            chosen = n[index == i]
            if chosen.size:
                low, high = float(chosen.min()), float(chosen.max())
                span = spans.setdefault((a, b), [low, high])
                span[0], span[1] = min(span[0], low), max(span[1], high)
        return [(low, high, a, b) for (a, b), (low, high) in spans.items()]


def cost_parameters_from_model(model=None, link_beta: float | None = None) -> CostParameters:
    """Size-dependent alpha/beta from a machine model's point-to-point fit (anything with
    ``point_to_point_pieces()``, else ``alpha_beta(op, nbytes)`` at 1 MiB); with
    ``model=None`` petacomm's built-in default model. ``alpha``/``beta`` are the large-message
    piece's; the link beta defaults to that piece's beta (the asymptotic bandwidth)."""
    if model is None:
        from petacomm.model import default_model  # lazy: the model package is optional here

        model = default_model()
    alpha, beta = model.alpha_beta(op="pingpong")
    pieces: tuple = ()
    if hasattr(model, "point_to_point_pieces"):
        pieces = tuple(
            (float(p.from_bytes), float(p.alpha_s), float(p.beta_s_per_byte))
            for p in model.point_to_point_pieces()
        )
    return CostParameters(
        float(alpha), float(beta), float(beta if link_beta is None else link_beta), pieces
    )


@dataclass
class MappingMetrics:
    mapping: str
    routing: str
    nranks: int
    messages: int
    total_bytes: float
    intra_node_bytes: float
    inter_node_bytes: float
    hop_bytes: float
    avg_dilation_hops: float
    max_dilation_hops: float
    used_links: int
    max_contention_flows: float
    avg_contention_flows: float
    max_link_bytes: float
    avg_link_bytes: float
    predicted_time_s: float | None = None
    phase_times_s: list[float] = field(default_factory=list)
    intra_node_bytes_by_level: dict[str, float] | None = None
    link_bytes: np.ndarray | None = field(default=None, repr=False)
    link_flows: np.ndarray | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        """JSON-ready dict; keys carry their unit."""
        out = {
            "mapping": self.mapping,
            "routing": self.routing,
            "nranks": self.nranks,
            "messages": self.messages,
            "total_bytes": self.total_bytes,
            "intra_node_bytes": self.intra_node_bytes,
            "inter_node_bytes": self.inter_node_bytes,
            "hop_bytes": self.hop_bytes,
            "avg_dilation_hops": self.avg_dilation_hops,
            "max_dilation_hops": self.max_dilation_hops,
            "used_links": self.used_links,
            "max_contention_flows": self.max_contention_flows,
            "avg_contention_flows": self.avg_contention_flows,
            "max_link_bytes": self.max_link_bytes,
            "avg_link_bytes": self.avg_link_bytes,
            "predicted_time_s": self.predicted_time_s,
            "phase_times_s": list(self.phase_times_s),
        }
        if self.intra_node_bytes_by_level is not None:
            out["intra_node_bytes_by_level"] = dict(self.intra_node_bytes_by_level)
        return out


def node_level_flows(network, src_node, dst_node, nbytes):
    """Aggregate inter-node messages per (src node, dst node): unique pairs, bytes, counts,
    and the index of each message's pair."""
    n = network.num_nodes
    key = src_node * n + dst_node
    uniq, inverse = unique_keys(key, n * n)
    agg_bytes = np.bincount(inverse, weights=nbytes, minlength=uniq.size)
    agg_count = np.bincount(inverse, minlength=uniq.size).astype(np.float64)
    return uniq // n, uniq % n, agg_bytes, agg_count, inverse


# Messages routed at a time by evaluate_mapping.
_CHUNK_MESSAGES = 1 << 19


def _endpoint_seconds(pattern: CommPattern, phase: int, cost: CostParameters) -> float:
    """The busiest sender's alpha-beta time in one phase (each message alpha + beta n with
    the fit piece covering its size n): the same for every mapping, so computed once per
    pattern and cost parameters and kept on the pattern."""
    cache = pattern.__dict__.setdefault("_endpoint_seconds", {})
    key = (phase, cost)
    if key not in cache:
        ph = pattern.phases[phase]
        real = ph.src != ph.dst
        sent = np.bincount(
            ph.src[real], weights=cost.message_seconds(ph.nbytes[real]), minlength=pattern.nranks
        )
        cache[key] = float(sent.max(initial=0.0))
    return cache[key]


def warm_endpoint_cache(pattern: CommPattern, cost: CostParameters) -> None:
    """Computes every phase's endpoint time now (before worker processes fork)."""
    for phase in range(len(pattern.phases)):
        _endpoint_seconds(pattern, phase, cost)


def evaluate_mapping(
    network,
    routing,
    pattern: CommPattern,
    mapping: Mapping,
    cost: CostParameters | None = None,
    hierarchy=None,
    keep_loads: bool = False,
    pairs=None,
) -> MappingMetrics:
    """Route every message of ``pattern`` placed by ``mapping`` and summarise (module doc).

    ``cost`` enables the predicted time; ``hierarchy`` (a NodeHierarchy whose core count
    matches the network) splits intra-node bytes by the deepest level both ends share.
    ``pairs``: the network's :class:`~petacomm.topology.contention.PairLinks` for this
    routing model, when built; the link loads are then its rows summed (a sparse product)
    instead of routing the node-level flows again (the same loads up to rounding).
    """
    check_rank_count(pattern.nranks, network)
    if mapping.nranks != pattern.nranks:
        raise ValueError(
            f"mapping {mapping.name} places {mapping.nranks} ranks but the pattern has "
            f"{pattern.nranks}"
        )
    mapping.validate(network)
    if hierarchy is not None and hierarchy.cores_per_node != network.cores_per_node:
        raise ValueError(
            f"node hierarchy {hierarchy.to_text()!r} has {hierarchy.cores_per_node} cores but "
            f"the network has {network.cores_per_node} per node"
        )
    link_bytes = np.zeros(network.num_links)
    link_flows = np.zeros(network.num_links)
    totals = dict(messages=0, total=0.0, intra=0.0, hop_bytes=0.0, hop_sum=0.0)
    max_hops = 0.0
    phase_times = []
    by_level = None
    if hierarchy is not None:
        labels = hierarchy.level_labels()
        by_level = dict.fromkeys(labels, 0.0)
    for index, ph in enumerate(pattern.phases):
        rep = ph.repeat
        phase_loads = np.zeros((2, network.num_links))
        # Messages in chunks: the temporaries of a million-rank pattern stay small.
        for first in range(0, ph.src.size, _CHUNK_MESSAGES):
            part = slice(first, first + _CHUNK_MESSAGES)
            real = ph.src[part] != ph.dst[part]
            src, dst, nb = ph.src[part][real], ph.dst[part][real], ph.nbytes[part][real]
            sn, dn = mapping.node[src], mapping.node[dst]
            intra = sn == dn
            totals["messages"] += src.size * rep
            totals["total"] += nb.sum() * rep
            totals["intra"] += nb[intra].sum() * rep
            if by_level is not None and intra.any():
                depth = hierarchy.shared_depth(mapping.core[src[intra]], mapping.core[dst[intra]])
                per = np.bincount(depth, weights=nb[intra], minlength=len(labels))
                for i, label in enumerate(labels):
                    by_level[label] += per[i] * rep
            inter = ~intra
            if not inter.any():
                continue
            if getattr(routing, "aggregates_flows", True):
                ps, pd, pbytes, pcount, _ = node_level_flows(
                    network, sn[inter], dn[inter], nb[inter]
                )
            else:  # every message is its own flow
                ps, pd, pbytes = sn[inter], dn[inter], nb[inter]
                pcount = np.ones(ps.size)
            if pairs is not None:
                loads = pairs.loads(pairs.rows(ps, pd), pbytes, pcount)
                hops = routing.expected_hops(network, ps, pd)
            else:
                # Messages of one size (a stencil's) need one routed row: bytes = size x flows.
                same_size = pbytes.size > 0 and bool(np.all(pbytes == pbytes[0] * pcount))
                weights = pcount[None, :] if same_size else np.stack([pbytes, pcount])
                if hasattr(routing, "route_and_hops"):
                    loads, hops = routing.route_and_hops(network, ps, pd, weights)
                else:
                    loads = routing.route(network, ps, pd, weights)
                    hops = routing.expected_hops(network, ps, pd)
                if same_size:
                    loads = np.concatenate([loads * pbytes[0], loads])
            phase_loads += loads
            totals["hop_bytes"] += float((pbytes * hops).sum()) * rep
            totals["hop_sum"] += float((pcount * hops).sum()) * rep
            max_hops = max(max_hops, float(hops.max()))
        link_bytes += phase_loads[0] * rep
        link_flows += phase_loads[1] * rep
        if cost is not None and cost.flow_links is None:
            phase_max_link = float(phase_loads[0].max())
            phase_times.append(
                _endpoint_seconds(pattern, index, cost) + phase_max_link * cost.link_beta
            )
    predicted = None
    if cost is not None and cost.flow_links is not None:
        phase_times, predicted = _flow_pattern_seconds(
            network, routing, pattern, mapping, cost.flow_links
        )
    elif cost is not None:
        predicted = float(
            sum(
                t * ph.repeat for t, ph in zip(phase_times, pattern.phases, strict=True) if ph.timed
            )
        )
    scale = max(1.0, float(np.abs(link_flows).max(initial=0.0)))
    used = link_flows > _USED_LINK_TOLERANCE * scale
    messages = totals["messages"]
    return MappingMetrics(
        mapping=mapping.name,
        routing=routing.describe(network),
        nranks=pattern.nranks,
        messages=int(messages),
        total_bytes=totals["total"],
        intra_node_bytes=totals["intra"],
        inter_node_bytes=totals["total"] - totals["intra"],
        hop_bytes=totals["hop_bytes"],
        avg_dilation_hops=totals["hop_sum"] / messages if messages else 0.0,
        max_dilation_hops=max_hops,
        used_links=int(used.sum()),
        max_contention_flows=float(link_flows.max(initial=0.0)),
        avg_contention_flows=float(link_flows[used].mean()) if used.any() else 0.0,
        max_link_bytes=float(link_bytes.max(initial=0.0)),
        avg_link_bytes=float(link_bytes[used].mean()) if used.any() else 0.0,
        predicted_time_s=predicted,
        phase_times_s=phase_times,
        intra_node_bytes_by_level=by_level,
        link_bytes=link_bytes if keep_loads else None,
        link_flows=link_flows if keep_loads else None,
    )


def _flow_pattern_seconds(network, routing, pattern, mapping, links):
    """(each phase's time, the pattern's predicted time) by the flow model. A phase whose
    messages are all in flight at once starts when everything before it has ended, unless
    it has no barrier; a run of ordered phases (a collective's rounds) and phases without a
    barrier runs rank by rank, each rank going on to the next phase when its own part of
    the last one is done (see :func:`_flow_chain_seconds`).
    Untimed phases run but do not count."""
    from petacomm.topology import flow_model

    if not flow_model.supports(routing):
        raise ValueError(
            f"the flow time model needs each message's route: routing "
            f"{routing.describe(network)!r} gives link loads only (use dor or dor-simgrid "
            "on a torus, dmodk on a fat tree)"
        )
    check_flow_sizes(pattern)
    times, total = [], 0.0
    for phases, chained in flow_groups(pattern):
        if chained:
            attributed = _flow_chain_seconds(network, routing, phases, mapping, links)
            times.extend(attributed)
            total += sum(attributed)
            continue
        (ph,) = phases
        real = ph.src != ph.dst
        src, dst = mapping.node[ph.src[real]], mapping.node[ph.dst[real]]
        times.append(flow_model.phase_time(network, routing, src, dst, ph.nbytes[real], links))
        total += times[-1] * ph.repeat if ph.timed else 0.0
    return times, total


def flow_groups(pattern):
    """The pattern's phases as the flow model prices them, in order: (phases, chained) with
    a lone phase after a barrier, all in flight at once (chained False), or a run of ordered
    phases (a collective's rounds) and phases without a barrier, priced as one (True)."""
    chain = []
    for ph in pattern.phases:
        if ph.after is not None or not ph.barrier:
            chain.append(ph)
            continue
        if chain:
            yield chain, True
            chain = []
        yield [ph], False
    if chain:
        yield chain, True


def check_flow_sizes(pattern, hint: str = "use the link-load time model") -> None:
    """flow_model.TooManyMessages unless the flow model takes every group of
    :func:`flow_groups`: the messages each phase releases together (a phase without order:
    all its messages but a rank's to itself, which the model leaves out; an ordered phase:
    those no pair of its order holds back), and a run's messages in all, every repeat
    included."""
    from petacomm.topology import flow_model

    for phases, chained in flow_groups(pattern):
        total = 0
        for ph in phases:
            ordered = ph.after is not None
            n = ph.num_messages if ordered else int((ph.src != ph.dst).sum())
            at_once = flow_model.released_at_once(n, ph.after) if ordered else n
            what = f"phase {ph.name!r}"
            flow_model.check_size(n, at_once, hint, what)
            if chained:  # the run's messages so far, none of them counted as in flight
                total += n * ph.repeat
                flow_model.check_size(total, 0, hint, f"the run ending at {what}")


def _flow_chain_seconds(network, routing, phases, mapping, links) -> list[float]:
    """Consecutive ordered phases (and phases without a barrier) priced as one: each message
    also waits for what its sender and its receiver waited for at the end of the phase
    before (each repeat of a phase is one more phase; see ``wait_rank`` below), so a rank
    enters a phase when it is done with the last one, as the ranks of a program run
    collective after collective without a barrier between.
    Returns what each phase adds to the time of the last message: the rise of the latest
    arrival over its messages (repeats included); an untimed phase's rise is not counted,
    so a leading untimed barrier makes the time run from the last rank's exit, as a
    benchmark's clock does. Every message is kept: a rank's own cross its loopback."""
    from petacomm.topology import flow_model
    from petacomm.topology.csr import csr_entries
    from petacomm.topology.schedules import EAGER_BYTES

    nranks = int(mapping.node.size)
    # What each rank waits for before its next phase (pairs rank, message): in an ordered
    # phase its last receive, in one all at once every receive; and its sends that were
    # not eager (the last one, or all).
    wait_rank, wait_message = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    src, dst, nbytes, held, before, owner = [], [], [], [], [], []
    count = 0
    for index, ph in enumerate(phases):
        ordered = ph.after is not None
        if ordered:
            ph_src, ph_dst, ph_nbytes, ph_after = ph.src, ph.dst, ph.nbytes, ph.after
        else:  # all in flight at once, without a rank's messages to itself
            real = ph.src != ph.dst
            ph_src, ph_dst, ph_nbytes = ph.src[real], ph.dst[real], ph.nbytes[real]
            ph_after = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        for _ in range(ph.repeat):
            ids = count + np.arange(ph_src.size, dtype=np.int64)
            held.append(ph_after[0] + count)
            before.append(ph_after[1] + count)
            # Each message waits for what its sender and its receiver wait for.
            order = np.argsort(wait_rank, kind="stable")
            first = np.searchsorted(wait_rank[order], np.arange(nranks + 1))
            waited = wait_message[order]
            for ranks in (ph_src, ph_dst):
                which, position = csr_entries(first, ranks)
                held.append(ids[which])
                before.append(waited[position])
            src.append(ph_src)
            dst.append(ph_dst)
            nbytes.append(ph_nbytes)
            owner.append(np.full(ph_src.size, index))
            count += ph_src.size
            # The ranks that took part in this phase wait for its messages from now on.
            large = ph_nbytes >= EAGER_BYTES
            if ordered:  # the latest listed of each rank's: its last round's
                latest = np.full(nranks, -1, dtype=np.int64)
                np.maximum.at(latest, ph_dst, ids)
                sent = np.full(nranks, -1, dtype=np.int64)
                np.maximum.at(sent, ph_src[large], ids[large])
                rank = np.concatenate([np.flatnonzero(latest >= 0), np.flatnonzero(sent >= 0)])
                message = np.concatenate([latest[latest >= 0], sent[sent >= 0]])
            else:  # every receive, every send that was not eager
                rank = np.concatenate([ph_dst, ph_src[large]])
                message = np.concatenate([ids, ids[large]])
            took_part = np.zeros(nranks, dtype=bool)
            took_part[rank] = True
            keep = ~took_part[wait_rank]
            wait_rank = np.concatenate([wait_rank[keep], rank])
            wait_message = np.concatenate([wait_message[keep], message])
    src, dst = np.concatenate(src), np.concatenate(dst)
    order = (np.concatenate(held), np.concatenate(before))
    ends = flow_model.message_times(
        network, routing, mapping.node[src], mapping.node[dst], np.concatenate(nbytes), links, order
    )
    owner = np.concatenate(owner)
    latest = np.zeros(len(phases))
    np.maximum.at(latest, owner, ends)
    reached = np.maximum.accumulate(latest)
    rise = np.diff(reached, prepend=0.0)
    return [float(r) if ph.timed else 0.0 for r, ph in zip(rise, phases, strict=True)]


def predicted_times(
    network, routing, pattern: CommPattern, mappings, cost: CostParameters, hierarchy=None
) -> dict[str, float]:
    """Predicted communication time (seconds, the table's ``predicted`` column) of each
    mapping, by name, in order: the figure to compare with a simulated or measured run of
    the same pattern under each mapping."""
    return {
        m.name: evaluate_mapping(
            network, routing, pattern, m, cost=cost, hierarchy=hierarchy
        ).predicted_time_s
        for m in mappings
    }
