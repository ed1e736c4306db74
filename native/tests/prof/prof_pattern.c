/* A program with known communication, for the profiler's exact-count tests.
 *
 * Every rank r of P does the same fixed sequence (right = (r+1)%P, left = (r-1+P)%P);
 * tests/prof/expected.py computes what the profile must contain. The program checks its
 * own results too, so under ctest it proves the profiler does not change behaviour
 * (MPI_IN_PLACE, MPI_DATATYPE_NULL, zero counts, derived types, MPI_PROC_NULL, ...).
 * Exits non-zero on a wrong result.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ITERATIONS 3

static int failures = 0;
#define CHECK(cond, ...)                                           \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "prof_pattern: check failed: " __VA_ARGS__); \
      fputc('\n', stderr);                                         \
      ++failures;                                                  \
    }                                                              \
  } while (0)

int main(int argc, char **argv) {
  /* Calls before MPI_Init pass straight through. */
  int version = 0, subversion = 0, flag = 0;
  MPI_Get_version(&version, &subversion);
  MPI_Initialized(&flag);
  CHECK(!flag, "initialised before MPI_Init");
  if (write(STDOUT_FILENO, "", 0) != 0) ++failures;

  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;

  /* ---- region "ring": blocking receive, non-blocking send -------------------------- */
  MPI_Pcontrol(1, "ring");
  for (int it = 0; it < ITERATIONS; ++it) {
    double out[100], in[100];
    for (int i = 0; i < 100; ++i) out[i] = rank * 1000 + it * 100 + i;
    MPI_Request req;
    MPI_Isend(out, 100, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req);
    MPI_Recv(in, 100, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(in[7] == left * 1000 + it * 100 + 7, "ring data");
  }
  MPI_Pcontrol(-1, "ring");

  /* ---- region "collectives" ------------------------------------------------------ */
  MPI_Pcontrol(1, "collectives");
  int value = rank + 1;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(value == size * (size + 1) / 2, "allreduce in place");
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int ten[10];
  for (int i = 0; i < 10; ++i) ten[i] = rank == 0 ? i : -1;
  MPI_Bcast(ten, 10, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(ten[9] == 9, "bcast");
  double *gathered = malloc(sizeof(double) * 3 * size);
  double mine[3] = {rank, rank, rank};
  const int groot = size - 1;
  if (rank == groot) {
    for (int i = 0; i < 3; ++i) gathered[3 * rank + i] = rank;
    /* The root gives MPI_IN_PLACE with junk send arguments: MPI_DATATYPE_NULL, count 0. */
    MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 3, MPI_DOUBLE, groot, MPI_COMM_WORLD);
    for (int p = 0; p < size; ++p) CHECK(gathered[3 * p + 2] == p, "gather from %d", p);
  } else {
    MPI_Gather(mine, 3, MPI_DOUBLE, NULL, 0, MPI_DATATYPE_NULL, groot, MPI_COMM_WORLD);
  }
  free(gathered);
  int *a2a_out = malloc(sizeof(int) * 2 * size), *a2a_in = malloc(sizeof(int) * 2 * size);
  for (int i = 0; i < 2 * size; ++i) a2a_out[i] = rank * 100 + i / 2;
  MPI_Alltoall(a2a_out, 2, MPI_INT, a2a_in, 2, MPI_INT, MPI_COMM_WORLD);
  for (int p = 0; p < size; ++p) CHECK(a2a_in[2 * p] == p * 100 + rank, "alltoall");
  free(a2a_out);
  free(a2a_in);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Pcontrol(-1, "collectives");

  /* ---- region "nonblocking": ANY_SOURCE receive, persistent requests ------------- */
  MPI_Pcontrol(1, "nonblocking");
  {
    char out[16], in[16];
    memset(out, 'a' + rank % 26, sizeof(out));
    MPI_Request reqs[2];
    MPI_Irecv(in, 16, MPI_CHAR, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(out, 16, MPI_CHAR, right, 5, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    CHECK(in[3] == 'a' + left % 26, "any-source receive");
    double v[4] = {1, 2, 3, 4}, s[4];
    MPI_Request r;
    MPI_Iallreduce(v, s, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(s[3] == 4.0 * size, "iallreduce");
    long pout[8], pin[8];
    MPI_Request pers[2];
    MPI_Send_init(pout, 8, MPI_LONG, right, 6, MPI_COMM_WORLD, &pers[0]);
    MPI_Recv_init(pin, 8, MPI_LONG, left, 6, MPI_COMM_WORLD, &pers[1]);
    for (int it = 0; it < 2; ++it) {
      for (int i = 0; i < 8; ++i) pout[i] = rank * 10 + it;
      MPI_Startall(2, pers);
      MPI_Waitall(2, pers, MPI_STATUSES_IGNORE);
      CHECK(pin[5] == left * 10 + it, "persistent");
    }
    MPI_Request_free(&pers[0]);
    MPI_Request_free(&pers[1]);
  }
  MPI_Pcontrol(-1, "nonblocking");

  /* ---- outside regions: troublesome arguments ------------------------------------ */
  int five[5] = {0};
  MPI_Send(five, 5, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
  MPI_Status st;
  MPI_Recv(five, 5, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "proc null status");
  MPI_Sendrecv(NULL, 0, MPI_INT, rank, 9, NULL, 0, MPI_INT, rank, 9, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  /* Derived datatype: 4 blocks of 2 doubles, stride 5: 64 bytes of payload. */
  MPI_Datatype vec;
  MPI_Type_vector(4, 2, 5, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  double vout[20], vin[20];
  for (int i = 0; i < 20; ++i) vout[i] = rank + i * 0.5;
  MPI_Sendrecv(vout, 1, vec, right, 10, vin, 1, vec, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(vin[16] == left + 8.0, "derived datatype");
  MPI_Type_free(&vec);
  /* Allgather in place: the send arguments are ignored (MPI_DATATYPE_NULL). */
  double *all = malloc(sizeof(double) * size);
  all[rank] = rank;
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int p = 0; p < size; ++p) CHECK(all[p] == p, "allgather in place");
  free(all);
  /* A message above the exact-size bound (binned in the table, bytes exact). */
  char *big_out = malloc(10000), *big_in = malloc(10000);
  memset(big_out, 7, 10000);
  MPI_Sendrecv(big_out, 10000, MPI_BYTE, right, 11, big_in, 10000, MPI_BYTE, left, 11,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(big_in[9999] == 7, "big message");
  free(big_out);
  free(big_in);
  /* A sub-communicator: partners are recorded as world ranks. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int hrank, hsize;
  MPI_Comm_rank(half, &hrank);
  MPI_Comm_size(half, &hsize);
  int hv = rank, hin = -1;
  MPI_Sendrecv(&hv, 1, MPI_INT, (hrank + 1) % hsize, 12, &hin, 1, MPI_INT,
               (hrank - 1 + hsize) % hsize, 12, half, MPI_STATUS_IGNORE);
  CHECK(hin % 2 == rank % 2, "split communicator");
  MPI_Comm_free(&half);
  /* One-sided: a put to the right neighbour between fences. (Some MPI builds cannot create
   * windows in every configuration, e.g. Open MPI 4.1 with one rank: then this part is
   * skipped, the same with and without the profiler.) */
  long window_mem = -1;
  MPI_Win win = MPI_WIN_NULL;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int win_rc =
      MPI_Win_create(&window_mem, sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  if (win_rc == MPI_SUCCESS) {
    MPI_Win_fence(0, win);
    long put = rank;
    MPI_Put(&put, 1, MPI_LONG, right, 0, 1, MPI_LONG, win);
    MPI_Win_fence(0, win);
    CHECK(window_mem == left, "put");
    MPI_Win_free(&win);
  } else if (rank == 0) {
    printf("prof_pattern: this MPI cannot create a window here; one-sided part skipped\n");
  }
  /* Neighbourhood collective on a periodic ring. */
  MPI_Comm ring;
  int dims[1] = {size}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  int nout[2] = {rank, rank}, nin[2] = {-1, -1};
  MPI_Neighbor_alltoall(nout, 1, MPI_INT, nin, 1, MPI_INT, ring);
  CHECK(nin[0] == left && nin[1] == right, "neighbor alltoall");
  MPI_Comm_free(&ring);

  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  /* Calls after MPI_Finalize pass straight through. */
  MPI_Finalized(&flag);
  CHECK(flag, "finalized after MPI_Finalize");
  if (rank == 0) printf("prof_pattern: %d ranks, %d failures\n", size, all_failures + failures);
  return all_failures + failures ? 1 : 0;
}
