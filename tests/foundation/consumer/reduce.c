/* Consumer of an installed petacomm (C): a sum of two components per key over all ranks,
 * checked against a plain loop over every rank's keys and values. */
#include <mpi.h>
#include <petacomm/xchg.h>
#include <stdio.h>
#include <string.h>

enum { N = 5, K = 2 };

/* Rank r of p holds keys 7 (twice), its own, its right neighbour's, and a private one. */
static void keys_of(int r, int p, int64_t keys[N]) {
  const int64_t k[N] = {7, 1000 + r, 1000 + (r + 1) % p, 7, 20 + 3 * r};
  memcpy(keys, k, sizeof k);
}
/* Signs alternate: reinterpreting the bits as another type cannot give the same sums. */
static double value_of(int r, int i, int c) { return (r + 1) * (i % 2 ? -10 : 10) + i + 100 * c; }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int64_t keys[N];
  double values[N][K];
  keys_of(rank, size, keys);
  for (int i = 0; i < N; i++)
    for (int c = 0; c < K; c++) values[i][c] = value_of(rank, i, c);

  petacomm_xchg_plan plan = NULL;
  const char *strategy = "?";
  char describe[64];
  size_t needed = 0;
  if (petacomm_xchg_plan_create(MPI_COMM_WORLD, keys, N, NULL, &plan) != PETACOMM_SUCCESS ||
      petacomm_xchg_execute(plan, MPI_COMM_WORLD, values, N, K, PETACOMM_XCHG_FLOAT64,
                            PETACOMM_XCHG_SUM) != PETACOMM_SUCCESS ||
      petacomm_xchg_plan_strategy(plan, &strategy) != PETACOMM_SUCCESS ||
      petacomm_xchg_plan_describe(plan, describe, sizeof describe, &needed) != PETACOMM_SUCCESS) {
    fprintf(stderr, "reduce_c: %s\n", petacomm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  int errors = needed < 2 || describe[0] != '{';
  double checksum = 0;
  for (int i = 0; i < N; i++) {
    for (int c = 0; c < K; c++) {
      double expect = 0; /* every rank's contributions to this key */
      for (int q = 0; q < size; q++) {
        int64_t other[N];
        keys_of(q, size, other);
        for (int j = 0; j < N; j++)
          if (other[j] == keys[i]) expect += value_of(q, j, c);
      }
      errors += values[i][c] != expect;
      checksum += values[i][c];
    }
  }
  printf("reduce_c rank %d of %d: strategy %s key7 %.0f checksum %.0f errors %d\n", rank, size,
         strategy, values[0][0], checksum, errors);
  petacomm_xchg_plan_free(&plan);
  MPI_Finalize();
  return errors != 0;
}
