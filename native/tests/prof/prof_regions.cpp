// Regions from C++ (PETACOMM_PROF_REGION and the inline C functions), nesting, pausing with
// MPI_Pcontrol(0), and MPI_Pcontrol(1) without a name (as mpi4py calls it).
//   outer: 1 MPI_Allreduce (8 B), 1 MPI_Barrier (closes it: LBST)
//   inner (inside outer, entered twice): per entry 1 MPI_Bcast (16 B, root 0), 1 MPI_Barrier
//   paused: 1 MPI_Allreduce that must not be recorded
#include <petacomm/prof.h>

#include <cstdio>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failures = 0;
  {
    PETACOMM_PROF_REGION("outer");
    double x = 1.0, sum = 0.0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size) ++failures;
    for (int i = 0; i < 2; ++i) {
      petacomm_prof_begin("inner");
      int v[4] = {rank, rank, rank, rank};
      MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
      if (v[3] != 0) ++failures;
      MPI_Barrier(MPI_COMM_WORLD);
      petacomm_prof_end("inner");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Pcontrol(0);
  int one = 1, n = 0;
  MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Pcontrol(1);  // no name: resumes recording, opens no region
  if (n != size) ++failures;
  MPI_Finalize();
  if (rank == 0) std::printf("prof_regions: %d ranks, %d failures\n", size, failures);
  return failures ? 1 : 0;
}
