#include "agreement.hpp"

#include "error.hpp"

namespace petacomm {

void agree_or_fail(MPI_Comm comm, const std::string &problem, std::uint64_t fingerprint,
                   const char *mismatch, const char *outcome) {
  int rank = 0, size = 1;
  PETACOMM_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &size));
  // One MIN reduction: the lowest failing rank, the smallest fingerprint and the smallest
  // complement (the complement of the largest fingerprint).
  const std::uint64_t mine[3] = {static_cast<std::uint64_t>(problem.empty() ? size : rank),
                                 fingerprint, ~fingerprint};
  std::uint64_t low[3];
  PETACOMM_CHECK_MPI(MPI_Allreduce(mine, low, 3, MPI_UINT64_T, MPI_MIN, comm));
  if (low[0] != static_cast<std::uint64_t>(size)) {
    if (!problem.empty()) fail_arg(problem);
    fail_arg("invalid arguments on rank ", low[0], " (see that rank's error); ", outcome);
  }
  if (low[1] != ~low[2]) fail_arg(mismatch);
}

}  // namespace petacomm
