/* Communicators created and freed over and over (their handle values are reused), some of
 * them while recording is paused: partners must always be those of the communicator in use.
 *
 * Iteration it = 0..5 on every rank r of P: split MPI_COMM_WORLD into one communicator
 * ordered by rank (it even) or by reverse rank (it odd); MPI_Sendrecv of 4*(it+1) bytes to
 * the next rank of that communicator; free it. From it = 3 on, the split and the free happen
 * under MPI_Pcontrol(0) (not recorded). The partner of the send, in world ranks, is
 * (r+1)%P for even it and (r-1+P)%P for odd it (tests/prof/test_requests.py). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, failures = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int it = 0; it < 6; ++it) {
    const int paused = it >= 3;
    MPI_Comm c;
    if (paused) MPI_Pcontrol(0);
    MPI_Comm_split(MPI_COMM_WORLD, 0, it % 2 == 0 ? rank : size - rank, &c);
    if (paused) MPI_Pcontrol(2);
    int crank, csize;
    MPI_Comm_rank(c, &crank);
    MPI_Comm_size(c, &csize);
    char out[24] = {0}, in[24] = {0};
    out[0] = (char)rank;
    MPI_Sendrecv(out, 4 * (it + 1), MPI_BYTE, (crank + 1) % csize, it, in, 4 * (it + 1), MPI_BYTE,
                 (crank - 1 + csize) % csize, it, c, MPI_STATUS_IGNORE);
    const int from = it % 2 == 0 ? (rank - 1 + size) % size : (rank + 1) % size;
    if (in[0] != (char)from) ++failures;
    if (paused) MPI_Pcontrol(0);
    MPI_Comm_free(&c);
    if (paused) MPI_Pcontrol(2);
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) printf("prof_comms: %d ranks, %d failures\n", size, all);
  return all ? 1 : 0;
}
