"""Plan statistics without running ranks, and the planner's predictions from them.

Given every rank's keys (e.g. from petacomm.datasets for P up to 65,536 and beyond),
computes what a plan's directory discovery would find — multiplicities, owners (the same
hash as the native directory), partners per rank at every hub threshold — and passes the
statistics to the native cost model (``petacomm_xchg_model_predict``), the code the planner
runs inside a plan. Partners come from the list of sharing pairs (sum of d^2 over keys held
by d ranks) when it is short, else from a P x P bit matrix (P^2/8 bytes: 32 MiB at P =
16,384), counted a block of rows at a time.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from petacomm.xchg import _capi
from petacomm.xchg.registry import strategies

HUB_LEVELS = _capi.HUB_LEVELS
_OWNER_SALT = np.uint64(0x5BD1E9955BD1E995)
_SMALL_D = 64  # keys held by more ranks are added to the partner bits row by row


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, bit-identical to the native directory's hash."""
    x = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def hash_to_range(h: np.ndarray, n) -> np.ndarray:
    """A mixed hash onto [0, n), bit-identical to the native hash_to_range: the top 32 bits
    times n, shifted down 32 (no division)."""
    return ((h >> np.uint64(32)) * np.asarray(n, dtype=np.uint64)) >> np.uint64(32)


def _distinct(x: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy's hash-based unique is several times slower on the
    millions of mostly distinct values here)."""
    x = np.sort(np.asarray(x).ravel())
    if x.size == 0:
        return x
    keep = np.ones(x.size, dtype=bool)
    keep[1:] = x[1:] != x[:-1]
    return x[keep]


def _bucket(d: np.ndarray) -> np.ndarray:
    """0 for d == 1, else ceil(log2 d) (the native multiplicity buckets)."""
    return np.minimum(np.ceil(np.log2(np.maximum(d, 1))).astype(np.int64), HUB_LEVELS)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


@dataclass
class PlanStatistics:
    ranks: np.ndarray  # (P, fields) int64 in the layout of petacomm_xchg_rank_stats
    global_stats: _capi.GlobalStats

    def field(self, name: str) -> np.ndarray:
        return self.ranks[:, _FIELD_INDEX[name]]


_FIELDS: list[str] = []
for _name, _type in _capi.RankStats._fields_:
    _count = getattr(_type, "_length_", 1)
    _FIELDS += [_name] if _count == 1 else [f"{_name}[{b}]" for b in range(_count)]
_FIELD_INDEX = {name: i for i, name in enumerate(_FIELDS)}
assert ctypes.sizeof(_capi.RankStats) == 8 * len(_FIELDS)


# Sharing pairs (sum of d^2) up to which partners are counted from the pair list; beyond it
# (keys on very many ranks) from the bit matrix, whose P^2/8 bytes limit P to BIT_MATRIX_RANKS.
PAIR_BUDGET = 1 << 26
# The native planner (planner.cpp) knows every touched chunk below this one from its fused
# statistics reduction, and counts them by a second reduction over spans of fewer chunks
# than the other; beyond both it estimates their number.
_FUSED_CHUNKS = 64 * 64
_COUNTED_CHUNK_SPAN = 1 << 23
BIT_MATRIX_RANKS = 16384


def statistics(
    keysets: list[np.ndarray],
    *,
    chunk_keys: int = 65536,
    allgather_keys: int = 65536,
    pair_budget: int = PAIR_BUDGET,
    node_size: int | None = None,
    node_partials: bool = True,
) -> PlanStatistics:
    """Statistics of a plan over len(keysets) ranks (keysets[r]: rank r's keys).
    pair_budget: the longest list of sharing pairs to count partners from (else the bit
    matrix).

    node_size: nodes of that many consecutive ranks (as PETACOMM_NODE_SIZE makes them) give
    the node fields node-aware is priced with; None leaves them 0 (node-aware is then no
    candidate). node_partials: what a plan uses unless deterministic (one partial per key and
    node between leaders); False: every holder's value travels."""
    p = len(keysets)
    if p < 1:
        raise ValueError("keysets: need at least one rank")
    out = np.zeros((p, len(_FIELDS)), dtype=np.int64)
    col = _FIELD_INDEX
    lengths = np.array([len(k) for k in keysets], dtype=np.int64)
    out[:, col["n_local"]] = lengths
    # Every rank's distinct keys at once (one sort, not one per rank): (key, holder) pairs
    # sorted by key, then holder, each once.
    key = np.concatenate([np.asarray(k, dtype=np.int64).ravel() for k in keysets])
    holder = np.repeat(np.arange(p, dtype=np.int64), lengths)
    order = np.lexsort((holder, key))
    key, holder = key[order], holder[order]
    fresh = np.ones(key.size, dtype=bool)
    fresh[1:] = (key[1:] != key[:-1]) | (holder[1:] != holder[:-1])
    key, holder = key[fresh], holder[fresh]
    del order, fresh  # arrays of every key of every rank: freed as soon as done with
    counts = np.bincount(holder, minlength=p).astype(np.int64)
    out[:, col["n_unique"]] = counts
    out[:, col["directory_send_keys"]] = counts
    run = np.ones(key.size, dtype=bool)  # key is sorted: its runs are the distinct keys
    run[1:] = key[1:] != key[:-1]
    first = np.flatnonzero(run)
    distinct = key[first]
    d_key = np.diff(np.append(first, key.size))
    d = np.repeat(d_key, d_key)  # multiplicity of every (key, holder) pair
    group = np.repeat(np.arange(distinct.size), d_key)

    shared = d >= 2
    out[:, col["n_shared"]] = np.bincount(holder[shared], minlength=p)
    out[:, col["pair_values"]] = np.bincount(holder, weights=d - 1, minlength=p).astype(np.int64)
    for b in range(HUB_LEVELS):
        limit = 1 << b
        small = shared & (d <= limit)
        out[:, col[f"hub_pair_values[{b}]"]] = np.bincount(
            holder[small], weights=(d - 1)[small], minlength=p
        ).astype(np.int64)
        out[:, col[f"hub_keys[{b}]"]] = np.bincount(holder[d > limit], minlength=p)

    # Owners: the holder at position mix64(key ^ salt) % d of the key's sorted holders.
    pick = (mix64(distinct.astype(np.uint64) ^ _OWNER_SALT) % d_key.astype(np.uint64)).astype(
        np.int64
    )
    owner = np.repeat(holder[first + pick], d_key)
    not_owner = shared & (owner != holder)
    out[:, col["owner_send_values"]] = np.bincount(holder[not_owner], minlength=p)
    owned = shared & (owner == holder)
    out[:, col["owned_keys"]] = np.bincount(holder[owned], minlength=p)
    out[:, col["owner_recv_values"]] = np.bincount(
        holder[owned], weights=(d - 1)[owned], minlength=p
    ).astype(np.int64)
    pairs = _distinct(holder[not_owner] * p + owner[not_owner])
    out[:, col["owner_sends"]] = np.bincount(pairs // p, minlength=p)
    out[:, col["owner_recvs"]] = np.bincount(pairs % p, minlength=p)

    # Directory: messages to homes and replies to holders (both exclude self), reply ints:
    # position, d, owner and the d - 1 other holders per shared key, nothing for the others.
    home = hash_to_range(mix64(key.astype(np.uint64)), p).astype(np.int64)
    remote = home != holder
    links = _distinct(holder[remote] * p + home[remote])
    out[:, col["directory_send_msgs"]] = np.bincount(links // p, minlength=p) + np.bincount(
        links % p, minlength=p
    )
    replied = remote & shared
    out[:, col["directory_reply_ints"]] = np.bincount(
        holder[replied], weights=(d + 2)[replied], minlength=p
    ).astype(np.int64)
    del run, shared, owner, not_owner, owned, pairs, home, remote, replied, links

    if int(np.sum(d_key.astype(np.int64) ** 2)) <= pair_budget:
        _partners_from_pairs(out, holder, first, d_key, p)
    elif p <= BIT_MATRIX_RANKS:
        _partners(out, key, holder, d, group, first, d_key, p)
    else:
        raise ValueError(
            f"keysets: {p} ranks share keys too widely for the offline statistics (more than "
            f"{pair_budget} sharing pairs and more than {BIT_MATRIX_RANKS} ranks)"
        )
    if node_size is not None:
        _node_fields(out, key, holder, d, p, node_size, node_partials, pair_budget)

    g = _capi.GlobalStats()
    g.ranks = p
    g.distinct_keys = int(distinct.size)
    g.key_min = int(distinct[0]) if distinct.size else -1
    g.key_max = int(distinct[-1]) if distinct.size else -1
    g.chunk_keys = chunk_keys
    g.allgather_keys = allgather_keys
    g.max_unique = int(counts.max(initial=0))
    if distinct.size:
        # Chunks aligned on multiples of chunk_keys, as the native dense-allreduce walks them;
        # counted as the native planner counts them: exactly while they are few or span
        # fewer than 2^23 chunks, else estimated as min(chunks spanned, distinct keys).
        first, last = int(distinct[0]) // chunk_keys, int(distinct[-1]) // chunk_keys
        if last < _FUSED_CHUNKS or last - first < _COUNTED_CHUNK_SPAN:
            g.dense_chunks = int(_distinct(distinct // chunk_keys).size)
        else:
            g.dense_chunks = min(last - first + 1, int(distinct.size))
        chunk = key // chunk_keys  # ascending, as key is; holders ascending within a key
        order = np.lexsort((holder, chunk))
        c, h = chunk[order], holder[order]
        fresh = np.ones(c.size, dtype=bool)  # each (chunk, rank) pair once
        fresh[1:] = (c[1:] != c[:-1]) | (h[1:] != h[:-1])
        out[:, col["dense_chunks"]] = np.bincount(h[fresh], minlength=p)
    histogram = np.bincount(_bucket(d_key), minlength=HUB_LEVELS + 1)
    for b in range(HUB_LEVELS + 1):
        g.multiplicity[b] = int(histogram[b])
    return PlanStatistics(out, g)


def _partners_from_pairs(out, holder, first, d_key, p) -> None:
    """pair_partners and hub_pair_partners[b] from the list of sharing pairs: every ordered
    pair (r, q), r != q, of holders of a key, with the smallest multiplicity of a key they
    share (they are partners at threshold 2^b when it is <= 2^b). Each pair is one int64,
    (r p + q) top + d, so one in-place sort groups the pairs with their smallest d first."""
    col = _FIELD_INDEX
    top = int(d_key.max(initial=1)) + 1
    packed = p * p <= np.iinfo(np.int64).max // top
    parts, smallest = [], []
    for value in _distinct(d_key[d_key >= 2]):
        starts = first[d_key == value]
        members = holder[starts[:, None] + np.arange(value)]  # (keys, value)
        a = np.repeat(members, value, axis=1).ravel()
        b = np.tile(members, (1, value)).ravel()
        keep = a != b
        code = a[keep] * p + b[keep]
        del a, b, keep
        if packed:
            parts.append(code * top + value)
        else:
            parts.append(code)
            smallest.append(np.full(code.size, value, dtype=np.int64))
    if not parts:
        rank = dmin = np.zeros(0, dtype=np.int64)
    elif packed:
        both = np.concatenate(parts)
        del parts
        both.sort()
        code = both // top
        head = np.ones(code.size, dtype=bool)
        head[1:] = code[1:] != code[:-1]
        rank, dmin = code[head] // p, both[head] % top  # each pair once, its smallest d
    else:
        code, dmin = np.concatenate(parts), np.concatenate(smallest)
        order = np.lexsort((dmin, code))
        code, dmin = code[order], dmin[order]
        head = np.ones(code.size, dtype=bool)
        head[1:] = code[1:] != code[:-1]
        rank, dmin = code[head] // p, dmin[head]
    out[:, col["pair_partners"]] = np.bincount(rank, minlength=p)
    for b in range(HUB_LEVELS):
        out[:, col[f"hub_pair_partners[{b}]"]] = np.bincount(rank[dmin <= (1 << b)], minlength=p)


def _node_fields(out, key, holder, d, p, node_size, partials, pair_budget) -> None:
    """The node fields of petacomm_xchg_rank_stats for nodes of node_size consecutive ranks
    (from the definitions in the header, not from the native code). key, holder: every
    (key, holder) pair, sorted by key then holder; d: the key's multiplicity per pair."""
    if node_size < 1:
        raise ValueError(f"node_size: must be >= 1, got {node_size}")
    col = _FIELD_INDEX
    ranks = np.arange(p)
    nodes = (p - 1) // node_size + 1
    leaders = np.arange(0, p, node_size)
    out[:, col["nodes"]] = nodes
    out[:, col["node_ranks"]] = np.minimum(node_size, p - ranks // node_size * node_size)
    out[:, col["node_leader"]] = ranks % node_size == 0
    shared = d >= 2
    n_shared = np.bincount(holder[shared], minlength=p)
    member = ranks % node_size != 0
    out[leaders, col["node_members"]] = np.bincount(
        ranks[member] // node_size, weights=n_shared[member] > 0, minlength=nodes
    ).astype(np.int64)
    out[leaders, col["node_member_values"]] = np.bincount(
        ranks[member] // node_size, weights=n_shared[member], minlength=nodes
    ).astype(np.int64)
    # (key, node) pairs of the shared keys, with the node's holders of the key ("local").
    k, n = key[shared], holder[shared] // node_size  # sorted by key, then node
    if k.size == 0:
        return
    starts = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (n[1:] != n[:-1])])
    pk, pn = k[starts], n[starts]
    local = np.diff(np.r_[starts, k.size])
    new_key = np.r_[True, pk[1:] != pk[:-1]]
    key_start = np.flatnonzero(new_key)
    key_nodes = np.diff(np.r_[key_start, pk.size])
    of_key = np.cumsum(new_key) - 1
    remote = key_nodes[of_key] - 1
    holders = np.bincount(of_key, weights=local).astype(np.int64)[of_key]
    send = remote if partials else local * remote
    recv = remote if partials else holders - local
    out[leaders, col["node_union_keys"]] = np.bincount(pn, minlength=nodes)
    out[leaders, col["node_send_values"]] = np.bincount(pn, weights=send, minlength=nodes)
    out[leaders, col["node_recv_values"]] = np.bincount(pn, weights=recv, minlength=nodes)
    # Partner nodes: the nodes holding a common key, from the list of (node, node) pairs as
    # for ranks in _partners_from_pairs, or from a bit matrix as in _partners.
    if int(np.sum(key_nodes.astype(np.int64) ** 2)) <= pair_budget:
        codes = []
        for value in _distinct(key_nodes[key_nodes >= 2]):
            members = pn[key_start[key_nodes == value][:, None] + np.arange(value)]
            a = np.repeat(members, value, axis=1).ravel()
            b = np.tile(members, (1, value)).ravel()
            codes.append(_distinct(a[a != b] * nodes + b[a != b]))
        linked = _distinct(np.concatenate(codes)) if codes else np.zeros(0, np.int64)
        out[leaders, col["node_partners"]] = np.bincount(linked // nodes, minlength=nodes)
    elif nodes <= BIT_MATRIX_RANKS:
        bits = np.zeros((nodes, (nodes + 7) // 8), dtype=np.uint8)
        for value in np.unique(key_nodes[key_nodes >= 2]):
            _mark(bits, pn, key_nodes, key_start, int(value), nodes)
        out[leaders, col["node_partners"]] = _popcount_without_self(bits, nodes)
    else:
        raise ValueError(f"keysets: {nodes} nodes share keys too widely for the node statistics")


def _partners(out, key, holder, d, group, first, d_key, p) -> None:
    """pair_partners and hub_pair_partners[b]: ranks sharing a key of multiplicity <= 2^b."""
    col = _FIELD_INDEX
    width = (p + 7) // 8
    bits = np.zeros((p, width), dtype=np.uint8)
    levels = [b for b in range(HUB_LEVELS) if (1 << b) < p] or [0]
    done = 1
    for b in levels:
        limit = 1 << b
        for value in range(done + 1, min(limit, p) + 1):
            _mark(bits, holder, d_key, first, value, p)
        done = max(done, min(limit, p))
        out[:, col[f"hub_pair_partners[{b}]"]] = _popcount_without_self(bits, p)
    for value in range(done + 1, p + 1):
        _mark(bits, holder, d_key, first, value, p)
    total = _popcount_without_self(bits, p)
    out[:, col["pair_partners"]] = total
    for b in range(HUB_LEVELS):
        if (1 << b) >= p:
            out[:, col[f"hub_pair_partners[{b}]"]] = total


def _mark(bits, holder, d_key, first, value, p) -> None:
    """Sets bits[r, q] for every pair of holders of the keys held by exactly `value` ranks."""
    starts = first[d_key == value]
    if starts.size == 0:
        return
    members = holder[starts[:, None] + np.arange(value)]  # (keys, value)
    if value <= _SMALL_D:
        rows = np.repeat(members, value, axis=1).ravel()
        cols = np.tile(members, (1, value)).ravel()
        np.bitwise_or.at(bits, (rows, cols >> 3), (1 << (cols & 7)).astype(np.uint8))
        return
    for row in members:
        mask = np.zeros(p, dtype=bool)
        mask[row] = True
        bits[row] |= np.packbits(mask, bitorder="little")[None, :]


def _popcount_without_self(bits, p) -> np.ndarray:
    counts = np.concatenate(
        [_POPCOUNT[bits[r : r + 1024]].sum(axis=1) for r in range(0, p, 1024)]
    )  # a block of rows at a time: the lookup is 64 bits per bit-matrix byte
    ranks = np.arange(p)
    self_set = (bits[ranks, ranks >> 3] >> (ranks & 7)) & 1
    return counts - self_set


def decide(
    stats: PlanStatistics,
    cost: _capi.CostParams | None = None,
    *,
    elem_bytes: int = 8,
    transport: str = "p2p",
    p2p: _capi.P2PCurve | None = None,
) -> tuple[dict[str, dict], dict]:
    """The planner without MPI (``petacomm_xchg_model_decide``): the predicted cost of every
    registered strategy (seconds, messages and bytes per rank per execution) and the
    decision strategy "auto" would take: {"choice", "reason", "candidates": [...]}."""
    import json

    lib = _capi.library()
    table = np.ascontiguousarray(stats.ranks)
    count = len(strategies())
    out = (_capi.Prediction * count)()
    needed = ctypes.c_size_t(4096)
    text = ctypes.create_string_buffer(0)
    while needed.value > len(text):  # twice at most: the first call reports the length
        text = ctypes.create_string_buffer(needed.value)
        status = lib.petacomm_xchg_model_decide(
            table.ctypes.data_as(ctypes.POINTER(_capi.RankStats)),
            table.shape[0],
            ctypes.byref(stats.global_stats),
            ctypes.byref(cost) if cost is not None else None,
            ctypes.byref(p2p) if p2p is not None else None,
            int(elem_bytes),
            transport.encode(),
            out,
            count,
            text,
            len(text),
            ctypes.byref(needed),
        )
        _capi.check(lib, status, "model_decide")
    predicted = {}
    for item in out:
        entry = {
            "execute_seconds": item.execute_seconds,
            "setup_seconds": item.setup_seconds,
            "messages": item.messages,
            "bytes": item.bytes,
        }
        if item.hub_threshold > 0:
            entry["hub_threshold"] = item.hub_threshold
            entry["hub_keys"] = item.hub_keys
        predicted[item.strategy.decode()] = entry
    return predicted, json.loads(text.value.decode())


def predict(
    stats: PlanStatistics,
    cost: _capi.CostParams | None = None,
    *,
    elem_bytes: int = 8,
    transport: str = "p2p",
    p2p: _capi.P2PCurve | None = None,
) -> dict[str, dict]:
    """Predicted cost of every strategy (seconds, messages and bytes per rank per execute)."""
    return decide(stats, cost, elem_bytes=elem_bytes, transport=transport, p2p=p2p)[0]


def messages_between_nodes(keysets: list[np.ndarray], node_size: int) -> dict[str, int]:
    """Messages per execution that cross nodes of node_size consecutive ranks: "ranks" —
    ordered pairs of ranks on different nodes sharing a key (directory's one message per
    partner), "nodes" — ordered pairs of nodes sharing a key (node-aware's leaders)."""
    if node_size < 1:
        raise ValueError(f"node_size: must be >= 1, got {node_size}")
    p = len(keysets)
    uniques = [np.unique(np.asarray(k, dtype=np.int64)) for k in keysets]
    holder = np.repeat(np.arange(p, dtype=np.int64), [u.size for u in uniques])
    key = np.concatenate(uniques) if uniques else np.zeros(0, np.int64)
    order = np.lexsort((holder, key))
    key, holder = key[order], holder[order]
    _, first, d_key = np.unique(key, return_index=True, return_counts=True)
    bits = np.zeros((p, (p + 7) // 8), dtype=np.uint8)
    for value in np.unique(d_key[d_key >= 2]):
        _mark(bits, holder, d_key, first, int(value), p)
    linked = np.unpackbits(bits, axis=1, bitorder="little")[:, :p].astype(bool)
    node = np.arange(p) // node_size
    across = node[:, None] != node[None, :]
    nodes = node[-1] + 1 if p else 0
    node_linked = np.zeros((nodes, nodes), dtype=bool)
    rows, cols = np.nonzero(linked & across)
    node_linked[node[rows], node[cols]] = True
    return {"ranks": int((linked & across).sum()), "nodes": int(node_linked.sum())}
