/* MPI_THREAD_MULTIPLE under the profiler: THREADS threads communicate with the neighbours at
 * the same time. Per rank and thread (right = (r+1)%P, left = (r-1+P)%P, tags per thread):
 *   ROUNDS x MPI_Sendrecv of 8 bytes to right
 *   ROUNDS x [MPI_Irecv of 8 bytes from left, MPI_Isend of 8 bytes to right, MPI_Waitall]
 *   ROUNDS x [MPI_Irecv, MPI_Isend, MPI_Wait, MPI_Wait]
 * Request handles freed by one thread's wait are handed to another thread's MPI_Isend while
 * the first is still recording: every rank must record exactly 2*THREADS*ROUNDS MPI_Isend
 * and MPI_Irecv, and its MPI time (time with at least one thread inside MPI) stays below its
 * wall time. Exits 0 without doing anything when the library lacks MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 50

static int rank, size, failures;

static void *exchange(void *arg) {
  const int tag = (int)(long)arg;
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  for (int i = 0; i < ROUNDS; ++i) {
    double out = rank * 1000.0 + tag * 100 + i, in = -1;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, right, tag, &in, 1, MPI_DOUBLE, left, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (in != left * 1000.0 + tag * 100 + i) __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  }
  for (int i = 0; i < 2 * ROUNDS; ++i) {
    double out = rank + i, in = -1;
    MPI_Request r[2];
    MPI_Irecv(&in, 1, MPI_DOUBLE, left, 100 + tag, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out, 1, MPI_DOUBLE, right, 100 + tag, MPI_COMM_WORLD, &r[1]);
    if (i % 2 == 0) {
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    } else {
      MPI_Wait(&r[1], MPI_STATUS_IGNORE);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    }
    if (in != left + i) __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
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
