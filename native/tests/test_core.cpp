// Core C API: version strings, error reporting for bad arguments, MPI identification.
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "petacomm/core.h"

static int failures = 0;
#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

int main(int argc, char **argv) {
  char version[512];
  // Allowed before MPI_Init by the standard.
  CHECK(petacomm_mpi_library_version(version, sizeof version) == PETACOMM_SUCCESS);
  CHECK(std::strlen(version) > 0);
  MPI_Init(&argc, &argv);
  CHECK(std::strcmp(petacomm_version(), "") != 0);
  CHECK(petacomm_mpi_library_version(nullptr, 10) == PETACOMM_ERR_ARG);
  CHECK(std::strstr(petacomm_last_error(), "buf") != nullptr);
  CHECK(petacomm_mpi_library_version(version, 0) == PETACOMM_ERR_ARG);
  CHECK(std::strstr(petacomm_last_error(), "buflen") != nullptr);
  char tiny[4];
  CHECK(petacomm_mpi_library_version(tiny, sizeof tiny) == PETACOMM_SUCCESS);
  CHECK(std::strlen(tiny) == 3);
  CHECK(std::strcmp(petacomm_last_error(), "") == 0);
  int v = 0, sv = 0;
  CHECK(petacomm_mpi_standard_version(&v, &sv) == PETACOMM_SUCCESS && v >= 3);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("test_core: %s (%d failures)\n", all ? "FAILED" : "passed", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
