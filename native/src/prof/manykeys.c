/* petacomm-prof-manykeys: a program whose profile has many distinct keys, for comparing
 * profilers end to end (`petacomm bench profiler-overhead --peers ...` runs it plain and
 * under each profiler).
 *
 * Iteration i computes for COMPUTE_US, then exchanges s = 1 + i % S bytes with every other
 * rank at distance d = 1 .. P-1 (partners rank+d and rank-d): an MPI_Irecv/MPI_Isend pair per
 * distance completed by one MPI_Waitall, then an MPI_Sendrecv per distance, and an 8-byte
 * MPI_Allreduce. S = KEYS / (3 (P-1)) sizes (at most 4096, the profiler's exact sizes), so
 * after S iterations (the default) every rank has made 3 (P-1) S distinct (call, size,
 * partner) keys plus 2: 36,866 at 4 ranks and 36,857 at 8 with the default KEYS = 36,864.
 *
 * Usage: petacomm-prof-manykeys [--keys KEYS] [--iterations N] [--compute-us U]
 *                               [--compute-units N]
 * --compute-units: the compute loop's length instead of calibrating it to U (runs that are
 * compared take the same units, so they do the same work whatever the calibration saw).
 * Prints one JSON line (rank 0): "run_s" (MPI_Init to MPI_Finalize, slowest rank) and
 * "finalize_s" (rank 0's MPI_Finalize, which with a profiler includes merging and writing
 * the log).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_compute.h"

enum { kSizes = 4096 };

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  int iterations = 0, keys = 36864;
  double compute_us = 500;
  long given_units = -1;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 < argc && !strcmp(argv[i], "--keys")) {
      keys = atoi(argv[i + 1]);
    } else if (i + 1 < argc && !strcmp(argv[i], "--iterations")) {
      iterations = atoi(argv[i + 1]);
    } else if (i + 1 < argc && !strcmp(argv[i], "--compute-us")) {
      compute_us = atof(argv[i + 1]);
    } else if (i + 1 < argc && !strcmp(argv[i], "--compute-units")) {
      given_units = atol(argv[i + 1]);
      if (given_units < 0) {
        fprintf(stderr, "petacomm-prof-manykeys: --compute-units must be >= 0\n");
        return 2;
      }
    } else {
      fprintf(stderr, "petacomm-prof-manykeys: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (iterations < 0 || keys < 1 || compute_us < 0) {
    fprintf(stderr,
            "petacomm-prof-manykeys: --keys and --iterations must be positive and "
            "--compute-us non-negative\n");
    return 2;
  }
  const double start = seconds();
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long units = given_units >= 0 ? given_units : compute_us > 0 ? bench_calibrate(compute_us) : 0;
  PMPI_Bcast(&units, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const int far = size - 1;
  int sizes = far > 0 ? keys / (3 * far) : kSizes;
  if (sizes > kSizes) sizes = kSizes;
  if (sizes < 1) sizes = 1;
  if (iterations == 0) iterations = sizes;
  char *out = calloc((size_t)kSizes * (far > 0 ? far : 1), 1);
  char *in = calloc((size_t)kSizes * (far > 0 ? far : 1), 1);
  char *back = calloc(kSizes, 1);
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (far > 0 ? far : 1));
  if (!out || !in || !back || !reqs) {
    fprintf(stderr, "petacomm-prof-manykeys: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int it = 0; it < iterations; ++it) {
    bench_compute(units);
    const int s = 1 + it % sizes;
    for (int d = 1; d <= far; ++d) {
      const int to = (rank + d) % size, from = (rank - d + size) % size;
      MPI_Irecv(in + (size_t)(d - 1) * kSizes, s, MPI_BYTE, from, d, MPI_COMM_WORLD,
                &reqs[2 * (d - 1)]);
      MPI_Isend(out + (size_t)(d - 1) * kSizes, s, MPI_BYTE, to, d, MPI_COMM_WORLD,
                &reqs[2 * (d - 1) + 1]);
    }
    MPI_Waitall(2 * far, reqs, MPI_STATUSES_IGNORE);
    for (int d = 1; d <= far; ++d) {
      const int to = (rank + d) % size, from = (rank - d + size) % size;
      MPI_Sendrecv(out, s, MPI_BYTE, to, 100 + d, back, s, MPI_BYTE, from, 100 + d, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    }
    double x = it, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  free(out);
  free(in);
  free(back);
  free(reqs);
  double run = seconds() - start, run_max = 0;
  PMPI_Reduce(&run, &run_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  const double f0 = seconds();
  MPI_Finalize();
  const double finalize = seconds() - f0;
  if (rank == 0) {
    printf(
        "{\"ranks\":%d,\"iterations\":%d,\"sizes\":%d,\"keys_per_rank\":%d,\"compute_us\":%g,"
        "\"compute_units\":%ld,\"run_s\":%.6f,\"finalize_s\":%.6f}\n",
        size, iterations, sizes,
        far > 0 ? 3 * far * (iterations < sizes ? iterations : sizes) + 2 : 2, compute_us, units,
        run_max, finalize);
    fflush(stdout);
  }
  return 0;
}
