"""Every collective formula of petacomm.model against an independent derivation.

Two references, neither taken from the code under test:

* for p a power of two, the algorithm's schedule is played step by step, counting the
  messages and bytes on the critical path (``schedule``);
* for every p (3, 5, 6, 7, 12 included), the closed forms of Thakur, Rabenseifner and Gropp
  (2005) as written below, with log2 p continuous as docs/netbench.md documents.

Predictions are then checked through MachineModel: with point-to-point parameters only, and
through the effective parameters of a collective measured at another rank count.
"""

import math

import pytest

from petacomm.errors import PetacommError
from petacomm.model import collectives
from petacomm.model.machine import MachineModel, OperationModel, Piece

ALPHA, BETA = 3e-6, 2e-10  # seconds per message, seconds per byte


def schedule(op: str, n: float, p: int) -> tuple[int, float]:
    """(messages, bytes) on the critical path of op's algorithm on p = 2^k ranks."""
    steps = int(math.log2(p))
    if op == "pingpong":
        return 1, n
    if op in ("allgather", "alltoall", "alltoallv"):
        # ring allgather / pairwise exchange: p-1 rounds, one block of n bytes each
        return sum(1 for _ in range(p - 1)), sum(n for _ in range(p - 1))
    messages, volume = 0, 0.0
    if op in ("allreduce", "reduce_scatter_block"):
        part = n
        for _ in range(steps):  # recursive halving: send half of what is left
            part /= 2
            messages, volume = messages + 1, volume + part
        if op == "allreduce":
            for _ in range(steps):  # recursive doubling allgather: the same sizes back up
                messages, volume = messages + 1, volume + part
                part *= 2
        return messages, volume
    if op == "bcast":
        part = n
        for _ in range(steps):  # binomial scatter: the root's half, quarter, ...
            part /= 2
            messages, volume = messages + 1, volume + part
        for _ in range(p - 1):  # ring allgather of the p pieces of n/p bytes
            messages, volume = messages + 1, volume + n / p
        return messages, volume
    raise AssertionError(op)


def closed_form(op: str, n: float, p: int) -> float:
    lg = math.log2(p)
    return {
        "pingpong": ALPHA + n * BETA,
        "allgather": (p - 1) * (ALPHA + n * BETA),
        "alltoall": (p - 1) * (ALPHA + n * BETA),
        "alltoallv": (p - 1) * (ALPHA + n * BETA),
        "allreduce": 2 * lg * ALPHA + 2 * (p - 1) / p * n * BETA,
        "bcast": (lg + p - 1) * ALPHA + 2 * (p - 1) / p * n * BETA,
        "reduce_scatter_block": lg * ALPHA + (p - 1) / p * n * BETA,
    }[op]


OPERATIONS = sorted(collectives.SIZE_CONVENTIONS)


def point_to_point_model() -> MachineModel:
    piece = Piece(0, 1 << 40, ALPHA, BETA, 1.0, 10)
    return MachineModel({"pingpong.inter": OperationModel("pingpong.inter", 2, [piece])})


def test_every_operation_has_a_reference():
    assert set(OPERATIONS) == {
        "pingpong",
        "allgather",
        "alltoall",
        "alltoallv",
        "allreduce",
        "bcast",
        "reduce_scatter_block",
    }


@pytest.mark.parametrize("op", OPERATIONS)
@pytest.mark.parametrize("p", [2, 4, 8, 64])
@pytest.mark.parametrize("n", [8, 4096, 3 << 20])
def test_formula_equals_the_played_schedule(op, p, n):
    messages, volume = schedule(op, n, p)
    assert collectives.predict(op, n, p, ALPHA, BETA) == pytest.approx(
        messages * ALPHA + volume * BETA, rel=1e-12
    )
    assert point_to_point_model().predict(op, n, p) == pytest.approx(
        messages * ALPHA + volume * BETA, rel=1e-12
    )


@pytest.mark.parametrize("op", OPERATIONS)
@pytest.mark.parametrize("p", [2, 3, 5, 6, 7, 12, 1000])
@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_formula_equals_the_closed_form_for_any_p(op, p, n):
    assert collectives.predict(op, n, p, ALPHA, BETA) == pytest.approx(
        closed_form(op, n, p), rel=1e-12
    )
    assert point_to_point_model().predict(op, n, p) == pytest.approx(
        closed_form(op, n, p), rel=1e-12
    )


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op != "pingpong"])
def test_one_rank_costs_nothing(op):
    assert collectives.predict(op, 1 << 20, 1, ALPHA, BETA) == 0


def test_a_ping_pong_is_one_message_whatever_p():
    # p does not enter a ping-pong: at p = 1 (where every collective is free) it is still
    # one message of n bytes, alpha + n beta.
    for p in (1, 2, 7):
        assert collectives.predict("pingpong", 1000, p, ALPHA, BETA) == pytest.approx(
            ALPHA + 1000 * BETA, rel=1e-12
        )


@pytest.mark.parametrize("p", [2.0, 2.5, "4", 0, -3])
def test_a_rank_count_that_is_not_a_positive_integer_is_refused(p):
    # 2.0 included: a rank count is a count, and log2 of 2.5 ranks has no algorithm behind it.
    with pytest.raises(PetacommError, match="p: must be a positive integer"):
        collectives.coefficients("allreduce", p)


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op != "pingpong"])
@pytest.mark.parametrize("measured_p, p", [(4, 7), (6, 16), (3, 3)])
def test_a_collective_measured_at_one_p_predicts_another(op, measured_p, p):
    # A line t = A + B n measured at p0 ranks: the fit itself at p0, and elsewhere the
    # effective point-to-point parameters A / L(p0), B / W(p0) put into the formula at p.
    # L and W at p0 come from the closed form, not from the code under test.
    a, b = 40e-6, 5e-9
    latency_p0 = (closed_form(op, 0, measured_p)) / ALPHA
    bandwidth_p0 = (closed_form(op, 1.0, measured_p) - closed_form(op, 0, measured_p)) / BETA
    alpha, beta = a / latency_p0, b / bandwidth_p0
    model = MachineModel(
        {
            "pingpong.inter": OperationModel(
                "pingpong.inter", 2, [Piece(0, 1 << 40, 1.0, 1.0, 1.0, 5)]
            ),
            op: OperationModel(op, measured_p, [Piece(0, 1 << 40, a, b, 1.0, 5)]),
        }
    )
    n = 12345
    if p == measured_p:
        expected = a + b * n
    else:
        lg = math.log2(p)
        steps, volume = {
            "allgather": (p - 1, (p - 1) * n),
            "alltoall": (p - 1, (p - 1) * n),
            "alltoallv": (p - 1, (p - 1) * n),
            "allreduce": (2 * lg, 2 * (p - 1) / p * n),
            "bcast": (lg + p - 1, 2 * (p - 1) / p * n),
            "reduce_scatter_block": (lg, (p - 1) / p * n),
        }[op]
        expected = alpha * steps + beta * volume
    assert model.predict(op, n, p) == pytest.approx(expected, rel=1e-12)
