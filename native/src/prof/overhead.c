/* petacomm-prof-overhead: what the profiler costs, measured inside one run.
 *
 * The same loops run twice in the same processes, alternately: once through the MPI_*
 * entry points (intercepted when libpetacomm-prof is preloaded) and once through PMPI_*
 * (never intercepted). Comparing the two inside one run cancels the machine's noise.
 *
 *   mix    a realistic iteration: COMPUTE_US of arithmetic, a halo exchange with both ring
 *          neighbours (2 MPI_Irecv + 2 MPI_Isend of 4 KiB + MPI_Waitall), an 8-byte
 *          MPI_Allreduce, and every 10th iteration a 64-byte MPI_Bcast
 *   calls  cheap calls back to back (MPI_Send to MPI_PROC_NULL, MPI_Irecv from
 *          MPI_PROC_NULL + MPI_Wait, an 8-byte MPI_Allreduce on MPI_COMM_SELF): the added
 *          time per intercepted call
 *
 * Usage: petacomm-prof-overhead [--iterations N] [--calls N] [--reps R] [--compute-us U]
 * Prints one JSON object (rank 0): times in seconds are the slowest rank's per repetition.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
  int (*irecv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
  int (*waitall)(int, MPI_Request *, MPI_Status *);
  int (*wait)(MPI_Request *, MPI_Status *);
  int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
  int (*bcast)(void *, int, MPI_Datatype, int, MPI_Comm);
  int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
} Api;

static const Api kMpi = {MPI_Isend,     MPI_Irecv, MPI_Waitall, MPI_Wait,
                         MPI_Allreduce, MPI_Bcast, MPI_Send};
static const Api kPmpi = {PMPI_Isend,     PMPI_Irecv, PMPI_Waitall, PMPI_Wait,
                          PMPI_Allreduce, PMPI_Bcast, PMPI_Send};

static volatile double sink;

static void compute(long units) {
  double a = 1.0, b = 1.000001;
  for (long i = 0; i < units; ++i) a = a * b + 1e-9;
  sink = a;
}

static long calibrate(double compute_us) {
  long units = 1000;
  for (;;) {
    const double t0 = PMPI_Wtime();
    compute(units);
    const double t = PMPI_Wtime() - t0;
    if (t > 2e-3) return (long)(units * (compute_us * 1e-6) / t) + 1;
    units *= 4;
  }
}

static double mix(const Api *api, int iterations, long units, int rank, int size) {
  static char out[2][4096], in[2][4096];
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = PMPI_Wtime();
  for (int it = 0; it < iterations; ++it) {
    compute(units);
    MPI_Request reqs[4];
    api->irecv(in[0], 4096, MPI_BYTE, left, 1, MPI_COMM_WORLD, &reqs[0]);
    api->irecv(in[1], 4096, MPI_BYTE, right, 2, MPI_COMM_WORLD, &reqs[1]);
    api->isend(out[0], 4096, MPI_BYTE, right, 1, MPI_COMM_WORLD, &reqs[2]);
    api->isend(out[1], 4096, MPI_BYTE, left, 2, MPI_COMM_WORLD, &reqs[3]);
    api->waitall(4, reqs, MPI_STATUSES_IGNORE);
    double x = it, y = 0;
    api->allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (it % 10 == 0) {
      char b[64] = {0};
      api->bcast(b, 64, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
  }
  double t = PMPI_Wtime() - t0, tmax = 0;
  PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return tmax;
}

static double calls(const Api *api, int iterations) {
  int value = 1;
  double x = 1, y = 0;
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = PMPI_Wtime();
  for (int it = 0; it < iterations; ++it) {
    api->send(&value, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    MPI_Request r;
    api->irecv(&value, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
    api->wait(&r, MPI_STATUS_IGNORE);
    api->allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
  }
  double t = PMPI_Wtime() - t0, tmax = 0;
  PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return tmax;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void put_series(const char *name, double *v, int n, int last) {
  qsort(v, n, sizeof(double), cmp);
  printf("\"%s\":{\"min_s\":%.9f,\"median_s\":%.9f,\"max_s\":%.9f}%s", name, v[0], v[n / 2],
         v[n - 1], last ? "" : ",");
}

int main(int argc, char **argv) {
  int iterations = 2000, ncalls = 200000, reps = 7;
  double compute_us = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iterations"))
      iterations = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--calls"))
      ncalls = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps"))
      reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--compute-us"))
      compute_us = atof(argv[i + 1]);
    else {
      fprintf(stderr, "petacomm-prof-overhead: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (iterations < 1 || ncalls < 1 || reps < 1 || reps > 101 || compute_us < 0) {
    fprintf(stderr,
            "petacomm-prof-overhead: --iterations, --calls, --reps (<= 101) must be "
            "positive and --compute-us non-negative\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "petacomm_prof_is_active");
  const int profiled = active ? active() : 0;
  long units = compute_us > 0 ? calibrate(compute_us) : 0;
  PMPI_Bcast(&units, 1, MPI_LONG, 0, MPI_COMM_WORLD);

  double mix_mpi[101], mix_pmpi[101], calls_mpi[101], calls_pmpi[101];
  mix(&kPmpi, iterations / 10 + 1, units, rank, size); /* warm-up */
  calls(&kPmpi, ncalls / 10 + 1);
  for (int r = 0; r < reps; ++r) {
    if (r % 2 == 0) {
      mix_mpi[r] = mix(&kMpi, iterations, units, rank, size);
      mix_pmpi[r] = mix(&kPmpi, iterations, units, rank, size);
      calls_mpi[r] = calls(&kMpi, ncalls);
      calls_pmpi[r] = calls(&kPmpi, ncalls);
    } else {
      mix_pmpi[r] = mix(&kPmpi, iterations, units, rank, size);
      mix_mpi[r] = mix(&kMpi, iterations, units, rank, size);
      calls_pmpi[r] = calls(&kPmpi, ncalls);
      calls_mpi[r] = calls(&kMpi, ncalls);
    }
  }
  if (rank == 0) {
    printf(
        "{\"ranks\":%d,\"profiler_active\":%s,\"iterations\":%d,\"calls_iterations\":%d,"
        "\"reps\":%d,\"compute_us\":%g,\"mix_calls_per_iteration\":6.1,"
        "\"calls_per_iteration\":4,",
        size, profiled ? "true" : "false", iterations, ncalls, reps, compute_us);
    put_series("mix_mpi", mix_mpi, reps, 0);
    put_series("mix_pmpi", mix_pmpi, reps, 0);
    put_series("calls_mpi", calls_mpi, reps, 0);
    put_series("calls_pmpi", calls_pmpi, reps, 1);
    printf("}\n");
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
