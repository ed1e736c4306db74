/* Programs that never reach MPI_Finalize, for the partial-log tests.
 *   prof_abort abort       every rank does 3 MPI_Allreduce, then rank 0 calls MPI_Abort
 *                          while the others wait in MPI_Recv (the launcher kills them)
 *   prof_abort nofinalize  every rank does 3 MPI_Allreduce and returns without
 *                          MPI_Finalize
 *   prof_abort hang        every rank does 3 MPI_Allreduce and waits forever in MPI_Recv
 *                          (the test kills it with a signal)
 *   prof_abort segv        every rank does 3 MPI_Allreduce, then rank 1 (0 when alone)
 *                          dereferences a null pointer while the others wait in MPI_Recv */
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
  if (strcmp(mode, "segv") == 0 && rank == (size > 1 ? 1 : 0)) {
    volatile int *null = NULL;
    *null = 1;
  }
  if (strcmp(mode, "abort") == 0 && rank == 0) MPI_Abort(MPI_COMM_WORLD, 3);
  int x;
  MPI_Recv(&x, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
