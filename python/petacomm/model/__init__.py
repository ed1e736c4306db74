"""Alpha-beta machine model: fits (``fit``), collective cost formulas (``collectives``)
and the versioned model file that planners read (``machine``)."""

from petacomm.model.machine import (
    SCHEMA_VERSION,
    MachineModel,
    OperationModel,
    Piece,
    Point,
    default_model,
    default_model_path,
    load,
    load_or_default,
    save,
    validate,
)

__all__ = [
    "SCHEMA_VERSION",
    "MachineModel",
    "OperationModel",
    "Piece",
    "Point",
    "default_model",
    "default_model_path",
    "load",
    "load_or_default",
    "save",
    "validate",
]
