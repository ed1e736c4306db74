"""Standard alpha-beta cost formulas of the collectives, in one place for every planner.

Each operation's time is modelled as ``t = alpha * L(p) + beta * n * W(p)`` where ``n``
is the operation's message size in bytes (its *size convention*, below), ``alpha`` the
per-message latency and ``beta`` the per-byte time of one point-to-point transfer, and
``L``/``W`` the latency and bandwidth coefficients of the algorithm the MPI library
typically uses at that scale:

================================  ====================  ==================  ================
operation (size convention n)     algorithm             L(p)                W(p)
================================  ====================  ==================  ================
pingpong (message)                one message           1                   1
allreduce (whole vector)          Rabenseifner          2 log2 p            2 (p-1)/p
allgather (one rank's block)      ring                  p-1                 p-1
alltoall, alltoallv (one block)   pairwise exchange     p-1                 p-1
bcast (whole vector)              scatter + allgather   log2 p + p-1        2 (p-1)/p
reduce_scatter_block (vector)     recursive halving     log2 p              (p-1)/p
================================  ====================  ==================  ================

Fitting a measured line ``t = A + B n`` at ``p`` ranks gives the effective parameters
``alpha = A / L(p)`` and ``beta = B / W(p)``, which then predict other ``p``.
"""

from __future__ import annotations

import math

from petacomm.errors import PetacommError

SIZE_CONVENTIONS = {
    "pingpong": "bytes of the message (one-way time)",
    "allreduce": "bytes of the whole vector on each rank",
    "allgather": "bytes each rank contributes",
    "alltoall": "bytes sent to each destination",
    "alltoallv": "bytes sent to each destination",
    "bcast": "bytes of the broadcast vector",
    "reduce_scatter_block": "bytes of the whole vector (each rank keeps 1/p)",
}

ALGORITHMS = {
    "pingpong": "one message",
    "allreduce": "Rabenseifner (reduce-scatter + allgather)",
    "allgather": "ring",
    "alltoall": "pairwise exchange",
    "alltoallv": "pairwise exchange",
    "bcast": "scatter + ring allgather (van de Geijn)",
    "reduce_scatter_block": "recursive halving",
}


def base_operation(op: str) -> str:
    """``pingpong.intra`` and ``pingpong.inter`` share the ``pingpong`` formula."""
    return op.split(".", 1)[0]


def coefficients(op: str, p: int) -> tuple[float, float]:
    """(L(p), W(p)) for ``op`` on ``p`` ranks; raises PetacommError for unknown input."""
    name = base_operation(op)
    if name not in SIZE_CONVENTIONS:
        known = ", ".join(sorted(SIZE_CONVENTIONS))
        raise PetacommError(f"op: unknown operation '{op}' (known: {known})")
    if not isinstance(p, int) or p < 1:
        raise PetacommError(f"p: must be a positive integer, got {p!r}")
    if name == "pingpong":
        return 1.0, 1.0
    if p == 1:
        return 0.0, 0.0
    log_p = math.log2(p)
    frac = (p - 1) / p
    return {
        "allreduce": (2 * log_p, 2 * frac),
        "allgather": (p - 1.0, p - 1.0),
        "alltoall": (p - 1.0, p - 1.0),
        "alltoallv": (p - 1.0, p - 1.0),
        "bcast": (log_p + p - 1.0, 2 * frac),
        "reduce_scatter_block": (log_p, frac),
    }[name]


def predict(op: str, nbytes: float, p: int, alpha: float, beta: float) -> float:
    """Seconds for ``op`` moving ``nbytes`` on ``p`` ranks with point-to-point alpha/beta."""
    if nbytes < 0:
        raise PetacommError(f"nbytes: must be non-negative, got {nbytes}")
    latency, bandwidth = coefficients(op, p)
    return alpha * latency + beta * nbytes * bandwidth
