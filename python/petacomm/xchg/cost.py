"""Planner cost parameters from a machine model.

The native planner uses alpha-beta formulas (see docs/sparse-reduce.md). Point-to-point
messages are priced by size: the ping-pong fit's pieces become a
``petacomm_xchg_p2p_curve`` (each piece's alpha and beta from
:meth:`MachineModel.alpha_beta` at the piece's sizes), so the planner takes the latency of
an 8-byte message from the small-message piece rather than the 1 MiB one. A
:class:`petacomm.model.MachineModel` predicts each collective on ``p`` ranks; two sizes give
the effective latency and per-byte cost at that ``p``, which are divided by the formula's
step and volume factors to give the per-step parameters the planner expects.

Reading a model file (JSON parse and schema validation, a few milliseconds) happens once per
process and file version: :func:`load_model` caches by file (device, inode), modification
time and size. Deriving the planner's parameters from a model (tens of microseconds of
Python, as much as the rest of a small plan's creation) happens once per model content and
rank count: :func:`planner_costs` caches by the model's fitted pieces, so a model changed in
place is seen, and a model object equal to another shares its entry.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from petacomm.xchg._capi import P2P_PIECES, CostParams, P2PCurve, default_options

_SMALL = 8.0
_LARGE = float(1 << 20)


def _line(model, op: str, p: int) -> tuple[float, float]:
    t_small = model.predict(op, _SMALL, p)
    t_large = model.predict(op, _LARGE, p)
    beta = max((t_large - t_small) / (_LARGE - _SMALL), 0.0)
    alpha = max(t_small - beta * _SMALL, 0.0)
    return alpha, beta


def cost_params(model, p: int) -> CostParams:
    """CostParams for a plan on ``p`` ranks from ``model`` (collective terms need p >= 2).
    p2p_alpha/p2p_beta are the small-message piece's; :func:`p2p_curve` has every piece."""
    params = default_options().cost
    alpha, beta = model.alpha_beta("pingpong", _SMALL)
    params.p2p_alpha, params.p2p_beta = float(alpha), float(beta)
    if p < 2:
        return params
    steps = math.ceil(math.log2(p))
    alpha, beta = _line(model, "allreduce", p)
    params.allreduce_alpha = alpha / (2 * steps)
    params.allreduce_beta = beta / (2 * (p - 1) / p)
    if model.operations.get("allreduce") is None:
        # Derived from the ping-pong, the allreduce has no arithmetic; a measured one
        # includes it. Rabenseifner's reduce-scatter combines (p-1)/p of the vector per rank,
        # reading two operands and writing one: 3 (p-1)/p local passes per byte, which is
        # 1.5 local_beta per byte of the formula's 2 (p-1)/p volume.
        params.allreduce_beta += 1.5 * params.local_beta
    alpha, beta = _line(model, "allgather", p)
    params.allgather_alpha = alpha / steps
    params.allgather_beta = beta / (p - 1)
    alpha, beta = _line(model, "alltoallv", p)
    params.alltoallv_alpha = alpha / (p - 1)
    params.alltoallv_beta = beta / (p - 1)
    return params


def p2p_curve(model) -> P2PCurve:
    """The point-to-point cost by message size: one piece per piece of the model's ping-pong
    fit (the default model has one), alpha and beta as ``model.alpha_beta`` gives them at
    that piece's sizes."""
    name = model.point_to_point_operation()
    starts = [0.0]
    if name is not None:
        starts = sorted({float(piece.from_bytes) for piece in model.operations[name].pieces})
    if len(starts) > P2P_PIECES:
        from petacomm.errors import PetacommError

        raise PetacommError(
            f"machine model: the {name} fit has {len(starts)} pieces, the planner takes at "
            f"most {P2P_PIECES}"
        )
    curve = P2PCurve()
    curve.pieces = len(starts)
    for i, start in enumerate(starts):
        alpha, beta = model.alpha_beta("pingpong", start)
        curve.from_bytes[i] = start
        curve.alpha[i], curve.beta[i] = float(alpha), float(beta)
    return curve


def _fingerprint(model) -> tuple:
    """What the planner's parameters depend on: every operation's name, ranks and fitted
    pieces (frozen, hashable)."""
    return tuple((name, op.p, tuple(op.pieces)) for name, op in model.operations.items())


_PLANNER_COSTS: dict[tuple, tuple[CostParams, P2PCurve]] = {}
_PLANNER_COSTS_MAX = 64


def planner_costs(model, p: int) -> tuple[CostParams, P2PCurve]:
    """:func:`cost_params` and :func:`p2p_curve` of ``model`` for ``p`` ranks, computed once
    per model content and ``p`` (fresh copies: the caller may change them)."""
    key = (_fingerprint(model), p)
    hit = _PLANNER_COSTS.get(key)
    if hit is None:
        if len(_PLANNER_COSTS) >= _PLANNER_COSTS_MAX:
            _PLANNER_COSTS.clear()
        hit = _PLANNER_COSTS[key] = (cost_params(model, p), p2p_curve(model))
    return CostParams.from_buffer_copy(hit[0]), P2PCurve.from_buffer_copy(hit[1])


_LOADED: dict[tuple, object] = {}
_LOADED_MAX = 64
_DEFAULT_PATH: dict[str | None, Path] = {}


def _default_model_path() -> Path:
    """petacomm.model.default_model_path, looked up once per value of $PETACOMM_MODEL."""
    override = os.environ.get("PETACOMM_MODEL")
    path = _DEFAULT_PATH.get(override)
    if path is None:
        from petacomm.model import default_model_path

        path = _DEFAULT_PATH[override] = default_model_path()
    return path


def _file_version(file) -> tuple | None:
    """(device, inode, modification time, size) of a model file, from one stat: the file
    (whatever path names it) and its version. None when it does not exist."""
    try:
        info = os.stat(file)
    except (OSError, ValueError):  # load() names what is wrong (missing, unreadable, ...)
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


def load_model(path: str | os.PathLike | None = None):
    """petacomm.model.load_or_default, read once per process and file version (device,
    inode, modification time, size); the defaults when no path is given and netbench wrote
    none."""
    from petacomm.model import default_model, load

    file = path if path is not None else _default_model_path()
    key = _file_version(file)
    if key is None:
        if path is not None or os.path.lexists(file):
            # raises the model package's error: not found, unreadable (None: names the variable)
            return load(None if path is None else Path(file))
        key = ("",)
        if key not in _LOADED:
            _LOADED[key] = default_model()
        return _LOADED[key]
    model = _LOADED.get(key)
    if model is None:
        model = load(None if path is None else Path(file))
        for stale in [k for k in _LOADED if k[:2] == key[:2]]:  # the file's older versions
            del _LOADED[stale]
        if len(_LOADED) >= _LOADED_MAX:  # files replaced by rename leave their old inodes'
            _LOADED.clear()
        _LOADED[key] = model
    return model


def model_version(model) -> tuple | None:
    """What the planner's parameters depend on, hashable: for a path or None, the file's
    version (one stat; the defaults when netbench wrote none), for a MachineModel its fitted
    content; None when that cannot be told (a missing file, another object)."""
    if model is None or isinstance(model, str | os.PathLike):
        file = model if model is not None else _default_model_path()
        version = _file_version(file)
        return version if version is not None or model is not None else ("defaults", str(file))
    from petacomm.model import MachineModel

    return ("model", _fingerprint(model)) if isinstance(model, MachineModel) else None


def resolve_model(model):
    """A MachineModel as given; a path: that file (cached); None: the measured model if
    netbench wrote one, else the defaults (cached)."""
    if model is None or isinstance(model, str | os.PathLike):
        return load_model(model)
    from petacomm.model import MachineModel

    if not isinstance(model, MachineModel):
        raise ValueError(
            f"model: expected a petacomm.model.MachineModel or a model file path, got "
            f"{type(model).__name__}"
        )
    return model
