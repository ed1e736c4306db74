/* petacomm-transpose-bench: time of one forward slab transpose of an N0 x N1 float64 array
 * per strategy, for `petacomm simulate transpose` (built with smpicc in an SMPI build tree it
 * reports SimGrid's simulated time; any other MPI runs it too).
 * argv: N0 N1 REPETITIONS STRATEGIES (comma-separated registered names or "auto").
 * Rank 0 prints one line per strategy: TRANSPOSESMPI {"strategy", "chosen" (what the plan
 * runs: the planner's pick for "auto"), "seconds" (median over the repetitions after a
 * warm-up one, each timed by bench_operation_seconds), "bytes" (the whole array), "errors"
 * (elements of the last result that differ from the transposed input, summed over ranks: 0)}. */
#include <limits.h>
#include <mpi.h>
#include <petacomm/transpose.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_driver.h"

static void fail(const char *what) { bench_fail("petacomm-transpose-bench", what); }

static void run_strategy(const char *name, int64_t n0, int64_t n1, int reps, int rank) {
  petacomm_transpose_options o;
  petacomm_transpose_options_default(&o);
  o.strategy = name;
  petacomm_transpose_plan plan = NULL;
  if (petacomm_transpose_plan_create(MPI_COMM_WORLD, n0, n1, 1, PETACOMM_TRANSPOSE_FLOAT64, &o,
                                     &plan) != PETACOMM_SUCCESS)
    fail(name);
  petacomm_transpose_local local;
  if (petacomm_transpose_plan_local(plan, &local) != PETACOMM_SUCCESS) fail("plan_local");
  const size_t in_n = (size_t)(local.rows_in * n1), out_n = (size_t)(local.rows_out * n0);
  double *in = malloc(sizeof(double) * (in_n ? in_n : 1));
  double *out = malloc(sizeof(double) * (out_n ? out_n : 1));
  double *times = malloc(sizeof(double) * (size_t)(reps + 1));
  if (!in || !out || !times) MPI_Abort(MPI_COMM_WORLD, 2);
  /* Element (i, j) holds i * n1 + j, exact in a double for the sizes used here. */
  for (int64_t i = 0; i < local.rows_in; ++i)
    for (int64_t j = 0; j < n1; ++j) in[i * n1 + j] = (double)((local.row0_in + i) * n1 + j);
  for (int rep = 0; rep <= reps; ++rep) { /* execution 0 warms up and is dropped */
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, in, out) != PETACOMM_SUCCESS)
      fail(name);
    times[rep] = bench_operation_seconds(t0, MPI_Wtime());
  }
  long long wrong = 0, total = 0;
  for (int64_t i = 0; i < local.rows_out; ++i) /* out (i, j) = in (j, i) */
    for (int64_t j = 0; j < n0; ++j)
      wrong += out[i * n0 + j] != (double)(j * n1 + local.row0_out + i);
  /* Allreduce: SMPI 3.32's MPI_Reduce (ompi binary tree) fails on one rank. */
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  const char *chosen = "";
  if (petacomm_transpose_plan_strategy(plan, &chosen) != PETACOMM_SUCCESS) fail("plan_strategy");
  const double median = bench_median_after_warmup(times, reps);
  if (rank == 0)
    printf(
        "TRANSPOSESMPI {\"strategy\": \"%s\", \"chosen\": \"%s\", \"seconds\": %.9g, "
        "\"bytes\": %lld, \"errors\": %lld}\n",
        name, chosen, median, (long long)(n0 * n1 * 8), total);
  fflush(stdout);
  petacomm_transpose_plan_free(&plan);
  free(times);
  free(out);
  free(in);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long long n0 = argc == 5 ? bench_whole_number(argv[1], 1, LLONG_MAX) : -1;
  const long long n1 = argc == 5 ? bench_whole_number(argv[2], 1, LLONG_MAX) : -1;
  const int reps = argc == 5 ? (int)bench_whole_number(argv[3], 1, BENCH_MAX_REPS) : -1;
  if (n0 < 1 || n1 < 1 || reps < 1) {
    if (rank == 0)
      fprintf(stderr,
              "usage: petacomm-transpose-bench N0 N1 REPETITIONS STRATEGIES (N0, N1 >= 1; "
              "REPETITIONS from 1 to %d)\n",
              BENCH_MAX_REPS);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char *list = strdup(argv[4]);
  for (char *at = NULL, *name = strtok_r(list, ",", &at); name; name = strtok_r(NULL, ",", &at))
    run_strategy(name, n0, n1, reps, rank);
  free(list);
  MPI_Finalize();
  return 0;
}
