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
 *   keys   for each K of --keys: cheap collectives on MPI_COMM_SELF cycling through
 *          K distinct (call, size) keys (10 calls x sizes 1, 2, ... bytes: every key a new
 *          table entry, visited in turn), so the added time per call is measured with K live
 *          keys in the profiler's table (hashing, probing and cache misses included)
 *
 * Usage: petacomm-prof-overhead [--iterations N] [--calls N] [--reps R] [--compute-us U]
 *                               [--keys K1,K2,...]
 * Prints one JSON object (rank 0): times in seconds are the slowest rank's per repetition.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_compute.h"

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

static double mix(const Api *api, int iterations, long units, int rank, int size) {
  static char out[2][4096], in[2][4096];
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = PMPI_Wtime();
  for (int it = 0; it < iterations; ++it) {
    bench_compute(units);
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

/* The keys sweep: key i is call i % kKeyCalls with a message of 1 + i / kKeyCalls bytes, all
 * on MPI_COMM_SELF (cheap, no partner to wait for). Sizes stay within the profiler's exact
 * size range (4 KiB by default), so every key is distinct. */
enum { kKeyCalls = 10, kMaxKeys = kKeyCalls * 4096 };
static char key_in[4096], key_out[4096];

static void key_call(int use_pmpi, int key) {
  const int call = key % kKeyCalls, n = 1 + key / kKeyCalls;
  MPI_Comm self = MPI_COMM_SELF;
  switch (call) {
    case 0:
      use_pmpi ? PMPI_Bcast(key_out, n, MPI_BYTE, 0, self)
               : MPI_Bcast(key_out, n, MPI_BYTE, 0, self);
      break;
    case 1:
      use_pmpi ? PMPI_Allreduce(key_out, key_in, n, MPI_BYTE, MPI_BOR, self)
               : MPI_Allreduce(key_out, key_in, n, MPI_BYTE, MPI_BOR, self);
      break;
    case 2:
      use_pmpi ? PMPI_Reduce(key_out, key_in, n, MPI_BYTE, MPI_BOR, 0, self)
               : MPI_Reduce(key_out, key_in, n, MPI_BYTE, MPI_BOR, 0, self);
      break;
    case 3:
      use_pmpi ? PMPI_Allgather(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, self)
               : MPI_Allgather(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, self);
      break;
    case 4:
      use_pmpi ? PMPI_Gather(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, 0, self)
               : MPI_Gather(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, 0, self);
      break;
    case 5:
      use_pmpi ? PMPI_Scatter(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, 0, self)
               : MPI_Scatter(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, 0, self);
      break;
    case 6:
      use_pmpi ? PMPI_Alltoall(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, self)
               : MPI_Alltoall(key_out, n, MPI_BYTE, key_in, n, MPI_BYTE, self);
      break;
    case 7:
      use_pmpi ? PMPI_Scan(key_out, key_in, n, MPI_BYTE, MPI_BOR, self)
               : MPI_Scan(key_out, key_in, n, MPI_BYTE, MPI_BOR, self);
      break;
    case 8:
      use_pmpi ? PMPI_Exscan(key_out, key_in, n, MPI_BYTE, MPI_BOR, self)
               : MPI_Exscan(key_out, key_in, n, MPI_BYTE, MPI_BOR, self);
      break;
    default:
      use_pmpi ? PMPI_Reduce_scatter_block(key_out, key_in, n, MPI_BYTE, MPI_BOR, self)
               : MPI_Reduce_scatter_block(key_out, key_in, n, MPI_BYTE, MPI_BOR, self);
      break;
  }
}

static double keys(int use_pmpi, int nkeys, int iterations) {
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = PMPI_Wtime();
  for (int it = 0, key = 0; it < iterations; ++it) {
    key_call(use_pmpi, key);
    if (++key == nkeys) key = 0;
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
  int key_counts[16], nkey_counts = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iterations"))
      iterations = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--calls"))
      ncalls = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps"))
      reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--compute-us"))
      compute_us = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--keys")) {
      for (char *p = argv[i + 1]; *p;) {
        char *end = p;
        const long k = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || k < 1 || k > kMaxKeys || nkey_counts == 16) {
          fprintf(stderr, "petacomm-prof-overhead: --keys: up to 16 counts of 1 to %d, got %s\n",
                  kMaxKeys, argv[i + 1]);
          return 2;
        }
        key_counts[nkey_counts++] = (int)k;
        p = *end == ',' ? end + 1 : end;
      }
    } else {
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
  long units = compute_us > 0 ? bench_calibrate(compute_us) : 0;
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
    put_series("calls_pmpi", calls_pmpi, reps, nkey_counts == 0);
    if (nkey_counts) printf("\"keys\":[");
  }
  /* One sweep per key count, in the order given, after a warm-up that enters the keys in the
   * table: kKeyPairs pairs of back-to-back MPI_ and PMPI_ sweeps (order alternating), each
   * of at least --calls / 10 calls and at least one visit of every key. The median of the
   * pairs' differences is robust to the noise of a shared machine. */
  enum { kKeyPairs = 41 };
  for (int k = 0; k < nkey_counts; ++k) {
    double with[kKeyPairs], without[kKeyPairs], diff[kKeyPairs];
    const int n = key_counts[k] > ncalls / 10 ? key_counts[k] : ncalls / 10;
    keys(0, key_counts[k], key_counts[k]);
    keys(1, key_counts[k], key_counts[k]);
    for (int r = 0; r < kKeyPairs; ++r) {
      if (r % 2 == 0) {
        with[r] = keys(0, key_counts[k], n);
        without[r] = keys(1, key_counts[k], n);
      } else {
        without[r] = keys(1, key_counts[k], n);
        with[r] = keys(0, key_counts[k], n);
      }
      diff[r] = with[r] - without[r];
    }
    if (rank == 0) {
      printf("%s{\"keys\":%d,\"calls\":%d,", k ? "," : "", key_counts[k], n);
      put_series("mpi", with, kKeyPairs, 0);
      put_series("pmpi", without, kKeyPairs, 0);
      put_series("difference", diff, kKeyPairs, 1);
      printf("}");
    }
  }
  if (rank == 0) {
    if (nkey_counts) printf("]");
    printf("}\n");
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
