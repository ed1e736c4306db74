/* The C example of docs/sparse-reduce.md: sum I, Q, U per pixel over all ranks. */
#include <mpi.h>
#include <petacomm/xchg.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int64_t pixels[4] = {7, 1000 + rank, 7, 42}; /* unsorted, repeated */
  double iqu[4][3] = {{1, 0, 0}, {1, 1, 1}, {1, 0, 0}, {0, 2, 0}};
  petacomm_xchg_plan plan;
  if (petacomm_xchg_plan_create(MPI_COMM_WORLD, pixels, 4, NULL, &plan) != PETACOMM_SUCCESS ||
      petacomm_xchg_execute(plan, MPI_COMM_WORLD, iqu, 4, 3, PETACOMM_XCHG_FLOAT64,
                            PETACOMM_XCHG_SUM) != PETACOMM_SUCCESS) {
    fprintf(stderr, "xchg: %s\n", petacomm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const char *strategy;
  petacomm_xchg_plan_strategy(plan, &strategy);
  if (rank == 0)
    printf("pixel 7: I = %g (expect %d), Q of 42 = %g, via %s\n", iqu[0][0], 2 * size, iqu[3][1],
           strategy);
  petacomm_xchg_plan_free(&plan);
  MPI_Finalize();
  return iqu[0][0] == 2.0 * size && iqu[2][0] == 2.0 * size && iqu[3][1] == 2.0 * size ? 0 : 1;
}
