"""Messages and bytes one execution of each strategy sends from each rank, counted plainly
from every rank's keys (a second implementation: dictionaries and loops, no numpy tricks,
nothing from petacomm). Figures as docs/sparse-reduce.md defines them: point-to-point and
all-to-all messages exactly, MPI_Allreduce by Rabenseifner's figures."""

from __future__ import annotations

MASK = (1 << 64) - 1
OWNER_SALT = 0x5BD1E9955BD1E995


def splitmix64(x: int) -> int:
    """The splitmix64 finaliser (Steele, Lea, Flood 2014), as the directory hashes keys."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def holders(keysets) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for rank, keys in enumerate(keysets):
        for key in sorted(set(int(k) for k in keys)):
            out.setdefault(key, []).append(rank)
    return out


def _allreduce(lengths, p, elem_bytes):
    """Rabenseifner per chunk: 2 ceil(log2 p) messages, 2 (p-1)/p of the chunk's bytes."""
    if p == 1:
        return 0.0, 0.0
    steps = (p - 1).bit_length()
    return 2.0 * steps * len(lengths), sum(2.0 * (p - 1) / p * n * elem_bytes for n in lengths)


def _pairwise(mine, held, me, elem_bytes, max_d):
    partners, values = set(), 0
    for key in mine:
        d = len(held[key])
        if 2 <= d <= max_d:
            partners.update(q for q in held[key] if q != me)
            values += d - 1
    return float(len(partners)), float(values * elem_bytes)


def _node_aware(held, me, p, elem_bytes, node_size, partials):
    """A member sends its shared values to its leader; a leader returns each member its
    results and sends every other node holding one of the node's shared keys one message:
    per key one partial, or (without partials) each of its node's holders' values."""
    node = [r // node_size for r in range(p)]
    shared = {r: [k for k in held if r in held[k] and len(held[k]) >= 2] for r in range(p)}
    if me % node_size != 0:
        return (1.0 if shared[me] else 0.0), float(len(shared[me]) * elem_bytes)
    members = [r for r in range(p) if node[r] == node[me] and r != me]
    messages = sum(1 for r in members if shared[r])
    values = sum(len(shared[r]) for r in members)
    partners = set()
    for ranks in held.values():
        local = [r for r in ranks if node[r] == node[me]]
        if len(ranks) < 2 or not local:
            continue
        remote = {node[r] for r in ranks} - {node[me]}
        partners |= remote
        values += len(remote) * (1 if partials else len(local))
    return float(messages + len(partners)), float(values * elem_bytes)


def traffic(strategy, keysets, me, *, elem_bytes, chunk_keys, hub=0, node_size=None):
    """(messages, bytes) rank `me` sends per execution with `strategy` (hub-split: keys
    on more than `hub` ranks are hubs; node-aware: nodes of `node_size` consecutive ranks,
    None: one node, with partials as a plan that is not deterministic sends them)."""
    held = holders(keysets)
    mine = sorted(set(int(k) for k in keysets[me]))
    p = len(keysets)
    if strategy == "node-aware":
        return _node_aware(held, me, p, elem_bytes, node_size or p, True)
    if strategy in ("directory", "allgather"):
        return _pairwise(mine, held, me, elem_bytes, p)
    if strategy == "owner":
        to_owners, back_to, values = set(), set(), 0
        for key in mine:
            ranks = held[key]
            d = len(ranks)
            if d < 2:
                continue
            owner = ranks[splitmix64(key ^ OWNER_SALT) % d]
            if owner != me:
                to_owners.add(owner)  # round 1: my value to the owner
                values += 1
            else:
                back_to.update(q for q in ranks if q != me)  # round 2: the result back
                values += d - 1
        return float(len(to_owners) + len(back_to)), float(values * elem_bytes)
    if strategy == "dense-allreduce":
        everything = sorted(held)
        if not everything:
            return 0.0, 0.0
        # Chunks aligned on multiples of chunk_keys; the last one ends at the largest key.
        end = everything[-1] + 1
        chunks = sorted({k // chunk_keys for k in everything})
        lengths = [min(chunk_keys, end - c * chunk_keys) for c in chunks]
        return _allreduce(lengths, p, elem_bytes)
    if strategy == "hub-split":
        messages, nbytes = _pairwise(mine, held, me, elem_bytes, hub)
        hubs = sum(1 for ranks in held.values() if len(ranks) > hub)
        full, rest = divmod(hubs, chunk_keys)
        lengths = [chunk_keys] * full + ([rest] if rest else [])
        dense = _allreduce(lengths, p, elem_bytes)
        return messages + dense[0], nbytes + dense[1]
    if strategy == "range":
        # The key range in p equal parts (the owner computed in doubles, as the library does).
        first, last = min(held), max(held)

        def owner(key):
            return min(p - 1, int(float(key - first) / (float(last - first) + 1.0) * p))

        to_owners = {owner(k) for k in mine} - {me}
        values = sum(1 for k in mine if owner(k) != me)  # round 1: my values to their owners
        back_to = set()
        for key, ranks in held.items():  # round 2: the results of my part to their holders
            if owner(key) == me:
                others = [q for q in ranks if q != me]
                back_to.update(others)
                values += len(others)
        return float(len(to_owners) + len(back_to)), float(values * elem_bytes)
    if strategy == "butterfly":
        return _butterfly(keysets, me, elem_bytes)
    raise ValueError(f"strategy: no reference count for {strategy}")


def _butterfly(keysets, me, elem_bytes):
    """Every rank's held (key, rank) pairs through the steps: the even rank of each of the
    first p - p' pairs hands all to the odd one; then in step i the active rank numbered v
    passes to number v ^ 2^i the pairs whose key hash has bit i != bit i of v. Per step a
    rank sends what it passes on (forward) and the results of what it received (back)."""
    p = len(keysets)
    width = 1
    while width * 2 <= p:
        width *= 2
    rem = p - width
    held = {r: [(k, r) for k in sorted(set(int(k) for k in keysets[r]))] for r in range(p)}
    messages, values = 0, 0

    def step(given, received):  # rank me's share of one step, both directions
        nonlocal messages, values
        messages += (1 if given else 0) + (1 if received else 0)
        values += given + received

    for j in range(rem):
        even, odd = 2 * j, 2 * j + 1
        if me in (even, odd):
            step(len(held[even]) if me == even else 0, len(held[even]) if me == odd else 0)
        held[odd] = held[odd] + held[even]
        held[even] = []
    active = [2 * j + 1 for j in range(rem)] + list(range(2 * rem, p))
    for i in range(width.bit_length() - 1):
        passed = {}
        for v, r in enumerate(active):
            passed[r] = [x for x in held[r] if (splitmix64(x[0]) >> i) & 1 != (v >> i) & 1]
        for v, r in enumerate(active):
            partner = active[v ^ (1 << i)]
            if r == me:
                step(len(passed[r]), len(passed[partner]))
        for v, r in enumerate(active):
            partner = active[v ^ (1 << i)]
            held[r] = [x for x in held[r] if x not in passed[r]] + passed[partner]
    return float(messages), float(values * elem_bytes)


def spread(values):
    return min(values), sum(values) / len(values), max(values)
