/* Programs that never reach MPI_Finalize, for the partial-log tests.
 *   prof_abort abort       every rank does 3 MPI_Allreduce, then rank 0 calls MPI_Abort
 *                          while the others wait in MPI_Recv (the launcher kills them)
 *   prof_abort nofinalize  every rank does 3 MPI_Allreduce and returns without
 *                          MPI_Finalize
 *   prof_abort hang        every rank does 3 MPI_Allreduce and waits forever in MPI_Recv
 *                          (the test kills it with a signal) */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *mode = argc > 1 ? argv[1] : "abort";
  MPI_Pcontrol(1, "work");
  for (int i = 0; i < 3; ++i) {
    int v = rank, s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Pcontrol(-1, "work");
  if (strcmp(mode, "nofinalize") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
  }
  if (strcmp(mode, "hang") == 0) {
    printf("prof_abort: rank %d waiting\n", rank);
    fflush(stdout);
    int x;
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) MPI_Abort(MPI_COMM_WORLD, 3);
  int x;
  MPI_Recv(&x, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
