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

bool clock_is_global() {
  int *global = nullptr, found = 0;
  PETACOMM_APP_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &found));
  return found && global && *global;
}

Span global_span(const std::vector<double> &starts, const std::vector<double> &ends,
                 MPI_Comm comm) {
  const std::size_t n = starts.size();
  std::vector<double> mine(3 * n), most(3 * n);
  for (std::size_t k = 0; k < n; ++k) {
    mine[3 * k] = starts[k];
    mine[3 * k + 1] = -starts[k];
    mine[3 * k + 2] = ends[k];
  }
  PETACOMM_APP_MPI(
      MPI_Allreduce(mine.data(), most.data(), static_cast<int>(3 * n), MPI_DOUBLE, MPI_MAX, comm));
  Span s;
  for (std::size_t k = 0; k < n; ++k) {
    s.last_start_to_last_end += (most[3 * k + 2] - most[3 * k]) / n;
    s.start_spread += (most[3 * k] + most[3 * k + 1]) / n;
  }
  return s;
}

}  // namespace petacomm::apps
