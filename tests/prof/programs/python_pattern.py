"""Known communication from mpi4py, with petacomm regions (context manager and decorator).

Per rank r of P (right = r+1, left = r-1, cyclic):
  region "py_ring": 3 x Sendrecv of 50 doubles (400 B) to right
  region "py_collectives" (entered twice): Allreduce in place of 4 doubles (32 B),
    Bcast of 3 int32 (12 B) from rank 0
  Irecv (ANY_SOURCE, 16 B, from left) + Isend (16 B, to right) + one Waitall
  MPI.Pcontrol(1): mpi4py's nameless call must change nothing
"""

import numpy as np
from mpi4py import MPI

from petacomm.profile import region

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
failures = 0

with region("py_ring"):
    for it in range(3):
        out = np.full(50, rank * 10 + it, dtype="f8")
        got = np.empty(50, dtype="f8")
        comm.Sendrecv(out, dest=right, sendtag=1, recvbuf=got, source=left, recvtag=1)
        failures += int(got[7] != left * 10 + it)


@region("py_collectives")
def collectives():
    x = np.ones(4)
    comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
    v = np.full(3, rank, dtype="i4")
    comm.Bcast(v, root=0)
    return int(x[0] != size) + int(v[2] != 0)


failures += collectives() + collectives()
inbox, outbox = np.empty(2), np.full(2, float(rank))
requests = [comm.Irecv(inbox, source=MPI.ANY_SOURCE, tag=2), comm.Isend(outbox, dest=right, tag=2)]
MPI.Request.Waitall(requests)
failures += int(inbox[1] != left)
MPI.Pcontrol(1)
if rank == 0:
    print(f"python_pattern: {size} ranks, {failures} failures")
raise SystemExit(1 if failures else 0)
