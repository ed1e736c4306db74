"""MPI worker: PETACOMM_NODE_SIZE splits one machine's ranks into virtual nodes; two-level
sees them and transposes correctly. Prints 'nodes <count> ok'."""

import sys

import numpy as np
from mpi4py import MPI

import petacomm

comm = MPI.COMM_WORLD
full = np.arange(12 * 10, dtype=np.float64).reshape(12, 10)
plan = petacomm.TransposePlan(comm, full.shape, np.float64, strategy="two-level")
rows, cols = plan.local_input_shape[0], plan.local_output_shape[0]
r0, c0 = plan.local_input_offset, plan.local_output_offset
out = plan.execute(full[r0 : r0 + rows].copy())
assert np.array_equal(out, full.T[c0 : c0 + cols]), out
info = plan.describe()["transpose"]
print(f"nodes {info['nodes']} ranks_per_node {info['ranks_per_node']} ok", flush=True)
sys.exit(0)
