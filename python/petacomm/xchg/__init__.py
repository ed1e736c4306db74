"""Sparse key/value reduction (the MADmap communication pattern): plan once, execute many
times. See docs/sparse-reduce.md.

Importing this package does not import mpi4py or initialise MPI; pass any mpi4py
communicator to :class:`SparseReducePlan`. Strategy names come from the native registry
(:func:`strategy_names`); ``STRATEGIES`` is read from it on first use.
"""

from petacomm.xchg.plan import TRANSPORTS, SparseReducePlan, strategy_names

__all__ = ["STRATEGIES", "TRANSPORTS", "SparseReducePlan", "strategy_names"]


def __getattr__(name: str):
    if name == "STRATEGIES":
        return strategy_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
