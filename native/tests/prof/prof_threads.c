/* MPI_THREAD_MULTIPLE under the profiler: THREADS threads exchange with the neighbours at
 * the same time. Every rank records THREADS*ROUNDS MPI_Sendrecv of 8 bytes to its right
 * neighbour. Exits 0 without doing anything when the library lacks MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 50

static int rank, size, failures;

static void *exchange(void *arg) {
  const int tag = (int)(long)arg;
  for (int i = 0; i < ROUNDS; ++i) {
    double out = rank * 1000.0 + tag * 100 + i, in = -1;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, (rank + 1) % size, tag, &in, 1, MPI_DOUBLE,
                 (rank - 1 + size) % size, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (in != ((rank - 1 + size) % size) * 1000.0 + tag * 100 + i)
      __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("prof_threads: MPI_THREAD_MULTIPLE not provided; nothing to test\n");
    MPI_Finalize();
    return 0;
  }
  pthread_t threads[THREADS];
  for (long t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, exchange, (void *)t);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) printf("prof_threads: %d ranks, %d failures\n", size, total);
  return total ? 1 : 0;
}
