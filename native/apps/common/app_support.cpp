#include "app_support.hpp"

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

}  // namespace petacomm::apps
