"""Flow-level contention model: the time of a phase whose messages are all in flight at once,
with the links shared between concurrent messages by weighted max-min fairness.

The link-load model of ``metrics.py`` prices a phase by its most loaded link, a lower bound:
a message that crosses two busy links gets the smaller of its two shares, and finishes after
the busiest link has drained. This model follows every message instead (a fluid model, the
one SimGrid's CM02 network model and SMPI use):

* a message first waits its route's latency (the sum of its links' latencies), then takes
  part in the sharing until its bytes are through;
* at every moment the messages in their transfer phase get rates by weighted max-min
  fairness (progressive filling): every link's capacity is shared in proportion to
  1 / weight, where a message's weight is its route latency (SimGrid's RTT unfairness:
  a message over more hops gets a smaller share of a link it shares), and a message's rate
  is its share on its most constrained link;
* the rates are recomputed whenever a message starts its transfer or ends;
* a message between two ranks of one node crosses the node's loopback: its own bandwidth
  and latency, not shared (SimGrid's cluster loopback is a FATPIPE link).

A phase ends when its last message ends; phases run one after another, each ``repeat``
times. No endpoint (injection) limit and no per-message software overhead: the machine is
its links, as a SimGrid cluster's hosts are.
"""

from __future__ import annotations

from dataclasses import dataclass

from petacomm.lazy_module import LazyModule

np = LazyModule("numpy")

# The model re-solves the sharing at every start and end of a message, over the messages in
# flight: more than this many released at once are refused (a 1024-rank all-to-all, a
# million blocks in flight, 24 mappings: 8 minutes without an answer); the link-load model
# prices them. Ordered rounds keep few in flight, so a run of them may hold many more
# messages in all: a 1024-rank transpose's 1,047,552 rounds' messages took 9-66 s and
# 0.78 GB here; the second limit bounds the memory.
MAX_MESSAGES = 100_000
MAX_ORDERED_MESSAGES = 1 << 21

# Relative tolerances: a link is saturated within this fraction of the lowest fill level; a
# message whose remaining bytes fall below this fraction of its size has ended.
_LEVEL_TOLERANCE = 1e-9
_DONE_TOLERANCE = 1e-9


class TooManyMessages(ValueError):
    """A phase too large for the flow model (MAX_MESSAGES, MAX_ORDERED_MESSAGES): ``reason``
    says which limit, the message adds what to do instead."""

    def __init__(self, reason: str, hint: str):
        super().__init__(f"{reason} ({hint})")
        self.reason = reason


@dataclass(frozen=True)
class FlowLinks:
    """Bandwidth (bytes/s) and latency (s) of the network's links and of a node's loopback."""

    bandwidth: float
    latency: float
    loopback_bandwidth: float
    loopback_latency: float

    def __post_init__(self):
        for name in ("bandwidth", "latency", "loopback_bandwidth", "loopback_latency"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0 or (name.endswith("bandwidth") and value == 0):
                raise ValueError(f"flow model {name}: expected a finite value > 0, got {value!r}")


def supports(routing) -> bool:
    """True when ``routing`` can list each message's links (the flow model needs them):
    ``routing.lists_routes``."""
    from petacomm.topology.routing import lists_routes

    return lists_routes(routing)


def phase_time(
    network, routing, src_nodes, dst_nodes, nbytes, links: FlowLinks, after=None
) -> float:
    """Seconds until the last of these messages (node ids, sizes in bytes) has arrived;
    ``after`` (message, predecessor) pairs hold a message back until its predecessors have
    arrived (see :func:`finish_times`)."""
    ends = message_times(network, routing, src_nodes, dst_nodes, nbytes, links, after)
    return float(ends.max()) if ends.size else 0.0


def released_at_once(messages: int, after=None) -> int:
    """How many of ``messages`` start together: those no ``after`` pair holds back (``after``
    validated as :func:`finish_times` takes it)."""
    if after is None:
        return messages
    return int(np.count_nonzero(_Successors(messages, after).pending == 0))


def check_size(
    messages: int,
    at_once: int,
    hint: str = "use the link-load time model",
    what: str = "this phase",
) -> None:
    """TooManyMessages (naming ``what``, ending with ``hint``) unless the model takes
    ``messages`` messages of which ``at_once`` start together (MAX_MESSAGES,
    MAX_ORDERED_MESSAGES)."""
    if at_once > MAX_MESSAGES:
        raise TooManyMessages(
            f"the flow model takes at most {MAX_MESSAGES:,} messages in flight at once, "
            f"{what} has {at_once:,}",
            hint,
        )
    if messages > MAX_ORDERED_MESSAGES:
        raise TooManyMessages(
            f"the flow model takes at most {MAX_ORDERED_MESSAGES:,} messages in a run of "
            f"ordered phases, {what} has {messages:,}",
            hint,
        )


def message_times(network, routing, src_nodes, dst_nodes, nbytes, links: FlowLinks, after=None):
    """When each of these messages arrives (seconds), as :func:`phase_time` prices them."""
    src_nodes = np.asarray(src_nodes, dtype=np.int64)
    dst_nodes = np.asarray(dst_nodes, dtype=np.int64)
    nbytes = np.asarray(nbytes, dtype=np.float64)
    if src_nodes.size == 0:
        return np.zeros(0)
    if after is None:  # before the routing's work (with an order: finish_times checks)
        check_size(src_nodes.size, src_nodes.size)
    inter = np.flatnonzero(src_nodes != dst_nodes)
    intra = np.flatnonzero(src_nodes == dst_nodes)
    message, link = routing.route_links(network, src_nodes[inter], dst_nodes[inter])
    message = inter[message]
    hops = np.bincount(message, minlength=src_nodes.size).astype(np.float64)
    latency = hops * links.latency
    # Each loopback message has a link of its own (no sharing), numbered after the network's.
    message = np.concatenate([message, intra])
    link = np.concatenate([link, network.num_links + np.arange(intra.size)])
    latency[intra] = links.loopback_latency
    capacity = np.concatenate(
        [np.full(network.num_links, links.bandwidth), np.full(intra.size, links.loopback_bandwidth)]
    )
    return finish_times(message, link, capacity, nbytes, latency, after)


def finish_times(message, link, capacity, nbytes, latency, after=None):
    """When each message ends: ``message``/``link`` list the (message, link) pairs of the
    routes, ``capacity`` each link's bandwidth, ``nbytes`` and ``latency`` each message's
    size and route latency (also its sharing weight; see the module doc).

    ``after``, when given, is a pair of arrays (message, predecessor): a message is released
    when the last of its predecessors has ended (at once when it has none), then waits its
    latency and shares the links. That is how a collective's rounds run: a rank's message
    of round k+1 leaves when its receive of round k has arrived, not when round k ends
    everywhere."""
    from petacomm.topology.csr import csr_entries

    message = np.asarray(message, dtype=np.int64)
    link = np.asarray(link, dtype=np.int64)
    n = nbytes.size
    # One pair per (message, link): a route crosses a link once. Grouped by message, so
    # that each solve gathers the routes of the messages in flight only.
    links = int(link.max(initial=0)) + 1
    pairs = np.unique(message * links + link)
    route_link = pairs % links
    route_first = np.searchsorted(pairs // links, np.arange(n + 1))
    # A route of zero latency (possible only with zero-latency links) shares as if of the
    # smallest positive one: a weight of zero would claim every link's whole capacity. The
    # shares depend on the weights' ratios only: scaled so that the smallest is 1, a latency
    # of 1e300 s does not overflow the fill levels into inf and NaN (which never ended).
    positive = latency[latency > 0]
    smallest = positive.min() if positive.size else 1.0
    weight = np.maximum(latency, smallest) / smallest
    capacity = np.asarray(capacity, dtype=np.float64)
    successors = _Successors(n, after)
    released = successors.pending == 0
    # Released at once is exact for a phase, a bound from below for a run of them, whose
    # callers check each phase (metrics.check_flow_sizes).
    check_size(n, int(np.count_nonzero(released)))
    # When each message's transfer starts: its latency after its release (inf: not released).
    start = np.where(released, latency, np.inf)
    remaining = nbytes.astype(np.float64)
    finish = np.full(n, np.inf)
    # The messages released and not ended, the only ones each event looks at (an ordered
    # phase of many rounds has few of them at a time).
    live = np.flatnonzero(np.isfinite(start))
    relabel = np.empty(capacity.size, dtype=np.int64)  # a link's number within one solve
    now = 0.0
    while live.size:
        started = start[live] <= now * (1 + _LEVEL_TOLERANCE)
        moving, waiting = live[started], live[~started]
        empty = moving[remaining[moving] <= 0]
        if empty.size:  # nothing to transfer: ends when its latency is over
            finish[empty] = start[empty]
            freed = successors.release(empty, finish, start, latency)
            live = np.concatenate([live[np.isinf(finish[live])], freed])
            continue
        step = np.inf
        if moving.size:
            local_message, gather = csr_entries(route_first, moving)
            crossed = route_link[gather]
            present = np.zeros(capacity.size, dtype=bool)
            present[crossed] = True
            used = np.flatnonzero(present)
            relabel[used] = np.arange(used.size)
            local_link = relabel[crossed]
            rate = _max_min_rates(local_message, local_link, capacity[used], weight[moving])
            step = float((remaining[moving] / rate).min())
        if waiting.size:
            step = min(step, float(start[waiting].min()) - now)
        now += step
        if moving.size:
            remaining[moving] -= rate * step
            ended = moving[remaining[moving] <= _DONE_TOLERANCE * np.maximum(nbytes[moving], 1.0)]
            finish[ended] = now
            remaining[ended] = 0.0
            freed = successors.release(ended, finish, start, latency)
            live = np.concatenate([live[np.isinf(finish[live])], freed])
    if np.isinf(finish).any():
        raise ValueError(
            f"flow model: {int(np.isinf(finish).sum())} messages wait for each other "
            "(their predecessors form a cycle)"
        )
    return finish


class _Successors:
    """The messages each message holds back (``after``'s pairs grouped by predecessor) and
    how many predecessors each message still waits for."""

    def __init__(self, n: int, after):
        if after is None:
            self.pending = np.zeros(n, dtype=np.int64)
            self.first = None
            return
        held, predecessor = (np.asarray(a, dtype=np.int64).ravel() for a in after)
        if held.shape != predecessor.shape:
            raise ValueError("flow model after: message and predecessor arrays differ in length")
        if held.size and (
            min(held.min(), predecessor.min()) < 0 or max(held.max(), predecessor.max()) >= n
        ):
            raise ValueError(f"flow model after: message index out of range 0..{n - 1}")
        order = np.argsort(predecessor, kind="stable")
        self.held = held[order]
        self.first = np.searchsorted(predecessor[order], np.arange(n + 1))
        self.pending = np.bincount(held, minlength=n)
        self.released_at = np.zeros(n)

    def release(self, ended, finish, start, latency):
        """Count the ``ended`` messages off their successors'; a successor with none left
        starts its latency at its last predecessor's end. Returns the ones released."""
        from petacomm.topology.csr import csr_entries

        if self.first is None or ended.size == 0:
            return np.zeros(0, dtype=np.int64)
        owner, index = csr_entries(self.first, ended)
        if not index.size:
            return np.zeros(0, dtype=np.int64)
        held = self.held[index]
        np.maximum.at(self.released_at, held, finish[ended][owner])
        np.subtract.at(self.pending, held, 1)
        now_free = held[self.pending[held] == 0]
        if now_free.size > 1:  # sorted, once each (np.unique, without its cost on a few)
            now_free.sort()
            now_free = now_free[np.concatenate(([True], now_free[1:] != now_free[:-1]))]
        start[now_free] = self.released_at[now_free] + latency[now_free]
        return now_free


def _max_min_rates(message, link, capacity, weight):
    """Weighted max-min fair rates of the ``moving`` messages (progressive filling): all
    rates grow as level / weight until a link is full; its messages keep their rates, and
    the others grow on with what the full links left.

    A round fills every link that no link sharing a message with it would fill sooner (a
    local minimum of the fill levels), not only the lowest link of all: a link's level only
    rises when messages that cross it are fixed by a link of lower level, so a local
    minimum fills at its level whatever happens elsewhere. On a large network that fixes
    links far apart in one round (tens of rounds where one at a time took hundreds). Works
    on the (message, link) pairs of the messages not yet fixed (numpy counts, no matrices);
    messages and links are numbered from 0 in ``message`` and ``link``."""
    rate = np.zeros(weight.size)
    residual = capacity.copy()
    inverse = 1.0 / weight
    m, k = message, link
    level = np.empty(capacity.size)
    while m.size:
        demand = np.bincount(k, weights=inverse[m], minlength=capacity.size)
        used = demand > 0
        level.fill(np.inf)
        level[used] = residual[used] / demand[used]
        # Each message's lowest level on its route, then each link's lowest over its messages.
        message_low = np.full(weight.size, np.inf)
        np.minimum.at(message_low, m, level[k])
        link_low = np.full(capacity.size, np.inf)
        np.minimum.at(link_low, k, message_low[m])
        full = used & (level <= link_low * (1 + _LEVEL_TOLERANCE))
        fixed = np.zeros(weight.size, dtype=bool)
        fixed[m[full[k]]] = True
        rate[fixed] = message_low[fixed] * inverse[fixed]
        now_fixed = fixed[m]
        residual -= np.bincount(k[now_fixed], weights=rate[m[now_fixed]], minlength=capacity.size)
        np.maximum(residual, 0.0, out=residual)
        m, k = m[~now_fixed], k[~now_fixed]
    return rate


def links_from_model(model, bandwidth: float | None = None, latency: float | None = None):
    """FlowLinks from a machine model (``petacomm.model``): the inter-node point-to-point
    8 B alpha as one link's latency and the 1 MiB bandwidth as its bandwidth (each
    overridden when given); the loopback from the intra-node fit when the model has one,
    else 4x the bandwidth at a tenth of the latency."""
    inter = model.point_to_point_operation() or "pingpong"
    alpha, _ = model.alpha_beta(inter, 8)
    _, beta = model.alpha_beta(inter, 1 << 20)
    if bandwidth is None:
        bandwidth = _bandwidth(beta, inter)
    latency = alpha if latency is None else latency
    if "pingpong.intra" in model.operations:
        loop_latency, _ = model.alpha_beta("pingpong.intra", 8)
        _, loop_beta = model.alpha_beta("pingpong.intra", 1 << 20)
        loopback = _bandwidth(loop_beta, "pingpong.intra")
        return FlowLinks(bandwidth, latency, loopback, loop_latency)
    return FlowLinks(bandwidth, latency, 4.0 * bandwidth, latency / 10)


def _bandwidth(beta: float, operation: str) -> float:
    """Bytes per second of a fit's beta; a beta of 0 (a fit that found no time per byte)
    gives no bandwidth to share between flows."""
    if beta <= 0:
        raise ValueError(
            f"{operation}'s fit at 1 MiB has beta 0 (no time per byte, so no bandwidth to "
            "share between flows)"
        )
    return 1.0 / beta
