"""The planner without MPI (petacomm_xchg_model_decide, the code a plan runs): its cost
model against the formulas of docs/sparse-reduce.md re-derived here by hand, its choices on
key sets whose best strategy is known by construction, auto = argmin of the predicted costs
over the candidates, the point-to-point price taken at the message size at hand, and the
machine model read once per file version."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

US = 1e-6


def _log2(p: int) -> int:
    return (p - 1).bit_length()  # ceil(log2 p)


def _cost(**values):
    from petacomm.xchg import _capi

    cost = _capi.CostParams()
    for name, _ in cost._fields_:
        setattr(cost, name, values.get(name, 0.0))
    return cost


def _curve(pieces):
    from petacomm.xchg import _capi

    curve = _capi.P2PCurve()
    curve.pieces = len(pieces)
    for i, (start, alpha, beta) in enumerate(pieces):
        curve.from_bytes[i], curve.alpha[i], curve.beta[i] = start, alpha, beta
    return curve


# ---- the cost model against the documented formulas -------------------------------------
# Four ranks' statistics, written by hand (they need not come from real keys: the model is
# a function of them). Fields not given are 0.
RANKS = [
    dict(n_local=120, n_unique=100, pair_partners=3, pair_values=30, owner_sends=2,
         owner_send_values=10, owner_recvs=1, owner_recv_values=4,
         hub=[(1, 6), (2, 14)]),
    dict(n_local=90, n_unique=90, pair_partners=1, pair_values=1000, owner_sends=1,
         owner_send_values=500, owner_recvs=3, owner_recv_values=700,
         hub=[(1, 100), (1, 600)]),
    dict(n_local=300, n_unique=250, pair_partners=2, pair_values=8, owner_sends=2,
         owner_send_values=8, owner_recvs=0, owner_recv_values=0,
         hub=[(0, 0), (2, 8)]),
    dict(n_local=0, n_unique=0),
]  # fmt: skip
# Two nodes of two ranks (leaders 0 and 2) for node-aware; n_shared is read by it alone.
# Node 0's leader receives 600 values in one message (the large piece), node 1's sends them.
NODES = [
    dict(n_shared=20, node_leader=1, node_members=1, node_member_values=50, node_union_keys=60,
         node_partners=1, node_send_values=30, node_recv_values=600),
    dict(n_shared=50),
    dict(n_shared=5, node_leader=1, node_union_keys=5, node_partners=1, node_send_values=600,
         node_recv_values=30),
    dict(),
]  # fmt: skip
for _rank, _fields in zip(RANKS, NODES, strict=True):
    _rank.update(_fields, nodes=2, node_ranks=2)
P = len(RANKS)
E = 24  # bytes per key (3 float64)
GAMMA, A_AR, B_AR, A_A2A, B_A2A = 0.1e-9, 3 * US, 1 / 2e9, 1 * US, 1 / 4e9
PIECES = [(0, 0.5 * US, 1 / 2e9), (4096, 3 * US, 1 / 8e9)]  # small and large messages
GLOBAL = dict(distinct_keys=900, key_min=10, key_max=5009, dense_chunks=3, chunk_keys=1024,
              allgather_keys=65536, max_unique=250,
              multiplicity={0: 700, 1: 120, 2: 80})  # fmt: skip


def _statistics():
    from petacomm.xchg import _capi, offline

    table = np.zeros((P, len(offline._FIELDS)), dtype=np.int64)
    for r, given in enumerate(RANKS):
        for name, value in given.items():
            if name == "hub":
                for b, (partners, values) in enumerate(given["hub"]):
                    table[r, offline._FIELD_INDEX[f"hub_pair_partners[{b}]"]] = partners
                    table[r, offline._FIELD_INDEX[f"hub_pair_values[{b}]"]] = values
            else:
                table[r, offline._FIELD_INDEX[name]] = value
    g = _capi.GlobalStats()
    g.ranks = P
    for name, value in GLOBAL.items():
        if name == "multiplicity":
            for bucket, keys in value.items():
                g.multiplicity[bucket] = keys
        else:
            setattr(g, name, value)
    return offline.PlanStatistics(table, g)


def _p2p(messages, nbytes):
    """m alpha + bytes beta at the piece covering the mean message size (the docs)."""
    if messages == 0:
        return 0.0
    size = nbytes / messages
    _, alpha, beta = [piece for piece in PIECES if size >= piece[0]][-1]
    return messages * alpha + nbytes * beta


def _dense(keys, chunks):
    """fill + place + copy out, allreduce latency per chunk, Rabenseifner volume."""
    return 3 * keys * E * GAMMA + chunks * 2 * _log2(P) * A_AR + 2 * (P - 1) / P * keys * E * B_AR


def _expected():
    get = [lambda name, r=r: RANKS[r].get(name, 0) for r in range(P)]
    common = max(2 * (g("n_local") + g("n_unique")) * E * GAMMA for g in get)
    common += 2 * _log2(P) * A_AR  # the per-execution argument check
    out = {}
    chunks, span = GLOBAL["dense_chunks"], GLOBAL["key_max"] - GLOBAL["key_min"] + 1
    touched = min(chunks * GLOBAL["chunk_keys"], span)
    out["dense-allreduce"] = (
        common + _dense(touched, chunks),
        chunks * 2 * _log2(P),
        2 * (P - 1) / P * touched * E,
    )

    def pairwise_local(g, values):
        return (3 * g("n_unique") + 4 * values) * E * GAMMA

    out["allgather"] = (
        common
        + max(
            (P - 1) * A_A2A + g("pair_values") * E * B_A2A + pairwise_local(g, g("pair_values"))
            for g in get
        ),
        max(g("pair_partners") for g in get),
        max(g("pair_values") * E for g in get),
    )
    out["directory"] = (
        common
        + max(
            _p2p(g("pair_partners"), g("pair_values") * E) + pairwise_local(g, g("pair_values"))
            for g in get
        ),
        max(g("pair_partners") for g in get),
        max(g("pair_values") * E for g in get),
    )

    def wire(g):  # one owner round: max(sends, receives) messages of max(s, r) values
        m = max(g("owner_sends"), g("owner_recvs"))
        return _p2p(m, max(g("owner_send_values"), g("owner_recv_values")) * E)

    def s_r(g):
        return g("owner_send_values") + g("owner_recv_values")

    round1 = max(wire(g) + (3 * g("n_unique") + 2 * s_r(g)) * E * GAMMA for g in get)
    round2 = max(wire(g) + 2 * s_r(g) * E * GAMMA for g in get)
    out["owner"] = (
        common + round1 + round2,
        max(g("owner_sends") + g("owner_recvs") for g in get),
        max(s_r(g) * E for g in get),
    )
    # range: no discovery, so every key to its range owner and back, all p - 1 partners.
    u_max = max(g("n_unique") for g in get)
    out["range"] = (
        common + 2 * _p2p(P - 1, u_max * E) + 4 * u_max * E * GAMMA,
        2 * (P - 1),
        2 * u_max * E,
    )
    # butterfly: s steps out and s back with one partner each, about u/2 values per step
    # (s: log2 of the largest power of two <= p, one more when p is not one).
    width = 1 << (P.bit_length() - 1)
    steps = (width.bit_length() - 1) + (width < P)
    half = u_max / 2 if P > 1 else 0
    out["butterfly"] = (
        common + 2 * steps * _p2p(1, half * E) + (4 * steps * half + 4 * u_max) * E * GAMMA,
        2 * steps,
        2 * steps * half * E,
    )
    best = None
    for b in range(_log2(P)):  # thresholds 2^b below p
        hubs = sum(k for bucket, k in GLOBAL["multiplicity"].items() if bucket > b)
        hub_chunks = math.ceil(hubs / GLOBAL["chunk_keys"])

        def level(g, b=b):
            pairs = RANKS[get.index(g)].get("hub", [(0, 0)] * 2)
            return pairs[b] if b < len(pairs) else (0, 0)

        rest = max(_p2p(level(g)[0], level(g)[1] * E) + pairwise_local(g, level(g)[1]) for g in get)
        t = common + rest + _dense(hubs, hub_chunks)
        if best is None or t < best[0]:
            best = (
                t,
                max(level(g)[0] for g in get) + hub_chunks * 2 * _log2(P),
                max(level(g)[1] * E for g in get) + 2 * (P - 1) / P * hubs * E,
                1 << b,
                hubs,
            )
    out["hub-split"] = best

    def node_aware(g):  # (seconds, messages, bytes) of one rank
        ns, u = g("n_shared"), g("n_unique")
        if not g("node_leader"):
            local = (3 * u + 4 * ns) * E * GAMMA
            return 2 * _p2p(1 if ns else 0, ns * E) + local, int(ns > 0), ns * E
        m, vm, u = g("node_members"), g("node_member_values"), g("node_union_keys")
        p, s, r = g("node_partners"), g("node_send_values"), g("node_recv_values")
        seconds = 2 * _p2p(m, vm * E) + _p2p(p, max(s, r) * E)
        seconds += (3 * g("n_unique") + 6 * (vm + ns) + 6 * u + 2 * s + 4 * r) * E * GAMMA
        return seconds, m + p, (vm + s) * E

    out["node-aware"] = (
        common + max(node_aware(g)[0] for g in get),
        max(node_aware(g)[1] for g in get),
        max(node_aware(g)[2] for g in get),
    )
    return out


def test_cost_model_matches_the_documented_formulas():
    from petacomm.xchg import offline

    cost = _cost(
        local_beta=GAMMA,
        allreduce_alpha=A_AR,
        allreduce_beta=B_AR,
        alltoallv_alpha=A_A2A,
        alltoallv_beta=B_A2A,
        p2p_alpha=99.0,
        p2p_beta=99.0,
    )  # fmt: skip  (the curve replaces these)
    predicted = offline.predict(_statistics(), cost, elem_bytes=E, p2p=_curve(PIECES))
    expected = _expected()
    assert set(predicted) == set(expected)
    for name, (seconds, messages, nbytes, *hub) in expected.items():
        got = predicted[name]
        assert got["execute_seconds"] == pytest.approx(seconds, rel=1e-12), name
        assert got["messages"] == pytest.approx(messages, rel=1e-12), name
        assert got["bytes"] == pytest.approx(nbytes, rel=1e-12), name
        if hub:
            assert (got["hub_threshold"], got["hub_keys"]) == tuple(hub)
    # The hand-worked case exercises both pieces of the curve (rank 0's messages are small,
    # rank 1's large) and makes the maximum over ranks matter (no rank is largest in all).
    assert 30 * E / 3 < 4096 < 1000 * E


def test_p2p_price_is_the_piece_at_the_message_size():
    """The same exchange of one value per message costs alpha_small per message, and a large
    one alpha_large: not one alpha for every size (issue: 2.99 us against 0.44 us at 8 B)."""
    from petacomm.xchg import offline

    stats = _statistics()
    for r in range(P):
        stats.ranks[r, :] = 0
    col = offline._FIELD_INDEX
    stats.ranks[0, col["pair_partners"]] = 10
    stats.ranks[0, col["pair_values"]] = 10  # one 8-byte value per message
    small = offline.predict(stats, _cost(), elem_bytes=8, p2p=_curve(PIECES))
    stats.ranks[0, col["pair_values"]] = 10 * 1024  # 8 KiB per message
    large = offline.predict(stats, _cost(), elem_bytes=8, p2p=_curve(PIECES))
    assert small["directory"]["execute_seconds"] == pytest.approx(10 * 0.5 * US + 80 / 2e9)
    assert large["directory"]["execute_seconds"] == pytest.approx(10 * 3 * US + 81920 / 8e9)


# ---- choices on key sets whose best strategy is known by construction -----------------
def _keysets(p, shared_by_all=0, pair_keys=0, private=0, seed=0):
    """Rank r: `private` keys of its own spread over a 10^9 range, `pair_keys` keys shared
    with rank r+1 (ring) and `shared_by_all` keys every rank holds."""
    rng = np.random.default_rng(seed)
    spread = rng.permutation(10**6)[: p * private].reshape(p, private) * 1000 + 7
    out = []
    for r in range(p):
        keys = [spread[r], np.arange(shared_by_all) * 1009 + 3]
        for q in (r, (r - 1) % p):  # the pair keys of (q, q + 1)
            keys.append(10**10 + q * pair_keys + np.arange(pair_keys))
        out.append(np.unique(np.concatenate(keys).astype(np.int64)))
    return out


def _decide(keysets, cost=None, elem_bytes=8):
    from petacomm.xchg import offline

    stats = offline.statistics(keysets, chunk_keys=1024)
    return offline.decide(stats, cost, elem_bytes=elem_bytes)


def _argmin_candidates(predicted, decision):
    """auto's choice recomputed here: the cheapest candidate, earlier in registry order on
    a tie (the decision's candidate flags are checked separately)."""
    candidates = [c["name"] for c in decision["candidates"] if c["candidate"]]
    return min(candidates, key=lambda n: (predicted[n]["execute_seconds"], candidates.index(n)))


def _check_candidates(predicted, decision):
    flags = {c["name"]: c["candidate"] for c in decision["candidates"]}
    assert flags["allgather"] is False  # the study's reference is never chosen
    assert flags["hub-split"] == (predicted["hub-split"]["hub_keys"] > 0)
    assert all(flags[n] for n in ("dense-allreduce", "directory", "owner"))
    assert decision["choice"] == _argmin_candidates(predicted, decision)


def test_every_key_on_every_rank_chooses_dense():
    """All p ranks hold the same C keys. On a machine whose collectives run at link speed
    (allreduce alpha/beta = point-to-point), dense-allreduce moves 2(p-1)/p C values in
    2 log2 p steps per chunk; owner moves as much in 2 (p-1) messages and more local work;
    directory moves (p-1) C values; hub-split is dense over the same C keys plus the empty
    remainder's local work."""
    p, keys = 16, np.arange(512, dtype=np.int64)
    link = dict(p2p_alpha=2 * US, p2p_beta=1 / 5e9, allreduce_alpha=2 * US,
                allreduce_beta=1 / 5e9, alltoallv_alpha=2 * US, alltoallv_beta=1 / 5e9,
                local_beta=0.1e-9)  # fmt: skip
    predicted, decision = _decide([keys] * p, _cost(**link))
    _check_candidates(predicted, decision)
    assert decision["choice"] == "dense-allreduce", decision["reason"]
    assert predicted["directory"]["bytes"] == (p - 1) * 512 * 8


def test_disjoint_keys_send_nothing():
    """No key is shared: the sparse strategies send nothing, dense-allreduce would still
    reduce the whole range. directory and owner cost the same local work (the tie goes to
    directory, earlier in the registry); hub-split has no hubs and is no candidate."""
    keysets = _keysets(7, private=3000)
    predicted, decision = _decide(keysets)
    _check_candidates(predicted, decision)
    assert decision["choice"] == "directory", decision["reason"]
    for name in ("directory", "owner", "allgather"):
        assert predicted[name]["messages"] == predicted[name]["bytes"] == 0
    assert predicted["dense-allreduce"]["bytes"] > 0
    assert predicted["hub-split"]["hub_keys"] == 0


def test_keys_shared_by_pairs_choose_directory():
    """Each rank shares 64 keys with each ring neighbour, its other keys spread over a huge
    range: directory sends each shared value once to its one other holder in one round;
    owner sends as many values in two rounds; dense would reduce the whole range; hub-split
    would pay allreduce steps for the d = 2 keys."""
    keysets = _keysets(8, pair_keys=64, private=2000)
    predicted, decision = _decide(keysets)
    _check_candidates(predicted, decision)
    assert decision["choice"] == "directory", decision["reason"]
    assert predicted["directory"]["messages"] == 2
    assert predicted["directory"]["bytes"] == 2 * 64 * 8


def test_some_keys_on_all_ranks_choose_hub_split():
    """300 keys on all 16 ranks among pairwise-shared and private ones: all-pairs exchange
    pays 15 values per such key and 15 partners, owner two rounds with 15 partners; hub-split
    reduces just those keys densely (one chunk, 2 log2 16 steps) and the rest with the two
    ring neighbours."""
    keysets = _keysets(16, shared_by_all=300, pair_keys=100, private=3000)
    predicted, decision = _decide(keysets)
    _check_candidates(predicted, decision)
    assert decision["choice"] == "hub-split", decision["reason"]
    assert predicted["hub-split"]["hub_keys"] == 300
    assert predicted["directory"]["messages"] == 15


@pytest.mark.parametrize("p", [1, 3, 8, 64])
def test_auto_is_the_argmin_on_cmb_key_sets(p):
    from petacomm.datasets import make

    gen = make("cmb", p, nside=32, samples_per_rank=3000)
    predicted, decision = _decide([np.unique(k) for k in gen.all_keys()], elem_bytes=24)
    _check_candidates(predicted, decision)
    costs = sorted(
        (c["predicted_execute_seconds"], c["name"])
        for c in decision["candidates"]
        if c["candidate"]
    )
    assert decision["reason"].startswith(f"lowest predicted time: {costs[0][1]} ")
    if len(costs) > 1:
        assert f" vs {costs[1][1]} " in decision["reason"]


# ---- the machine model: the p2p curve and the per-process cache -------------------------
def _two_piece_model():
    from petacomm.model import MachineModel, OperationModel, Piece

    pieces = [Piece(0, 4096, 0.44 * US, 1 / 3e9, 1.0, 5), Piece(4096, 1 << 30, 2.99 * US,
              1 / 11e9, 1.0, 5)]  # fmt: skip
    return MachineModel({"pingpong": OperationModel("pingpong", 2, pieces)}, source="test")


def test_p2p_curve_follows_the_model_pieces():
    from petacomm.xchg.cost import cost_params, p2p_curve

    model = _two_piece_model()
    curve = p2p_curve(model)
    assert curve.pieces == 2
    assert list(curve.from_bytes)[:2] == [0, 4096]
    assert (curve.alpha[0], curve.beta[0]) == model.alpha_beta("pingpong", 8)
    assert (curve.alpha[1], curve.beta[1]) == model.alpha_beta("pingpong", 1 << 20)
    assert cost_params(model, 4).p2p_alpha == pytest.approx(0.44 * US)  # not the 1 MiB piece


def test_allreduce_is_priced_with_its_arithmetic_unless_measured():
    """Derived from the ping-pong, an allreduce costs the network's 2 (p-1)/p n beta plus the
    reduction's 3 (p-1)/p n local passes (1.5 local_beta per byte of that volume); a
    measured allreduce already includes its arithmetic and is taken as fitted."""
    from petacomm.model import OperationModel, Piece, default_model
    from petacomm.xchg.cost import cost_params

    derived = cost_params(default_model(), 4)
    assert derived.local_beta == pytest.approx(1 / 10e9, rel=1e-12, abs=0)
    assert derived.allreduce_beta == pytest.approx(2.5 / 10e9, rel=1e-12, abs=0)  # 10 GB/s
    measured = _two_piece_model()
    measured.operations["allreduce"] = OperationModel(
        "allreduce", 4, [Piece(0, 1 << 30, 9 * US, 3e-10, 1.0, 5)]
    )
    params = cost_params(measured, 4)
    assert params.allreduce_beta == pytest.approx(3e-10 / (2 * 3 / 4), rel=1e-12, abs=0)
    assert params.allreduce_alpha == pytest.approx(9 * US / (2 * 2), rel=1e-12, abs=0)


def _ping_pong_model(alpha=2 * US, beta=1 / 5e9, **measured):
    """A model of one ping-pong line, plus collectives measured as {op: (p, [pieces])}."""
    from petacomm.model import MachineModel, OperationModel, Piece

    operations = {
        "pingpong": OperationModel("pingpong", 2, [Piece(0, 1 << 30, alpha, beta, 1.0, 5)])
    }
    for op, (p, pieces) in measured.items():
        operations[op] = OperationModel(op, p, [Piece(*piece, 1.0, 5) for piece in pieces])
    return MachineModel(operations, source="test")


def test_collective_parameters_derived_from_the_ping_pong_by_hand():
    """The planner's collective formulas (petacomm/xchg.h) with parameters that reproduce
    the model's collective times. Ping-pong 2 us + n / 5 GB/s, local_beta 1 / 10 GB/s:

    p = 5 (ceil(log2 5) = 3 steps, not 2):
      allgather, ring: (p-1)(alpha + n beta) = 8 us + 4 n beta; the planner's
        3 allgather_alpha + 4 n allgather_beta gives 8/3 us and beta;
      alltoallv, pairwise: 8 us + 4 n beta per destination's n; the planner's
        4 alltoallv_alpha + (4 n) alltoallv_beta gives 2 us and beta;
      allreduce, Rabenseifner: 2 log2(5) alpha + 2 (4/5) n beta; the planner's
        2 * 3 allreduce_alpha + 2 (4/5) n allreduce_beta gives 2 log2(5) / 6 * 2 us and
        beta + 1.5 local_beta (the arithmetic a derived allreduce adds);
    p = 2 (one step): every alpha 2 us (allreduce: 2 * 1 * 2 us / 2), every beta as above."""
    from petacomm.xchg.cost import cost_params

    beta, local = 1 / 5e9, 1 / 10e9
    for p, allgather_alpha, allreduce_alpha in [
        (5, 8 * US / 3, 2 * math.log2(5) * 2 * US / 6),
        (2, 2 * US, 2 * US),
    ]:
        params = cost_params(_ping_pong_model(), p)
        got = {name: getattr(params, name) for name, _ in params._fields_}
        assert got == pytest.approx(
            dict(p2p_alpha=2 * US, p2p_beta=beta, allgather_alpha=allgather_alpha,
                 allgather_beta=beta, alltoallv_alpha=2 * US, alltoallv_beta=beta,
                 allreduce_alpha=allreduce_alpha, allreduce_beta=beta + 1.5 * local,
                 local_beta=local),
            rel=1e-9,
            abs=0,
        ), p  # fmt: skip


def test_measured_collectives_give_the_planner_their_own_lines():
    """At the measured p (8: 3 steps) each collective's fitted line t = A + B n is divided by
    the planner formula's factors, each from its own operation's fit (an alltoall measured
    beside the alltoallv is not the alltoallv's):
      allgather 30 us + 7 ns n: 30/3 = 10 us, 7/7 = 1 ns;
      alltoallv 20 us + 3.5 ns n: 20/7 us, 3.5/7 = 0.5 ns;
      allreduce 12 us + 1.75 ns n: 12/(2*3) = 2 us, 1.75 / (2 * 7/8) = 1 ns, no arithmetic
      added (a measured allreduce includes it)."""
    from petacomm.xchg.cost import cost_params

    model = _ping_pong_model(
        allgather=(8, [(0, 1 << 30, 30 * US, 7e-9)]),
        alltoallv=(8, [(0, 1 << 30, 20 * US, 3.5e-9)]),
        alltoall=(8, [(0, 1 << 30, 99 * US, 9e-9)]),
        allreduce=(8, [(0, 1 << 30, 12 * US, 1.75e-9)]),
    )
    params = cost_params(model, 8)
    got = [params.allgather_alpha, params.allgather_beta, params.alltoallv_alpha,
           params.alltoallv_beta, params.allreduce_alpha, params.allreduce_beta]  # fmt: skip
    assert got == pytest.approx([10 * US, 1e-9, 20 * US / 7, 0.5e-9, 2 * US, 1e-9], rel=1e-9, abs=0)
    # A fit whose 1 MiB time is below its 8 B time (a 100 us small-message piece over a
    # 1 us one) prices no byte at a negative time: beta 0, alpha the 8 B time, 100 us / 3.
    falling = _ping_pong_model(
        allgather=(8, [(0, 4096, 100 * US, 0.0), (4096, 1 << 30, 1 * US, 1e-12)])
    )
    params = cost_params(falling, 8)
    assert (params.allgather_alpha, params.allgather_beta) == pytest.approx(
        (100 * US / 3, 0.0), rel=1e-9, abs=0
    )


def test_planner_costs_are_kept_per_model_content_and_rank_count():
    """One model at p = 4 and p = 16 (ring allgather: 3 * 2 us over 2 steps = 3 us, 15 * 2 us
    over 4 steps = 7.5 us); two models whose allreduce fits differ only in the ranks they were
    measured on (an allreduce of 12 us at p0 is alpha = 12 us / (2 log2 p0), which at p = 8
    is that alpha again: 3 us from p0 = 4, 1.5 us from p0 = 16); and every call's own copy."""
    from petacomm.xchg.cost import planner_costs

    model = _ping_pong_model(alpha=2 * US)
    assert planner_costs(model, 4)[0].allgather_alpha == pytest.approx(3 * US, rel=1e-9, abs=0)
    assert planner_costs(model, 16)[0].allgather_alpha == pytest.approx(7.5 * US, rel=1e-9, abs=0)
    line = [(0, 1 << 30, 12 * US, 1e-9)]
    at_4 = _ping_pong_model(alpha=1.25 * US, allreduce=(4, line))
    at_16 = _ping_pong_model(alpha=1.25 * US, allreduce=(16, line))
    assert planner_costs(at_4, 8)[0].allreduce_alpha == pytest.approx(3 * US, rel=1e-9, abs=0)
    assert planner_costs(at_16, 8)[0].allreduce_alpha == pytest.approx(1.5 * US, rel=1e-9, abs=0)
    params, curve = planner_costs(model, 4)
    params.allgather_alpha, curve.alpha[0] = 99.0, 99.0
    params, curve = planner_costs(model, 4)
    assert (params.allgather_alpha, curve.alpha[0]) == pytest.approx(
        (3 * US, 2 * US), rel=1e-9, abs=0
    )


def test_p2p_curve_takes_as_many_pieces_as_the_planner_holds():
    from petacomm.errors import PetacommError
    from petacomm.model import MachineModel, OperationModel, Piece
    from petacomm.xchg._capi import P2P_PIECES
    from petacomm.xchg.cost import p2p_curve

    def model(count):  # pieces from 0, 64, 128, ... B, alpha 1, 2, 3, ... us
        pieces = [Piece(64 * i, 64 * (i + 1), (i + 1) * US, 1e-9, 1.0, 5) for i in range(count)]
        return MachineModel({"pingpong": OperationModel("pingpong", 2, pieces)}, source="t")

    curve = p2p_curve(model(P2P_PIECES))
    assert curve.pieces == P2P_PIECES
    assert list(curve.from_bytes) == [64.0 * i for i in range(P2P_PIECES)]
    assert list(curve.alpha) == pytest.approx(
        [(i + 1) * US for i in range(P2P_PIECES)], rel=1e-9, abs=0
    )
    with pytest.raises(PetacommError, match=f"has {P2P_PIECES + 1} pieces, the planner takes"):
        p2p_curve(model(P2P_PIECES + 1))


def test_model_file_is_read_once_per_version(tmp_path, monkeypatch):
    import petacomm.model as machine
    from petacomm.xchg import cost

    path = tmp_path / "model.json"
    machine.save(_two_piece_model(), path)
    monkeypatch.setenv("PETACOMM_MODEL", str(path))
    reads = []
    real_load = machine.load
    monkeypatch.setattr(machine, "load", lambda p=None: reads.append(p) or real_load(p))
    first = cost.resolve_model(None)
    assert cost.resolve_model(None) is first and len(reads) == 1
    machine.save(_two_piece_model(), path)  # a new version of the file
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = cost.resolve_model(None)
    assert second is not first and len(reads) == 2
    assert cost.p2p_curve(second).alpha[0] == pytest.approx(0.44 * US)


def test_plan_options_follow_the_arguments_and_the_model_file(tmp_path, monkeypatch):
    """The Python binding derives a plan's options once per arguments and model version:
    a model file rewritten in place changes them, a refused argument stays refused when an
    equal one (1 == True) was accepted before, and every call gets a copy of its own."""
    import petacomm.model as machine
    from petacomm.errors import PetacommError
    from petacomm.model import MachineModel, OperationModel, Piece
    from petacomm.xchg.plan import _options

    def model(alpha_us):
        piece = Piece(0, 1 << 30, alpha_us * US, 1 / 5e9, 1.0, 5)
        return MachineModel({"pingpong": OperationModel("pingpong", 2, [piece])}, source="test")

    path = tmp_path / "model.json"
    machine.save(model(0.5), path)
    given = dict(strategy="auto", transport="p2p", chunk_keys=1, allgather_keys=65536,
                 hub_threshold=0, send_window=0, deterministic=False, autotune=0,
                 dtype=np.float64, k=3, model=str(path), size=4)  # fmt: skip
    first, curve = _options(**given)
    assert (
        first.cost.p2p_alpha == pytest.approx(0.5 * US) and curve.alpha[0] == first.cost.p2p_alpha
    )
    assert (first.strategy, first.transport, first.plan_k, first.chunk_keys) == (
        b"auto",
        b"p2p",
        3,
        1,
    )
    first.cost.p2p_alpha = 99.0  # a copy: the next call does not see it
    assert _options(**given)[0].cost.p2p_alpha == pytest.approx(0.5 * US)
    machine.save(model(2.0), path)  # rewritten in place: a new version
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert _options(**given)[0].cost.p2p_alpha == pytest.approx(2.0 * US)
    with pytest.raises(ValueError, match="chunk_keys: expected an integer, got True"):
        _options(**{**given, "chunk_keys": True})
    # Another dtype: other options; the same values for other arguments: other options.
    assert _options(**{**given, "dtype": np.float32})[0].plan_dtype != first.plan_dtype
    swapped = _options(**{**given, "chunk_keys": 65536, "allgather_keys": 1})[0]
    assert (swapped.chunk_keys, swapped.allgather_keys) == (65536, 1)
    assert (first.send_window, _options(**{**given, "send_window": 8})[0].send_window) == (0, 8)
    with pytest.raises(
        ValueError,
        match="send_window: must be from 0 to 2147483647 sends in flight, got 4294967296",
    ):
        _options(**{**given, "send_window": 2**32})
    # autotune: the library's bound (PETACOMM_MAX_REPS), refused here with its message; a
    # value beyond a C int reached the library wrapped (2**32 + 2 as 2, 2**31 as -2**31).
    assert _options(**{**given, "autotune": 1000000})[0].autotune == 1000000
    for autotune in (-1, 1000001, 2**31, 2**32 + 2):
        with pytest.raises(
            ValueError, match=rf"^autotune: must be in \[0, 1000000\], got {autotune}$"
        ):
            _options(**{**given, "autotune": autotune})
    # A model path that cannot be read is the model package's error (which the plan hands to
    # every rank), not an OSError of this rank's alone.
    with pytest.raises(PetacommError, match="machine model"):
        _options(**{**given, "model": str(path / "under-a-file.json")})
