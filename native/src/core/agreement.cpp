#include "agreement.hpp"

#include <vector>

#include "error.hpp"

namespace petacomm {

void agree_or_fail(MPI_Comm comm, const std::string &problem, std::uint64_t fingerprint,
                   const char *mismatch, const char *outcome) {
  int rank = 0, size = 1;
  PETACOMM_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &size));
  // One MIN reduction: the lowest failing rank, the smallest fingerprint and the smallest
  // complement (the complement of the largest fingerprint): equal fingerprints everywhere
  // exactly when the smallest is the complement of the smallest complement.
  const std::uint64_t mine[3] = {static_cast<std::uint64_t>(problem.empty() ? size : rank),
                                 fingerprint, ~fingerprint};
  std::uint64_t low[3];
  PETACOMM_CHECK_MPI(MPI_Allreduce(mine, low, 3, MPI_UINT64_T, MPI_MIN, comm));
  if (low[0] == static_cast<std::uint64_t>(size)) {
    if (low[1] != ~low[2]) fail_arg(mismatch);
    return;
  }
  // Error path only: the lowest failing rank tells the others what it found.
  const int root = static_cast<int>(low[0]);
  int length = rank == root ? static_cast<int>(problem.size()) : 0;
  PETACOMM_CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT, root, comm));
  std::vector<char> text(static_cast<std::size_t>(length) + 1, '\0');
  if (rank == root) problem.copy(text.data(), problem.size());
  PETACOMM_CHECK_MPI(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm));
  if (!problem.empty()) fail_arg(problem);
  if (outcome != nullptr) fail_arg("rank ", root, ": ", text.data(), "; ", outcome);
  fail_arg("rank ", root, ": ", text.data());
}

}  // namespace petacomm
