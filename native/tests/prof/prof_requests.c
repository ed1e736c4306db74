/* Requests completed every way MPI allows, for the profiler's exact-count tests.
 *
 * Every rank r of P (right = (r+1)%P, left = (r-1+P)%P) runs the phases below, each in its
 * own region; tests/prof/expected.py (requests_pattern) says what the profile must contain.
 * Small sends complete at once, so Open MPI gives many of them one shared request handle,
 * and sends to MPI_PROC_NULL share one too: several slots of one completion call then hold
 * the same handle value. The number of MPI_Test* calls depends on timing: the program counts
 * them and prints "prof_requests: rank R testall N testsome N testany N waitsome N".
 *
 *   shared     125 x [4 Irecv 8 B from left, 4 Isend 8 B to right, 2 Isend to PROC_NULL,
 *              one Waitall of the 10]
 *   testall    100 x [2 Irecv 16 B, 2 Isend 16 B, 1 Isend to PROC_NULL; Testall until done]
 *   waitsome   50 x [3 Irecv 24 B from ANY_SOURCE (statuses ignored), 3 Isend 24 B, 1 Isend
 *              to PROC_NULL; Waitsome until all done]
 *   testsome   50 x the same with Testsome
 *   waitany    50 x [2 Irecv 40 B, 2 Isend 40 B; 4 Waitany]
 *   testany    50 x [2 Irecv 48 B, 2 Isend 48 B; Testany until 4 completed]
 *   post       1 Isend 32 B and 1 Irecv 32 B posted here ...
 *   complete   ... and completed here by one Waitall: they belong to "post"
 *   init       MPI_Recv_init 56 B from left and MPI_Send_init 56 B to right ...
 *   start      ... 3 x [MPI_Startall of both, MPI_Waitall], then 2 MPI_Request_free: the
 *              activations belong to "start", the region of their MPI_Startall
 *   io         with a file name argument: MPI_File_open, MPI_File_iwrite_shared of 16 ints,
 *              MPI_Wait, MPI_File_close (calls added by the recipe of docs/profiler.md)
 * Exits non-zero on a wrong result. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, what)                                         \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "prof_requests: check failed: %s\n", what); \
      ++failures;                                                 \
    }                                                             \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  long testall = 0, testsome = 0, testany = 0, waitsome = 0;
  char out[8][64], in[8][64];
  memset(out, rank, sizeof(out));
  MPI_Request r[10];

  MPI_Pcontrol(1, "shared");
  for (int it = 0; it < 125; ++it) {
    for (int i = 0; i < 4; ++i) MPI_Irecv(in[i], 8, MPI_BYTE, left, 1, MPI_COMM_WORLD, &r[i]);
    for (int i = 0; i < 4; ++i) MPI_Isend(out[i], 8, MPI_BYTE, right, 1, MPI_COMM_WORLD, &r[4 + i]);
    MPI_Isend(out[0], 8, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[8]);
    MPI_Isend(out[1], 8, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[9]);
    MPI_Waitall(10, r, MPI_STATUSES_IGNORE);
    CHECK(in[3][7] == (char)left, "shared");
  }
  MPI_Pcontrol(-1, "shared");

  MPI_Pcontrol(1, "testall");
  for (int it = 0; it < 100; ++it) {
    for (int i = 0; i < 2; ++i) MPI_Irecv(in[i], 16, MPI_BYTE, left, 2, MPI_COMM_WORLD, &r[i]);
    for (int i = 0; i < 2; ++i)
      MPI_Isend(out[i], 16, MPI_BYTE, right, 2, MPI_COMM_WORLD, &r[2 + i]);
    MPI_Isend(out[0], 16, MPI_BYTE, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &r[4]);
    int flag = 0;
    while (!flag) {
      MPI_Testall(5, r, &flag, MPI_STATUSES_IGNORE);
      ++testall;
    }
  }
  MPI_Pcontrol(-1, "testall");

  for (int phase = 0; phase < 2; ++phase) {
    MPI_Pcontrol(1, phase == 0 ? "waitsome" : "testsome");
    for (int it = 0; it < 50; ++it) {
      for (int i = 0; i < 3; ++i)
        MPI_Irecv(in[i], 24, MPI_BYTE, MPI_ANY_SOURCE, 3 + i, MPI_COMM_WORLD, &r[i]);
      for (int i = 0; i < 3; ++i)
        MPI_Isend(out[i], 24, MPI_BYTE, right, 3 + i, MPI_COMM_WORLD, &r[3 + i]);
      MPI_Isend(out[0], 24, MPI_BYTE, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r[6]);
      int done = 0, outcount = 0, indices[7];
      while (done < 7) {
        if (phase == 0) {
          MPI_Waitsome(7, r, &outcount, indices, MPI_STATUSES_IGNORE);
          ++waitsome;
        } else {
          MPI_Testsome(7, r, &outcount, indices, MPI_STATUSES_IGNORE);
          ++testsome;
        }
        if (outcount != MPI_UNDEFINED) done += outcount;
      }
    }
    MPI_Pcontrol(-1, phase == 0 ? "waitsome" : "testsome");
  }

  MPI_Pcontrol(1, "waitany");
  for (int it = 0; it < 50; ++it) {
    for (int i = 0; i < 2; ++i) MPI_Irecv(in[i], 40, MPI_BYTE, left, 6, MPI_COMM_WORLD, &r[i]);
    for (int i = 0; i < 2; ++i)
      MPI_Isend(out[i], 40, MPI_BYTE, right, 6, MPI_COMM_WORLD, &r[2 + i]);
    for (int k = 0; k < 4; ++k) {
      int index = -1;
      MPI_Status st;
      MPI_Waitany(4, r, &index, &st);
      CHECK(index >= 0 && index < 4, "waitany index");
    }
  }
  MPI_Pcontrol(-1, "waitany");

  MPI_Pcontrol(1, "testany");
  for (int it = 0; it < 50; ++it) {
    for (int i = 0; i < 2; ++i) MPI_Irecv(in[i], 48, MPI_BYTE, left, 7, MPI_COMM_WORLD, &r[i]);
    for (int i = 0; i < 2; ++i)
      MPI_Isend(out[i], 48, MPI_BYTE, right, 7, MPI_COMM_WORLD, &r[2 + i]);
    int done = 0;
    while (done < 4) {
      int index = -1, flag = 0;
      MPI_Testany(4, r, &index, &flag, MPI_STATUS_IGNORE);
      ++testany;
      if (flag && index != MPI_UNDEFINED) ++done;
    }
  }
  MPI_Pcontrol(-1, "testany");

  MPI_Pcontrol(1, "post");
  MPI_Irecv(in[0], 32, MPI_BYTE, left, 8, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(out[0], 32, MPI_BYTE, right, 8, MPI_COMM_WORLD, &r[1]);
  MPI_Pcontrol(-1, "post");
  MPI_Pcontrol(1, "complete");
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  MPI_Pcontrol(-1, "complete");

  MPI_Pcontrol(1, "init");
  MPI_Recv_init(in[0], 56, MPI_BYTE, left, 9, MPI_COMM_WORLD, &r[0]);
  MPI_Send_init(out[0], 56, MPI_BYTE, right, 9, MPI_COMM_WORLD, &r[1]);
  MPI_Pcontrol(-1, "init");
  MPI_Pcontrol(1, "start");
  for (int i = 0; i < 3; ++i) {
    MPI_Startall(2, r);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  }
  MPI_Request_free(&r[0]);
  MPI_Request_free(&r[1]);
  MPI_Pcontrol(-1, "start");

  if (argc > 1) {
    MPI_Pcontrol(1, "io");
    MPI_File fh;
    int data[16];
    for (int i = 0; i < 16; ++i) data[i] = rank;
    CHECK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS,
          "file open");
    MPI_File_iwrite_shared(fh, data, 16, MPI_INT, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Pcontrol(-1, "io");
  }

  printf("prof_requests: rank %d testall %ld testsome %ld testany %ld waitsome %ld\n", rank,
         testall, testsome, testany, waitsome);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
