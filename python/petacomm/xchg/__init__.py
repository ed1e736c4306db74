"""Sparse key/value reduction (the MADmap communication pattern): plan once, execute many
times. See docs/sparse-reduce.md.

Importing this package does not import mpi4py or initialise MPI; pass any mpi4py
communicator to :class:`SparseReducePlan`. Strategy names come from the native registry:
``strategy_names()`` (petacomm.xchg.registry) and ``STRATEGIES`` are read from it when
first asked for.
"""

from petacomm.xchg.plan import TRANSPORTS, SparseReducePlan

__all__ = ["STRATEGIES", "TRANSPORTS", "SparseReducePlan", "strategy_names"]


def __getattr__(name: str):
    if name not in ("strategy_names", "STRATEGIES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    registry = importlib.import_module("petacomm.xchg.registry")
    return registry.strategy_names if name == "strategy_names" else registry.strategy_names()
