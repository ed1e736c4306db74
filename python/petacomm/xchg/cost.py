"""Planner cost parameters from a machine model.

The native planner uses alpha-beta formulas (see docs/sparse-reduce.md). A
:class:`petacomm.model.MachineModel` predicts each collective on ``p`` ranks; two sizes give
the effective latency and per-byte cost at that ``p``, which are divided by the formula's
step and volume factors to give the per-step parameters the planner expects.
"""

from __future__ import annotations

import math

from petacomm.xchg._capi import CostParams, default_options

_SMALL = 8.0
_LARGE = float(1 << 20)


def _line(model, op: str, p: int) -> tuple[float, float]:
    t_small = model.predict(op, _SMALL, p)
    t_large = model.predict(op, _LARGE, p)
    beta = max((t_large - t_small) / (_LARGE - _SMALL), 0.0)
    alpha = max(t_small - beta * _SMALL, 0.0)
    return alpha, beta


def cost_params(model, p: int) -> CostParams:
    """CostParams for a plan on ``p`` ranks from ``model`` (collective terms need p >= 2)."""
    params = default_options().cost
    alpha, beta = model.alpha_beta("pingpong")
    params.p2p_alpha, params.p2p_beta = float(alpha), float(beta)
    if p < 2:
        return params
    steps = math.ceil(math.log2(p))
    alpha, beta = _line(model, "allreduce", p)
    params.allreduce_alpha = alpha / (2 * steps)
    params.allreduce_beta = beta / (2 * (p - 1) / p)
    alpha, beta = _line(model, "allgather", p)
    params.allgather_alpha = alpha / steps
    params.allgather_beta = beta / (p - 1)
    alpha, beta = _line(model, "alltoallv", p)
    params.alltoallv_alpha = alpha / (p - 1)
    params.alltoallv_beta = beta / (p - 1)
    return params


def resolve_model(model):
    """The given model, else the measured one if present, else the defaults (lazy import)."""
    if model is not None:
        return model
    from petacomm.model import load_or_default

    return load_or_default()
