/* What the C drivers that `petacomm simulate` and the benchmarks run under any MPI, SimGrid
 * SMPI included (petacomm-transpose-bench, petacomm-xchg-setup-bench), share: reading a
 * whole-number argument, one collective operation's seconds, the median of repetitions after
 * a warm-up, and failing with the library's last error. Header-only C. */
#ifndef PETACOMM_BENCH_DRIVER_H
#define PETACOMM_BENCH_DRIVER_H

#include <errno.h>
#include <mpi.h>
#include <petacomm/core.h>
#include <stdio.h>
#include <stdlib.h>

/* Repetitions a driver takes at most (petacomm.bench.MAX_REPS: the benchmarks' bound), the
 * library's bound on autotune and measure_reps. */
#define BENCH_MAX_REPS PETACOMM_MAX_REPS

/* argv text as a whole number in [low, high], or -1, which is why low must be >= 0 (atoi
 * took "99999999999" for 1215752191 and "ten" for 0). */
static long long bench_whole_number(const char *text, long long low, long long high) {
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(text, &end, 10);
  return errno == 0 && end != text && *end == '\0' && v >= low && v <= high ? v : -1;
}

static int bench_by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Prints "<program>: <what>: <the library's last error>" and aborts every rank. */
static void bench_fail(const char *program, const char *what) {
  fprintf(stderr, "%s: %s: %s\n", program, what, petacomm_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Seconds of one collective operation timed on every rank from t0 to t1. Under a global
 * clock (SMPI's simulated time; MPI_WTIME_IS_GLOBAL) it runs from the last rank's start to
 * the last rank's end, so ranks leaving the preceding barrier at different times do not
 * count; otherwise it is the slowest rank's own duration. */
static double bench_operation_seconds(double t0, double t1) {
  int *global = NULL, found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &found);
  const double mine[3] = {t1 - t0, t1, t0};
  double most[3];
  MPI_Allreduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return found && global && *global ? most[1] - most[2] : most[0];
}

/* Median of times[1 .. reps] (times[0], the warm-up, is dropped); sorts them in place. */
static double bench_median_after_warmup(double *times, int reps) {
  qsort(times + 1, (size_t)reps, sizeof(double), bench_by_value);
  return times[1 + reps / 2];
}

#endif
