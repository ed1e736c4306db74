/* Transpose a 6 x 4 complex array distributed by rows, check it, transpose it back. */
#include <complex.h>
#include <mpi.h>
#include <petacomm/transpose.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int64_t n0 = 6, n1 = 4;
  petacomm_transpose_plan plan;
  if (petacomm_transpose_plan_create(MPI_COMM_WORLD, n0, n1, 1, PETACOMM_TRANSPOSE_COMPLEX128, NULL,
                                     &plan) != PETACOMM_SUCCESS) {
    fprintf(stderr, "plan: %s\n", petacomm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  petacomm_transpose_local l;
  petacomm_transpose_plan_local(plan, &l);
  double complex *a = malloc(sizeof(double complex) * (l.alloc_elements + 1));
  double complex *b = malloc(sizeof(double complex) * (l.alloc_elements + 1));
  for (int64_t i = 0; i < l.rows_in; ++i) /* element (i, j) = i + j I, global indices */
    for (int64_t j = 0; j < n1; ++j) a[i * n1 + j] = (double)(l.row0_in + i) + j * I;
  petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, a, b);
  int wrong = 0; /* b holds rows j of the transpose: b[j][i] = i + j I */
  for (int64_t j = 0; j < l.rows_out; ++j)
    for (int64_t i = 0; i < n0; ++i) wrong += b[j * n0 + i] != (double)i + (l.row0_out + j) * I;
  petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_BACKWARD, b, b); /* in place */
  for (int64_t k = 0; k < l.rows_in * n1; ++k) wrong += b[k] != a[k];
  const char *strategy;
  petacomm_transpose_plan_strategy(plan, &strategy);
  int rank, total;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("strategy %s: %d wrong elements\n", strategy, total);
  petacomm_transpose_plan_free(&plan);
  free(a);
  free(b);
  MPI_Finalize();
  return total != 0;
}
