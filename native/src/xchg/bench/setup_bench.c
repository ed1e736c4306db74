/* petacomm-xchg-setup-bench: plan setup time of every registered sparse-reduction strategy,
 * for `petacomm bench sparse-reduce --setup-scaling --smpi` (built with smpicc in an SMPI
 * build tree, it reports SimGrid's simulated time: ranks simulated one after another,
 * compute bursts timed on the host, so ranks never share a core; any other MPI runs it
 * too). argv: key directory, repetitions. Rank r of p reads <dir>/p<p>_r<r>.bin (int64
 * keys); rank 0 prints one line per strategy: XCHGSMPI {"strategy", "simulated_seconds"
 * (median over the builds after a warm-up one, max over ranks), "keys"}. */
#include <mpi.h>
#include <petacomm/xchg.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void fail(const char *what) {
  fprintf(stderr, "petacomm-xchg-setup-bench: %s: %s\n", what, petacomm_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || atoi(argv[2]) < 1) {
    if (rank == 0) fprintf(stderr, "usage: petacomm-xchg-setup-bench KEY_DIR REPETITIONS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int reps = atoi(argv[2]);
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
  int strategies = 0;
  if (petacomm_xchg_strategy_count(&strategies) != PETACOMM_SUCCESS) fail("strategy_count");
  double *times = malloc(sizeof(double) * (size_t)(reps + 1));
  for (int s = 0; s < strategies; ++s) {
    petacomm_strategy_info info;
    if (petacomm_xchg_strategy_info(s, &info) != PETACOMM_SUCCESS) fail("strategy_info");
    for (int rep = 0; rep <= reps; ++rep) { /* build 0 warms up and is dropped */
      petacomm_xchg_options o;
      petacomm_xchg_options_default(&o);
      o.strategy = info.name;
      o.plan_k = 3;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      petacomm_xchg_plan plan;
      if (petacomm_xchg_plan_create(MPI_COMM_WORLD, keys, n, &o, &plan) != PETACOMM_SUCCESS)
        fail(info.name);
      const double mine = MPI_Wtime() - t0;
      MPI_Allreduce(&mine, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      petacomm_xchg_plan_free(&plan);
    }
    qsort(times + 1, (size_t)reps, sizeof(double), by_value);
    if (rank == 0)
      printf("XCHGSMPI {\"strategy\": \"%s\", \"simulated_seconds\": %.9g, \"keys\": %ld}\n",
             info.name, times[1 + reps / 2], n);
  }
  free(times);
  free(keys);
  MPI_Finalize();
  return 0;
}
