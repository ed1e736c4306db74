"""Sparse key/value reduction (the MADmap communication pattern): plan once, execute many
times. See docs/sparse-reduce.md.

Importing this package does not import mpi4py or initialise MPI; pass any mpi4py
communicator to :class:`SparseReducePlan`.
"""

from petacomm.xchg.plan import STRATEGIES, TRANSPORTS, SparseReducePlan

__all__ = ["STRATEGIES", "TRANSPORTS", "SparseReducePlan"]
