// Collective agreement on argument errors, for collective creation calls of any family: one
// MPI_Allreduce tells every rank whether some rank's arguments were bad (and, optionally,
// whether a fingerprint of the options differs between ranks), so that all ranks fail
// together instead of some of them waiting forever in the next collective.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

namespace petacomm {

// If `problem` is non-empty on any rank, or `fingerprint` differs between ranks, every rank
// throws fail_arg: a rank with a problem with its own message, the others naming the lowest
// failing rank, then `outcome` (e.g. "no layer was created"); a fingerprint mismatch with
// `mismatch` on every rank.
void agree_or_fail(MPI_Comm comm, const std::string &problem, std::uint64_t fingerprint,
                   const char *mismatch, const char *outcome);

}  // namespace petacomm
