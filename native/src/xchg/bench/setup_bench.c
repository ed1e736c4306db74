/* petacomm-xchg-setup-bench: plan setup time and execution time of sparse-reduction
 * strategies, for `petacomm bench sparse-reduce --setup-scaling --smpi` and
 * `petacomm simulate sparse-reduce` (built with smpicc in an SMPI build tree, it reports
 * SimGrid's simulated time: ranks simulated one after another, compute bursts timed on the
 * host, so ranks never share a core; any other MPI runs it too).
 * argv: KEY_DIR REPETITIONS [STRATEGIES [TRANSPORT [SEND_WINDOW]]]. Rank r of p reads
 * <KEY_DIR>/p<p>_r<r>.bin (int64 keys). STRATEGIES is a comma-separated list (registered
 * names or "auto"; default or "all": every registered strategy); TRANSPORT the partner
 * exchange of the strategies that have one (p2p, neighbor, alltoallv; default p2p); SEND_WINDOW
 * the plans' send_window option (default 0: every send of a round at once). Rank 0 prints
 * one line per strategy: XCHGSMPI {"strategy", "chosen" (what the plan runs: the planner's pick for
 * "auto"), "simulated_seconds" (plan setup), "execute_seconds" (one in-place sum of one float64 per
 * key), "keys"}: medians over the repetitions after a warm-up one, each timed by
 * bench_operation_seconds.
 */
#include <limits.h>
#include <mpi.h>
#include <petacomm/xchg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_driver.h"

static void fail(const char *what) { bench_fail("petacomm-xchg-setup-bench", what); }

static void run_strategy(const char *name, const char *transport, int send_window,
                         const int64_t *keys, long n, int reps, int rank) {
  double *setup = malloc(sizeof(double) * (size_t)(reps + 1));
  double *execute = malloc(sizeof(double) * (size_t)(reps + 1));
  double *values = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!setup || !execute || !values) MPI_Abort(MPI_COMM_WORLD, 2);
  const char *chosen = "";
  petacomm_xchg_plan plan = NULL;
  for (int rep = 0; rep <= reps; ++rep) { /* build 0 warms up and is dropped */
    petacomm_xchg_options o;
    petacomm_xchg_options_default(&o);
    o.strategy = name;
    o.transport = transport;
    o.send_window = send_window;
    o.plan_k = 3;
    petacomm_xchg_plan_free(&plan);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (petacomm_xchg_plan_create(MPI_COMM_WORLD, keys, n, &o, &plan) != PETACOMM_SUCCESS)
      fail(name);
    setup[rep] = bench_operation_seconds(t0, MPI_Wtime());
  }
  if (petacomm_xchg_plan_strategy(plan, &chosen) != PETACOMM_SUCCESS) fail("plan_strategy");
  for (int rep = 0; rep <= reps; ++rep) { /* execution 0 warms up and is dropped */
    for (long i = 0; i < n; ++i) values[i] = 1.0;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (petacomm_xchg_execute(plan, MPI_COMM_WORLD, values, n, 1, PETACOMM_XCHG_FLOAT64,
                              PETACOMM_XCHG_SUM) != PETACOMM_SUCCESS)
      fail(name);
    execute[rep] = bench_operation_seconds(t0, MPI_Wtime());
  }
  if (rank == 0)
    printf(
        "XCHGSMPI {\"strategy\": \"%s\", \"chosen\": \"%s\", \"simulated_seconds\": %.9g, "
        "\"execute_seconds\": %.9g, \"keys\": %ld}\n",
        name, chosen, bench_median_after_warmup(setup, reps),
        bench_median_after_warmup(execute, reps), n);
  fflush(stdout);
  petacomm_xchg_plan_free(&plan);
  free(values);
  free(execute);
  free(setup);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reps = argc >= 3 ? (int)bench_whole_number(argv[2], 1, BENCH_MAX_REPS) : -1;
  const int send_window = argc == 6 ? (int)bench_whole_number(argv[5], 0, INT_MAX) : 0;
  if (argc < 3 || argc > 6 || reps < 1 || send_window < 0) {
    if (rank == 0)
      fprintf(stderr,
              "usage: petacomm-xchg-setup-bench KEY_DIR REPETITIONS [STRATEGIES "
              "[TRANSPORT [SEND_WINDOW]]] (REPETITIONS from 1 to %d, SEND_WINDOW >= 0)\n",
              BENCH_MAX_REPS);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/p%d_r%d.bin", argv[1], size, rank);
  FILE *file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "petacomm-xchg-setup-bench: cannot open %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  fseek(file, 0, SEEK_END);
  const long n = ftell(file) / 8;
  rewind(file);
  int64_t *keys = malloc((size_t)(n > 0 ? n : 1) * 8);
  if (!keys || fread(keys, 8, (size_t)n, file) != (size_t)n) MPI_Abort(MPI_COMM_WORLD, 2);
  fclose(file);
  const char *transport = argc >= 5 ? argv[4] : "p2p";
  if (argc >= 4 && strcmp(argv[3], "all") != 0) {
    char *list = strdup(argv[3]);
    for (char *at = NULL, *name = strtok_r(list, ",", &at); name; name = strtok_r(NULL, ",", &at))
      run_strategy(name, transport, send_window, keys, n, reps, rank);
    free(list);
  } else {
    int strategies = 0;
    if (petacomm_xchg_strategy_count(&strategies) != PETACOMM_SUCCESS) fail("strategy_count");
    for (int s = 0; s < strategies; ++s) {
      petacomm_strategy_info info;
      if (petacomm_xchg_strategy_info(s, &info) != PETACOMM_SUCCESS) fail("strategy_info");
      run_strategy(info.name, transport, send_window, keys, n, reps, rank);
    }
  }
  free(keys);
  MPI_Finalize();
  return 0;
}
