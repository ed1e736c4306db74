/* The compute loop of the profiler's benchmark programs (overhead.c, manykeys.c), and its
 * calibration to a duration on this machine. */
#ifndef PETACOMM_PROF_BENCH_COMPUTE_H
#define PETACOMM_PROF_BENCH_COMPUTE_H

#include <mpi.h>

static volatile double bench_sink;

/* A dependent multiply-add chain: `units` of them, no memory traffic. */
static void bench_compute(long units) {
  double a = 1.0, b = 1.000001;
  for (long i = 0; i < units; ++i) a = a * b + 1e-9;
  bench_sink = a;
}

/* Units that take compute_us on this core: grown until a run takes over 2 ms, then timed
 * five times and the fastest taken (a run descheduled midway only ever looks slower: one
 * slow timing made a whole benchmark run do half its work). */
static long bench_calibrate(double compute_us) {
  long units = 1000;
  for (;;) {
    double best = 0;
    for (int trial = 0; trial < 5; ++trial) {
      const double t0 = PMPI_Wtime();
      bench_compute(units);
      const double t = PMPI_Wtime() - t0;
      if (trial == 0 || t < best) best = t;
      if (best <= 2e-3) break; /* too short to time: grow first */
    }
    if (best > 2e-3) return (long)(units * (compute_us * 1e-6) / best) + 1;
    units *= 4;
  }
}

#endif
