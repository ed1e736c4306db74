#include "app_support.hpp"

#include <cstdio>
#include <vector>

namespace petacomm::apps {

void agree_on_error(const std::string &local_error, MPI_Comm comm) {
  int rank = 0, size = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &size));
  int mine = local_error.empty() ? size : rank, first = size;
  PETACOMM_APP_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;
  int length = rank == first ? static_cast<int>(local_error.size()) : 0;
  PETACOMM_APP_MPI(MPI_Bcast(&length, 1, MPI_INT, first, comm));
  std::string message = rank == first ? local_error : std::string(length, ' ');
  PETACOMM_APP_MPI(MPI_Bcast(message.data(), length, MPI_CHAR, first, comm));
  throw Error(PETACOMM_ERR_ARG, message);
}

int main_of_app(const char *program, int argc, char **argv, int (*run)(int, char **)) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const Error &e) {
    if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    status = e.status() == PETACOMM_ERR_ARG ? 2 : 1;
  }
  MPI_Finalize();
  return status;
}

}  // namespace petacomm::apps
