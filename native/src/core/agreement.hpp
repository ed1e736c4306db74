// Collective argument checks: a collective call checks its arguments on every rank, then
// all ranks learn together whether any rank found a problem, so a bad argument on one rank
// fails the call everywhere (before anything is sent) instead of leaving the others
// waiting in a collective the faulty rank never enters.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "error.hpp"

namespace petacomm {

// Collective over comm. `problem` is this rank's complaint ("" when its arguments are
// fine). `fingerprint` must be equal on every rank (a hash of arguments that must agree);
// if it is not, every rank fails with `mismatch`. On failure every rank throws ERR_ARG: a
// rank with a problem gives its own message, the others the message of the lowest failing
// rank, prefixed by that rank. One MPI_Allreduce of three integers when all is well.
inline void fail_together(MPI_Comm comm, const std::string &problem, std::uint64_t fingerprint = 0,
                          const char *mismatch = "") {
  int rank = 0;
  PETACOMM_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  const std::int64_t none = INT64_MAX;
  // Minimum of the failing ranks, of the fingerprint and of its complement: the two
  // minima name the same value on every rank exactly when all fingerprints are equal.
  std::int64_t local[3] = {problem.empty() ? none : rank,
                           static_cast<std::int64_t>(fingerprint >> 1),
                           static_cast<std::int64_t>(~fingerprint >> 1)};
  std::int64_t global[3];
  PETACOMM_CHECK_MPI(MPI_Allreduce(local, global, 3, MPI_INT64_T, MPI_MIN, comm));
  const bool agree = static_cast<std::uint64_t>(global[1]) ==
                     (~static_cast<std::uint64_t>(global[2]) & (UINT64_MAX >> 1));
  if (global[0] == none) {
    if (!agree) fail_arg(mismatch);
    return;
  }
  // Error path only: the lowest failing rank tells the others its message.
  const int root = static_cast<int>(global[0]);
  int length = rank == root ? static_cast<int>(problem.size()) : 0;
  PETACOMM_CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT, root, comm));
  std::vector<char> text(static_cast<std::size_t>(length) + 1, '\0');
  if (rank == root) problem.copy(text.data(), problem.size());
  PETACOMM_CHECK_MPI(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm));
  if (!problem.empty()) fail_arg(problem);
  fail_arg("rank ", root, ": ", text.data());
}

}  // namespace petacomm
