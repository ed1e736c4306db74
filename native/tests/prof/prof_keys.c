/* Distinct keys for the call table: "prof_keys N" makes N MPI_Sendrecv of 1, 2, ..., N bytes
 * to itself, one each: N distinct (region, call, size, partner) keys per rank and nothing
 * else recorded before MPI_Finalize. With a table of E entries the profiler takes 7E/8 keys
 * before it coarsens (tests/prof/test_requests.py). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int n = argc > 1 ? atoi(argv[1]) : 100;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char *out = calloc(n > 0 ? n : 1, 1), *in = calloc(n > 0 ? n : 1, 1);
  for (int s = 1; s <= n; ++s)
    MPI_Sendrecv(out, s, MPI_BYTE, rank, 0, in, s, MPI_BYTE, rank, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
