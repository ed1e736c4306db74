/* Intercommunicators under the profiler. Even and odd world ranks form two groups joined by
 * an intercommunicator; partners are recorded as world ranks:
 *   even rank 2i sends 24 bytes to remote rank i (world 2i+1) when it exists, odd rank 2i+1
 *   receives them; a broadcast from the even group's rank 0 (MPI_ROOT) reaches the odd
 *   group (root recorded as world rank 0); the merged intracommunicator does an
 *   MPI_Allreduce of one int. With one rank there is no second group: nothing is done. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, failures = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size >= 2) {
    const int even = rank % 2 == 0;
    MPI_Comm half, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, even ? 0 : 1, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, even ? 1 : 0, 77, &inter);
    int local, remote;
    MPI_Comm_rank(inter, &local);
    MPI_Comm_remote_size(inter, &remote);
    char buf[24];
    if (even && local < remote) {
      for (int i = 0; i < 24; ++i) buf[i] = (char)local;
      MPI_Send(buf, 24, MPI_CHAR, local, 3, inter);
    } else if (!even) {
      MPI_Recv(buf, 24, MPI_CHAR, local, 3, inter, MPI_STATUS_IGNORE);
      if (buf[5] != (char)local) ++failures;
    }
    int data[2] = {42, 43};
    if (even)
      MPI_Bcast(data, 2, MPI_INT, local == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    else {
      data[0] = data[1] = 0;
      MPI_Bcast(data, 2, MPI_INT, 0, inter);
      if (data[1] != 43) ++failures;
    }
    MPI_Intercomm_merge(inter, even ? 0 : 1, &merged);
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, merged);
    if (total != size) ++failures;
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  int all = 0;
  MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) printf("prof_intercomm: %d ranks, %d failures\n", size, all);
  return all ? 1 : 0;
}
