"""Alpha-beta machine model: fits (``fit``), collective cost formulas (``collectives``)
and the versioned model file that planners read (``machine``).

The names below are loaded on first use: importing ``petacomm.model`` (as every
``petacomm`` command's start does, for ``netbench``) must not load numpy.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "SCHEMA_VERSION": "petacomm.model.machine",
    "MachineModel": "petacomm.model.machine",
    "OperationModel": "petacomm.model.machine",
    "Piece": "petacomm.model.machine",
    "Point": "petacomm.model.machine",
    "default_model": "petacomm.model.machine",
    "default_model_path": "petacomm.model.machine",
    "load": "petacomm.model.machine",
    "load_or_default": "petacomm.model.machine",
    "save": "petacomm.model.machine",
    "validate": "petacomm.model.machine",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'petacomm.model' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(module), name)  # once per name
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
