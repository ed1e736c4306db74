"""Collective algorithms as the messages they send, in order: the ordered phases of
``pattern.Phase`` (``after``) that the flow time model follows rank by rank.

Each schedule is rounds of blocking exchanges (:func:`sendrecv_rounds`): a message leaves
when its sender, and unless receives are posted in advance its receiver, has done what it
waited for in its last round. The algorithms are the ones MPI libraries run (Open MPI's,
MPICH's, SimGrid SMPI's), named as the pattern language names them.
"""

from __future__ import annotations

import numpy as np

from petacomm.topology.pattern import _check_size, alltoall

# A blocking exchange's send of fewer bytes than this completes at once (the sender goes on
# while the message travels); a larger one holds its sender until it has arrived. SMPI's
# default (smpi/send-is-detached-thresh); Open MPI's and MPICH's eager limits are of this order.
EAGER_BYTES = 65536

# All-to-all algorithms as rounds of MPI_Sendrecv (see alltoall_schedule).
ALLTOALL_ALGORITHMS = ("linear", "bruck", "xor", "pairwise")


def _rounds(rounds: list, nranks: int) -> np.ndarray:
    """A list of rounds (each a destination per rank, -1 for none) as the (rounds, nranks)
    array :func:`sendrecv_rounds` takes, also when there is no round."""
    return np.array(rounds, dtype=np.int64).reshape(len(rounds), nranks)


def _binomial_rounds(nranks: int) -> list:
    """A binomial fan-in to rank 0 (in round k the ranks whose lowest set bit is k send to
    r - 2^k), then the fan-out back (multiples of 2^(k+1) send to r + 2^k)."""
    ranks = np.arange(nranks, dtype=np.int64)
    bits = max(int(nranks - 1).bit_length(), 0)
    rounds = []
    for k in range(bits):
        rounds.append(np.where((ranks & ((2 << k) - 1)) == (1 << k), ranks - (1 << k), -1))
    for k in reversed(range(bits)):
        sends = (ranks % (2 << k) == 0) & (ranks + (1 << k) < nranks)
        rounds.append(np.where(sends, ranks + (1 << k), -1))
    return rounds


def _power_of_two_below(nranks: int) -> int:
    """The largest power of two <= nranks (1 for no rank)."""
    return 1 << (int(nranks).bit_length() - 1) if nranks > 0 else 1


def sendrecv_rounds(
    send_to: np.ndarray,
    nbytes: np.ndarray,
    eager_bytes: float = EAGER_BYTES,
    receiver_waits: bool = True,
):
    """Messages and their order for rounds of ``MPI_Sendrecv``: in round j rank r sends
    ``nbytes[j]`` to ``send_to[j, r]`` (-1 or r itself: no message) and receives whatever is
    sent to it. A round's message leaves when both its sender and its receiver have entered
    the round, i.e. when the receive each of them waited for in its last round has arrived
    (and its send too when that was not eager). With ``receiver_waits`` False the receives
    are posted in advance (a tree's): a message waits for its sender only. Returns (src,
    dst, nbytes, after)."""
    send_to = np.asarray(send_to, dtype=np.int64)
    rounds, nranks = send_to.shape
    nbytes = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), (rounds,))
    # The messages each rank's next round waits for: its last receive and, when that was
    # not eager, its last send (-1: none yet).
    last_recv = np.full(nranks, -1, dtype=np.int64)
    last_send = np.full(nranks, -1, dtype=np.int64)
    src, dst, size, held, before = [], [], [], [], []
    count = 0
    ranks = np.arange(nranks, dtype=np.int64)
    for j in range(rounds):
        active = (send_to[j] >= 0) & (send_to[j] != ranks)
        s, d = ranks[active], send_to[j][active]
        ids = count + np.arange(s.size, dtype=np.int64)
        ranks_waited = (s, d) if receiver_waits else (s,)
        for waits in [table[r] for r in ranks_waited for table in (last_recv, last_send)]:
            known = waits >= 0
            held.append(ids[known])
            before.append(waits[known])
        src.append(s)
        dst.append(d)
        size.append(np.full(s.size, nbytes[j]))
        last_recv[d] = ids
        if nbytes[j] >= eager_bytes:
            last_send[s] = ids
        count += s.size
    if not src:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0), (empty, empty)
    return (
        np.concatenate(src),
        np.concatenate(dst),
        np.concatenate(size),
        (np.concatenate(held), np.concatenate(before)),
    )


def alltoall_schedule(nranks: int, nbytes: float, algorithm: str, eager_bytes=EAGER_BYTES):
    """An all-to-all of ``nbytes`` blocks as an MPI library runs it (src, dst, nbytes, after):

    * ``linear``: every block in flight at once (after = None);
    * ``bruck``: Bruck's log2 p rounds: in round k rank r sends r + 2^k the blocks whose index
      has bit k set (MPICH's and SimGrid SMPI's ``alltoall`` for small blocks);
    * ``xor``: p - 1 rounds, r trades with r XOR k in round k (p a power of two; SMPI's
      ``pair`` and petacomm's ``xor`` transpose);
    * ``pairwise``: p - 1 rounds of the circle method (petacomm's ``pairwise`` transpose).
    """
    if algorithm not in ALLTOALL_ALGORITHMS:
        raise ValueError(
            f"all-to-all algorithm: expected one of {', '.join(ALLTOALL_ALGORITHMS)}, "
            f"got {algorithm!r}"
        )
    if algorithm == "linear" or nranks < 2:
        return (*alltoall(nranks, nbytes), None)
    _check_size(nranks * (nranks - 1), "all-to-all")
    ranks = np.arange(nranks, dtype=np.int64)
    if algorithm == "bruck":
        shifts = 1 << np.arange(int(nranks - 1).bit_length(), dtype=np.int64)
        blocks = [np.count_nonzero(np.arange(1, nranks) & k) for k in shifts]
        send_to = (ranks[None, :] + shifts[:, None]) % nranks
        return sendrecv_rounds(send_to, np.array(blocks) * float(nbytes), eager_bytes)
    if algorithm == "xor":
        if nranks & (nranks - 1):
            raise ValueError(f"all-to-all xor: needs a power-of-two number of ranks, got {nranks}")
        send_to = ranks[None, :] ^ np.arange(1, nranks, dtype=np.int64)[:, None]
        return sendrecv_rounds(send_to, float(nbytes), eager_bytes)
    # The circle method on n = p (even) or p + 1 (odd; the extra player is a bye): in round
    # j player n - 1 meets j and i meets (2j - i) mod (n - 1), or n - 1 when that is i.
    n = nranks + nranks % 2
    j = np.arange(n - 1, dtype=np.int64)[:, None]
    partner = (2 * j - ranks[None, :]) % (n - 1)
    partner = np.where(partner == ranks[None, :], n - 1, partner)
    if n == nranks:
        partner[:, n - 1] = j[:, 0]
    partner[partner >= nranks] = -1
    return sendrecv_rounds(partner, float(nbytes), eager_bytes)


ALLREDUCE_ALGORITHMS = ("rdb", "redbcast")


def allreduce_schedule(nranks: int, nbytes: float, algorithm: str, eager_bytes=EAGER_BYTES):
    """An allreduce of ``nbytes`` per rank as an MPI library runs it (src, dst, nbytes, after):

    * ``rdb``: recursive doubling (MPICH's, SMPI's ``rdb``): on p not a power of two, the
      even ranks below 2 (p - p') first hand their data to the next rank and get the result
      back at the end (p' the largest power of two <= p); the others trade with the rank
      whose index differs in bit k in round k;
    * ``redbcast``: a binomial-tree reduce to rank 0 (rank r sends to r - 2^k once it has
      heard from r + 2^j, j < k; receives posted in advance), then a binomial broadcast
      from rank 0 (Open MPI's and SMPI's ``redbcast`` on small messages).
    """
    if algorithm not in ALLREDUCE_ALGORITHMS:
        raise ValueError(
            f"allreduce algorithm: expected one of {', '.join(ALLREDUCE_ALGORITHMS)}, "
            f"got {algorithm!r}"
        )
    if algorithm == "redbcast":  # the reduce's and the broadcast's rounds
        send_to = _rounds(_binomial_rounds(nranks), nranks)
        return sendrecv_rounds(send_to, float(nbytes), eager_bytes, receiver_waits=False)
    ranks = np.arange(nranks, dtype=np.int64)
    pof2 = _power_of_two_below(nranks)
    rem = nranks - pof2
    folded = (ranks < 2 * rem) & (ranks % 2 == 0)  # sit the doubling out
    newrank = np.where(ranks < 2 * rem, ranks // 2, ranks - rem)
    rounds = []
    if rem:
        rounds.append(np.where(folded, ranks + 1, -1))
    mask = 1
    while mask < pof2:
        partner = newrank ^ mask
        real = np.where(partner < rem, 2 * partner + 1, partner + rem)
        rounds.append(np.where(folded, -1, real))
        mask <<= 1
    if rem:
        rounds.append(np.where((ranks < 2 * rem) & (ranks % 2 == 1), ranks - 1, -1))
    return sendrecv_rounds(_rounds(rounds, nranks), float(nbytes), eager_bytes)


BARRIER_ALGORITHMS = ("rdb", "bruck", "tree")


def barrier_schedule(nranks: int, algorithm: str):
    """A barrier's empty messages as Open MPI's (and SMPI's ``ompi``) barriers send them
    (src, dst, nbytes, after), each a blocking send or receive in program order:

    * ``rdb``: recursive doubling among the largest power of two p' <= p, rank r trading
      with r XOR 2^k; beforehand each rank r >= p' signals r - p', which signals it back
      at the end;
    * ``bruck``: dissemination, rank r to r + 2^k in round k;
    * ``tree``: a binomial fan-in to rank 0 (a rank receives from its children one after
      another, then signals its parent), then the fan-out back.
    """
    if algorithm not in BARRIER_ALGORITHMS:
        raise ValueError(
            f"barrier algorithm: expected one of {', '.join(BARRIER_ALGORITHMS)}, got {algorithm!r}"
        )
    ranks = np.arange(nranks, dtype=np.int64)
    if algorithm == "bruck" and nranks > 1:
        return alltoall_schedule(nranks, 0.0, "bruck")
    if algorithm == "tree":
        rounds = _binomial_rounds(nranks)
    else:
        rounds = []
        pof2 = _power_of_two_below(nranks)
        if pof2 < nranks:
            rounds.append(np.where(ranks >= pof2, ranks - pof2, -1))
        mask = 1
        while mask < pof2:
            rounds.append(np.where(ranks < pof2, ranks ^ mask, -1))
            mask <<= 1
        if pof2 < nranks:
            rounds.append(np.where(ranks < nranks - pof2, ranks + pof2, -1))
    return sendrecv_rounds(_rounds(rounds, nranks), 0.0)
