"""Ordered phases: messages released by the messages they wait for (a collective's rounds).

The flow model's timelines are worked by hand; the all-to-all schedules are checked against
plain second implementations (Bruck's data movement block by block, the rounds' partners and
what each message waits for, written as loops)."""

from __future__ import annotations

import numpy as np
import pytest

from petacomm.topology.flow_model import FlowLinks, finish_times, phase_time
from petacomm.topology.mapping import permutation_mapping
from petacomm.topology.metrics import CostParameters, evaluate_mapping
from petacomm.topology.network import parse_network
from petacomm.topology.pattern import CommPattern, Phase
from petacomm.topology.pattern_language import PatternSyntaxError, parse_pattern
from petacomm.topology.routing import parse_routing
from petacomm.topology.schedules import (
    EAGER_BYTES,
    allreduce_schedule,
    alltoall_schedule,
    barrier_schedule,
    sendrecv_rounds,
)

C, L = 1e9, 1e-6  # 1 GB/s links of 1 us
LINKS = FlowLinks(C, L, 4e9, 1e-7)


def ring(n=4):
    net = parse_network(f"torus:{n}").with_cores(1)
    return net, parse_routing("dor", net)


def ends(src, dst, nbytes, after, n=4):
    net, routing = ring(n)
    message, link = routing.route_links(net, np.array(src), np.array(dst))
    hops = np.bincount(message, minlength=len(src))
    capacity = np.full(net.num_links, C)
    return finish_times(message, link, capacity, np.array(nbytes, float), hops * L, after)


def test_a_message_leaves_when_its_predecessor_has_arrived():
    # A = 0 -> 1 ends at 1 + 10 us; B = 2 -> 3 (disjoint link) waits for it: released at
    # 11 us, its latency to 12, its 10 kB to 22 us.
    assert ends([0, 2], [1, 3], [1e4, 1e4], ([1], [0])) == pytest.approx([11e-6, 22e-6])
    # Unordered, both end at 11 us.
    assert ends([0, 2], [1, 3], [1e4, 1e4], None) == pytest.approx([11e-6, 11e-6])


def test_a_message_waits_for_the_last_of_its_predecessors():
    # A (10 kB) ends at 11 us, B (20 kB) at 21 us; C = 1 -> 2 waits for both: 21 + 1 + 10.
    got = ends([0, 2, 1], [1, 3, 2], [1e4, 2e4, 1e4], ([2, 2], [0, 1]))
    assert got == pytest.approx([11e-6, 21e-6, 32e-6])


def test_a_released_message_joins_the_sharing_of_a_busy_link():
    # A = 0 -> 1 (30 kB) runs alone on link +0 from 1 us. B = 2 -> 3 ends at 11 us and
    # releases C = 0 -> 1 (10 kB), which starts at 12 us: A has moved 11,000 B. A and C
    # (equal latency) then share +0 at 0.5 GB/s: C's 10,000 B take 20 us (ends at 32 us)
    # while A moves 10,000 B; A's last 9,000 B at 1 GB/s end it at 41 us.
    got = ends([0, 2, 0], [1, 3, 1], [3e4, 1e4, 1e4], ([2], [1]))
    assert got == pytest.approx([41e-6, 11e-6, 32e-6])


def test_empty_messages_pass_their_release_on_after_their_latency():
    # A = 0 -> 2, no bytes: 2 hops, ends at 2 us; B = 2 -> 3 after it: 2 + 1 + 10 us.
    assert ends([0, 2], [2, 3], [0.0, 1e4], ([1], [0])) == pytest.approx([2e-6, 13e-6])


def test_messages_waiting_for_each_other_are_refused():
    with pytest.raises(ValueError, match="cycle"):
        ends([0, 2], [1, 3], [1e4, 1e4], ([0, 1], [1, 0]))
    with pytest.raises(ValueError, match="out of range"):
        ends([0, 2], [1, 3], [1e4, 1e4], ([0], [5]))


def test_a_phase_checks_its_order():
    with pytest.raises(ValueError, match="outside 0..1"):
        Phase("p", [0, 1], [1, 0], 1.0, after=([1], [2]))
    with pytest.raises(ValueError, match="wait for itself"):
        Phase("p", [0, 1], [1, 0], 1.0, after=([1], [1]))
    with pytest.raises(ValueError, match="differ in length"):
        Phase("p", [0, 1], [1, 0], 1.0, after=([1], [0, 1]))


def test_bruck_rounds_priced_on_a_ring_by_hand():
    # Bruck on 4 ranks, one per node of a 4-ring, blocks of 5 kB: round 0 r -> r+1 with
    # blocks {1, 3} (10 kB, disjoint links: ends at 11 us); round 1 r -> r+2 with blocks
    # {2, 3}, released at 11 us (every rank has its round-0 receive), 2 hops (13 us), every
    # + link shared by two of them at 0.5 GB/s: 20 us more, 33 us.
    net, routing = ring(4)
    pattern = parse_pattern("ranks 4 alltoall 5kB bruck")
    cost = CostParameters(1.0, 1.0, 1.0, (), LINKS)
    metrics = evaluate_mapping(net, routing, pattern, permutation_mapping("XT", net, 4), cost)
    assert metrics.predicted_time_s == pytest.approx(33e-6)
    # All at once: 12 messages of one block; Bruck forwards some blocks (each rank's block
    # for r + 3 twice).
    linear = evaluate_mapping(
        net, routing, parse_pattern("ranks 4 alltoall 5kB"), permutation_mapping("XT", net, 4), cost
    )
    assert linear.messages == 12 and metrics.messages == 8
    assert linear.total_bytes == 12 * 5e3 and metrics.total_bytes == 16 * 5e3


def bruck_reference(p: int):
    """Bruck's algorithm moved block by block: after the local rotation, rank r's slot i
    holds the block from r to r + i; round k sends every slot with bit k set to r + 2^k,
    into the same slot. Returns the rounds' (src, dst, blocks) and checks the result."""
    slots = [[(r, (r + i) % p) for i in range(p)] for r in range(p)]
    rounds = []
    k = 1
    while k < p:
        moved = [[None] * p for _ in range(p)]
        sent = []
        for r in range(p):
            chosen = [i for i in range(p) if i & k]
            for i in chosen:
                moved[(r + k) % p][i] = slots[r][i]
            sent.append((r, (r + k) % p, len(chosen)))
        for r in range(p):
            for i in range(p):
                if moved[r][i] is not None:
                    slots[r][i] = moved[r][i]
        rounds.append(sent)
        k *= 2
    for r in range(p):  # every rank ends holding one block from each rank, all for itself
        assert sorted(src for src, _ in slots[r]) == list(range(p))
        assert all(dst == r for _, dst in slots[r])
    return rounds


def partners_reference(p: int, algorithm: str):
    """Each round's (src, dst) pairs, by loops."""
    if algorithm == "xor":
        return [[(r, r ^ k) for r in range(p)] for k in range(1, p)]
    n = p + p % 2  # the circle method (odd counts: a bye)
    rounds = []
    for j in range(n - 1):
        pairs = []
        for r in range(p):
            if r == n - 1:
                q = j
            else:
                q = (2 * j - r) % (n - 1)
                if q == r:
                    q = n - 1
            if q < p:
                pairs.append((r, q))
        rounds.append(pairs)
    return rounds


def waits_reference(rounds, sizes, eager, receiver_waits=True):
    """What each message of rounds of sendrecv waits for, by loops: the last message each of
    its two ranks (its sender only, with receives posted in advance) received before its
    round (and sent, when that one was not eager). Messages are named (round, src, dst)."""
    last_recv, last_send, waits = {}, {}, set()
    for j, pairs in enumerate(rounds):
        for s, d in pairs:
            for rank in (s, d) if receiver_waits else (s,):
                for table in (last_recv, last_send):
                    if rank in table:
                        waits.add(((j, s, d), table[rank]))
        for s, d in pairs:
            last_recv[d] = (j, s, d)
            if sizes[j] >= eager:
                last_send[s] = (j, s, d)
    return waits


def named_waits(schedule, rounds_of):
    src, dst, _, (held, before) = schedule
    names = [(rounds_of[i], int(src[i]), int(dst[i])) for i in range(src.size)]
    return {(names[h], names[b]) for h, b in zip(held, before, strict=True)}


def round_numbers(src, per_round):
    return np.repeat(np.arange(len(per_round)), per_round)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8, 12])
def test_bruck_schedule_against_its_data_movement(p):
    block = 100.0
    src, dst, nbytes, after = alltoall_schedule(p, block, "bruck")
    rounds = bruck_reference(p) if p > 1 else []
    expected = [(s, d, n * block) for sent in rounds for s, d, n in sent if s != d]
    assert sorted(zip(src.tolist(), dst.tolist(), nbytes.tolist(), strict=True)) == sorted(expected)
    if p > 1:
        pairs = [[(s, d) for s, d, _ in sent] for sent in rounds]
        sizes = [sent[0][2] * block for sent in rounds]
        got = named_waits((src, dst, nbytes, after), round_numbers(src, [p] * len(rounds)))
        assert got == waits_reference(pairs, sizes, EAGER_BYTES)


@pytest.mark.parametrize(
    "algorithm, p",
    [("xor", 2), ("xor", 4), ("xor", 8), *[("pairwise", p) for p in (2, 3, 4, 7, 8)]],
)
@pytest.mark.parametrize("block", [100.0, 2.0 * EAGER_BYTES])
def test_round_schedules_against_their_partners(algorithm, p, block):
    rounds = partners_reference(p, algorithm)
    src, dst, nbytes, after = alltoall_schedule(p, block, algorithm)
    # Every ordered pair of distinct ranks once, each round a set of disjoint exchanges.
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == sorted(
        (s, d) for s in range(p) for d in range(p) if s != d
    )
    flat = [pair for pairs in rounds for pair in pairs]
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == flat
    assert np.all(nbytes == block)
    got = named_waits((src, dst, nbytes, after), round_numbers(src, [len(r) for r in rounds]))
    assert got == waits_reference(rounds, [block] * len(rounds), EAGER_BYTES)
    for pairs in rounds:
        senders = [s for s, _ in pairs]
        assert len(set(senders)) == len(senders)
        assert {(d, s) for s, d in pairs} == set(pairs)


def test_large_blocks_hold_their_sender_until_they_arrive():
    _, _, _, (held, _) = alltoall_schedule(4, 100.0, "xor")
    _, _, _, (held_large, _) = alltoall_schedule(4, float(EAGER_BYTES), "xor")
    # Rounds 2 and 3 of 4 messages: 2 receives waited for each (sender's, receiver's),
    # and 2 sends more when the blocks are not eager.
    assert held.size == 2 * 4 * 2 and held_large.size == 2 * 4 * 4


def test_sendrecv_rounds_sends_nothing_to_the_rank_itself():
    # Round 0: 0 -> 1, rank 1 names itself, rank 2 none; round 1: 1 -> 2, rank 0 itself.
    # Messages: 0 -> 1 (id 0), then 1 -> 2 (id 1), which waits for rank 1's receive of id 0.
    src, dst, nbytes, (held, before) = sendrecv_rounds(np.array([[1, 1, -1], [0, 2, -1]]), 8.0)
    assert (src.tolist(), dst.tolist(), nbytes.tolist()) == ([0, 1], [1, 2], [8.0, 8.0])
    assert (held.tolist(), before.tolist()) == ([1], [0])


def test_pattern_language_reads_the_algorithm():
    pattern = parse_pattern("ranks 8 alltoall 1KiB bruck")
    (phase,) = pattern.phases
    assert phase.num_messages == 24 and phase.after is not None
    assert parse_pattern("ranks 8 alltoall 1KiB").phases[0].after is None
    assert parse_pattern("ranks 8 alltoall 1KiB LINEAR").phases[0].after is None
    # A statement after another in one phase: its order is renumbered past the first's.
    (mixed,) = parse_pattern("ranks 4; ring 1KiB; alltoall 1KiB xor").phases
    _, _, _, (held, before) = alltoall_schedule(4, 1024.0, "xor")
    assert np.array_equal(mixed.after[0], held + 4) and np.array_equal(mixed.after[1], before + 4)
    with pytest.raises(PatternSyntaxError, match="power-of-two") as err:
        parse_pattern("ranks 6 alltoall 1KiB xor")
    assert err.value.column == 23


def test_phase_time_takes_the_order():
    net, routing = ring(4)
    got = phase_time(net, routing, [0, 2], [1, 3], [1e4, 1e4], LINKS, ([1], [0]))
    assert got == pytest.approx(22e-6)


def everyone_heard_from_everyone(p: int, rounds) -> bool:
    """Whether, after these rounds of (src, dst) messages, each carrying what its sender
    knew before the round, every rank knows every rank's value."""
    known = [{r} for r in range(p)]
    for pairs in rounds:
        sent = [(d, set(known[s])) for s, d in pairs]
        for d, values in sent:
            known[d] |= values
    return all(k == set(range(p)) for k in known)


def rdb_reference(p: int):
    """SMPI's allreduce__rdb, by loops: each round's (src, dst) pairs."""
    pof2 = 1
    while pof2 * 2 <= p:
        pof2 *= 2
    rem = p - pof2
    rounds = []
    if rem:
        rounds.append([(r, r + 1) for r in range(0, 2 * rem, 2)])

    def real(newrank):
        return newrank * 2 + 1 if newrank < rem else newrank + rem

    mask = 1
    while mask < pof2:
        rounds.append([(real(n), real(n ^ mask)) for n in range(pof2)])
        mask *= 2
    if rem:
        rounds.append([(r, r - 1) for r in range(1, 2 * rem, 2)])
    return rounds


def redbcast_reference(p: int):
    """A binomial reduce to 0 (in-order tree: r's parent is r minus its lowest set bit),
    then the binomial broadcast from 0, by loops: each round's (src, dst) pairs."""
    rounds, k = [], 1
    while k < p:
        rounds.append([(r, r - k) for r in range(p) if r % (2 * k) == k])
        k *= 2
    k //= 2
    while k >= 1:
        rounds.append([(r, r + k) for r in range(0, p, 2 * k) if r + k < p])
        k //= 2
    return [pairs for pairs in rounds if pairs]


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8, 12])
@pytest.mark.parametrize("algorithm", ["rdb", "redbcast"])
def test_allreduce_schedules_against_loops(algorithm, p):
    rounds = (rdb_reference if algorithm == "rdb" else redbcast_reference)(p)
    # The reference is an allreduce: every rank ends knowing every rank's value.
    assert everyone_heard_from_everyone(p, rounds)
    src, dst, nbytes, after = allreduce_schedule(p, 24.0, algorithm)
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == [x for r in rounds for x in r]
    assert np.all(nbytes == 24.0)
    got = named_waits((src, dst, nbytes, after), round_numbers(src, [len(r) for r in rounds]))
    expected = waits_reference(rounds, [24.0] * len(rounds), EAGER_BYTES, algorithm == "rdb")
    assert got == expected


def test_pattern_language_reads_allreduce():
    (phase,) = parse_pattern("ranks 7 allreduce 8B").phases
    assert phase.num_messages == sum(len(r) for r in rdb_reference(7))
    (tree,) = parse_pattern("ranks 7 allreduce 8B redbcast").phases
    assert tree.num_messages == 2 * 6  # a tree's 6 edges up, then down
    with pytest.raises(PatternSyntaxError, match="size"):
        parse_pattern("ranks 7 allreduce redbcast")


def ompi_barrier_reference(p: int, algorithm: str):
    """Open MPI's barriers (SMPI's barrier-ompi.cpp), by loops: each round's (src, dst)
    pairs of empty messages, every send and receive blocking in program order."""
    rounds = []
    if algorithm == "bruck":
        d = 1
        while d < p:
            rounds.append([(r, (r + d) % p) for r in range(p)])
            d *= 2
    elif algorithm == "tree":
        depth = 1
        while depth < p:
            depth *= 2
        jump = 1
        while jump < depth:  # fan-in: a rank sends to r ^ jump when that is below it
            rounds.append(
                [(r, r ^ jump) for r in range(p) if (r ^ jump) < r and not (r ^ jump) & (jump - 1)]
            )
            jump *= 2
        jump = depth // 2
        while jump > 0:  # fan-out
            rounds.append(
                [(r, r ^ jump) for r in range(p) if r < (r ^ jump) < p and not r & (jump - 1)]
            )
            jump //= 2
    else:
        adj = 1
        while adj * 2 <= p:
            adj *= 2
        if adj != p:
            rounds.append([(r, r - adj) for r in range(adj, p)])
        mask = 1
        while mask < adj:
            rounds.append([(r, r ^ mask) for r in range(adj)])
            mask *= 2
        if adj != p:
            rounds.append([(r, r + adj) for r in range(p - adj)])
    return [pairs for pairs in rounds if pairs]


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8, 12])
@pytest.mark.parametrize("algorithm", ["rdb", "bruck", "tree"])
def test_barrier_schedules_against_open_mpis_loops(algorithm, p):
    rounds = ompi_barrier_reference(p, algorithm)
    # A barrier: every rank has heard, directly or not, from every rank before it leaves.
    assert everyone_heard_from_everyone(p, rounds)
    src, dst, nbytes, after = barrier_schedule(p, algorithm)
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == [x for r in rounds for x in r]
    assert not nbytes.any()
    got = named_waits((src, dst, nbytes, after), round_numbers(src, [len(r) for r in rounds]))
    assert got == waits_reference(rounds, [0.0] * len(rounds), EAGER_BYTES)


def ordered(name, src, dst, nbytes, timed=True):
    none = np.zeros(0, dtype=np.int64)
    return Phase(name, src, dst, nbytes, after=(none, none), timed=timed)


@pytest.mark.parametrize(
    "second, expected",
    [
        # 3 -> 0 (10 kB) waits for its sender's last receive (rank 3's, at 11 us): 22 us.
        (([3], [0], [1e4]), 22e-6),
        # 2 -> 1 (1 kB) waits for its receiver's (rank 1's, at 21 us): 21 + 1 + 1 = 23 us.
        (([2], [1], [1e3]), 23e-6),
    ],
)
@pytest.mark.parametrize("first_timed", [True, False])
def test_ordered_phases_run_rank_by_rank(second, expected, first_timed):
    # Ranks 0-3 on a 4-ring. Phase a: 0 -> 1 (20 kB, ends at 1 + 20 us) and 2 -> 3 (10 kB,
    # ends at 11 us). A message of phase b leaves when its sender and its receiver are done
    # with phase a (each rank's last receive there), not when phase a has ended everywhere
    # (a barrier between them: 21 + 11 or 21 + 2 us). The time: the latest arrival; with
    # phase a untimed, what b adds after a's last message.
    net, routing = ring(4)
    pattern = CommPattern(
        4,
        [
            ordered("a", [0, 2], [1, 3], [2e4, 1e4], timed=first_timed),
            ordered("b", *second),
        ],
    )
    cost = CostParameters(1.0, 1.0, 1.0, (), LINKS)
    metrics = evaluate_mapping(net, routing, pattern, permutation_mapping("XT", net, 4), cost)
    first = 21e-6 if first_timed else 0.0
    assert metrics.predicted_time_s == pytest.approx(expected - 21e-6 + first)
    assert metrics.phase_times_s == pytest.approx([first, expected - 21e-6])
    # Phases all in flight at once keep the barrier between them.
    unordered = CommPattern(4, [Phase("a", [0, 2], [1, 3], [2e4, 1e4]), Phase("b", *second)])
    metrics = evaluate_mapping(net, routing, unordered, permutation_mapping("XT", net, 4), cost)
    assert metrics.predicted_time_s == pytest.approx(21e-6 + 1e-6 + second[2][0] / C)


def test_pattern_language_reads_barriers_and_untimed_phases():
    pattern = parse_pattern("ranks 8; phase start untimed; barrier tree; phase x2; allreduce 8B")
    start, main = pattern.phases
    assert not start.timed and main.timed and main.repeat == 2
    assert start.num_messages == 14 and not start.nbytes.any()
    assert parse_pattern("ranks 5 barrier").phases[0].num_messages == 10
    assert not parse_pattern("ranks 4; phase untimed; barrier bruck").phases[0].timed


@pytest.mark.parametrize(
    "first, expected",
    [
        # Rank 1 receives 2 -> 1 (20 kB, at 21 us) and 0 -> 1 (10 kB, at 11 us): without a
        # barrier, b's 1 -> 2 (1 kB) leaves when the later has arrived (not the later
        # listed): 21 + 1 + 1 = 23 us.
        (([2, 0], [1, 1], [2e4, 1e4]), 23e-6),
        # Also 3 -> 0 (40 kB, at 41 us), which neither rank of 1 -> 2 waits for: the phase
        # ends at 41 us and 1 -> 2 inside it (a barrier would make it 41 + 2 us).
        (([2, 0, 3], [1, 1, 0], [2e4, 1e4, 4e4]), 41e-6),
        # Rank 1 sends 1 -> 0 of 100 kB, past the eager limit: its send holds it until the
        # message has arrived (101 us), then 1 -> 2: 103 us.
        (([1], [0], [1e5]), 103e-6),
        # ... and 50 kB, eager: 1 -> 2 leaves at once and ends at 2 us, inside the phase.
        (([1], [0], [5e4]), 51e-6),
        # Exactly the eager limit, 64 KiB, is past it (a send of at least EAGER_BYTES waits,
        # as waits_reference has it): 1 + 65.536 us, then 1 -> 2: 68.536 us.
        (([1], [0], [65536.0]), 68.536e-6),
    ],
)
def test_a_phase_without_barrier_waits_for_all_its_ranks_messages(first, expected):
    net, routing = ring(4)
    pattern = parse_pattern("ranks 4; phase a nobarrier; ring 1; phase b nobarrier; ring 1")
    a, b = pattern.phases
    assert not a.barrier and not b.barrier and a.timed
    pattern = CommPattern(
        4, [Phase("a", *first, barrier=False), Phase("b", [1], [2], 1e3, barrier=False)]
    )
    cost = CostParameters(1.0, 1.0, 1.0, (), LINKS)
    metrics = evaluate_mapping(net, routing, pattern, permutation_mapping("XT", net, 4), cost)
    assert metrics.predicted_time_s == pytest.approx(expected)
