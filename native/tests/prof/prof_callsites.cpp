// Call sites with known lines: tests/prof/test_callsites.py finds the lines by the SITE and
// CALLER markers of this file and checks the profile's call sites against them.
//
// Per rank: exchange() (one MPI_Sendrecv) is called 3 times from phase_a and 2 times from
// phase_b; post_and_wait() posts an MPI_Irecv and an MPI_Isend completed by MPI_Waitall (the
// non-blocking calls belong to where they were posted); reduce_sum<double> makes one
// MPI_Allreduce. Then MPI_Pcontrol(3) writes a snapshot, MPI_Pcontrol(4) resets, and
// phase_b runs once more: the final log holds only that.
#include <mpi.h>

namespace sites {

__attribute__((noinline)) void exchange(int rank, int size) {
  char out[16] = {0}, in[16];
  MPI_Sendrecv(out, 16, MPI_BYTE, (rank + 1) % size, 1, in, 16, MPI_BYTE,  // SITE:sendrecv
               (rank - 1 + size) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) void phase_a(int rank, int size) {
  for (int i = 0; i < 3; ++i) {
    exchange(rank, size);  // CALLER:a
  }
}

__attribute__((noinline)) void phase_b(int rank, int size) {
  for (int i = 0; i < 2; ++i) {
    exchange(rank, size);  // CALLER:b
  }
}

__attribute__((noinline)) void post_and_wait(int rank, int size) {
  char out[32] = {0}, in[32];
  MPI_Request reqs[2];
  MPI_Irecv(in, 32, MPI_BYTE, (rank - 1 + size) % size, 2, MPI_COMM_WORLD, &reqs[0]);  // SITE:irecv
  MPI_Isend(out, 32, MPI_BYTE, (rank + 1) % size, 2, MPI_COMM_WORLD, &reqs[1]);        // SITE:isend
  MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);  // SITE:waitall
}

template <typename T>
__attribute__((noinline)) T reduce_sum(T value) {
  T sum = 0;
  MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  // SITE:allreduce
  return sum;
}

}  // namespace sites

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  sites::phase_a(rank, size);
  sites::phase_b(rank, size);
  sites::post_and_wait(rank, size);
  sites::reduce_sum<double>(1.0);
  MPI_Pcontrol(3);  // snapshot
  MPI_Pcontrol(4);  // reset
  sites::phase_b(rank, size);
  MPI_Finalize();
  return 0;
}
