// Collective argument checks for every family: a collective call checks its arguments on
// every rank, then all ranks learn together whether any rank found a problem, so a bad
// argument on one rank fails the call everywhere (before anything is sent) instead of
// leaving the others waiting in a collective the faulty rank never enters.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

namespace petacomm {

// Collective over comm. `problem` is this rank's complaint ("" when its arguments are
// fine); `fingerprint` a hash of the arguments that must agree between ranks. One
// MPI_Allreduce of three integers when all is well. Otherwise every rank throws ERR_ARG:
// a rank with a problem with its own message, the others with the lowest failing rank's
// message prefixed by "rank R: " and followed by "; " + `outcome` when given ("no plan was
// created"); when only the fingerprints differ, every rank with `mismatch`.
void agree_or_fail(MPI_Comm comm, const std::string &problem, std::uint64_t fingerprint = 0,
                   const char *mismatch = "arguments differ between ranks; they must agree",
                   const char *outcome = nullptr);

}  // namespace petacomm
