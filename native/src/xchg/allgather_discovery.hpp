// The study's discovery: a buffered MPI_Allgather of every rank's key list, each received
// key looked up in the local index. O(p n_max) traffic and work per rank: kept as the
// reference the directory is measured against.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "nbx.hpp"
#include "sharing.hpp"

namespace petacomm::xchg {

// Collective. keys ascending and distinct; buffer_keys keys per rank per Allgather round.
Sharing allgather_discover(MPI_Comm comm, const std::vector<std::int64_t> &keys,
                           std::int64_t buffer_keys, SetupTraffic &traffic, SetupClock *clock);

}  // namespace petacomm::xchg
