/* petacomm bench sparse-reduce --setup-scaling --smpi: plan setup time per strategy in
 * SimGrid SMPI's simulated time (ranks simulated one after another, compute bursts timed
 * on the host, so ranks never share a core). argv: key directory, repetitions. Rank r of p
 * reads <dir>/p<p>_r<r>.bin (int64 keys); rank 0 prints one line per strategy. */
#include <mpi.h>
#include <petacomm/xchg.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reps = argc > 2 ? atoi(argv[2]) : 3;
  char path[4096];
  snprintf(path, sizeof path, "%s/p%d_r%d.bin", argc > 1 ? argv[1] : ".", size, rank);
  FILE *file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "cannot open %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  fseek(file, 0, SEEK_END);
  const long n = ftell(file) / 8;
  rewind(file);
  int64_t *keys = malloc((size_t)(n > 0 ? n : 1) * 8);
  if (fread(keys, 8, (size_t)n, file) != (size_t)n) MPI_Abort(MPI_COMM_WORLD, 2);
  fclose(file);
  const char *names[] = {"dense-allreduce", "allgather", "directory", "owner", "hub-split"};
  double *times = malloc(sizeof(double) * (size_t)(reps + 1));
  for (int s = 0; s < 5; ++s) {
    for (int rep = 0; rep <= reps; ++rep) { /* build 0 warms up and is dropped */
      petacomm_xchg_options o;
      petacomm_xchg_options_default(&o);
      o.strategy = names[s];
      o.plan_k = 3;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      petacomm_xchg_plan plan;
      if (petacomm_xchg_plan_create(MPI_COMM_WORLD, keys, n, &o, &plan) != PETACOMM_SUCCESS) {
        fprintf(stderr, "xchg: %s\n", petacomm_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      const double mine = MPI_Wtime() - t0;
      MPI_Allreduce(&mine, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      petacomm_xchg_plan_free(&plan);
    }
    qsort(times + 1, (size_t)reps, sizeof(double), by_value);
    if (rank == 0)
      printf("XCHGSMPI {\"strategy\": \"%s\", \"simulated_seconds\": %.9g, \"keys\": %ld}\n",
             names[s], times[1 + reps / 2], n);
  }
  free(times);
  free(keys);
  MPI_Finalize();
  return 0;
}
