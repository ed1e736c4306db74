// All-pairs exchange of shared keys, the execution of the allgather and directory
// strategies: every holder of a key sends its value to every other holder and folds what
// it receives in rank order, in place, touching only the shared keys. d (d - 1) values per key.
#pragma once

#include <mpi.h>

#include <memory>

#include "exchange.hpp"
#include "sharing.hpp"
#include "strategy.hpp"

namespace petacomm::xchg {

// Collective over comm (with the neighbor transport). name: a static string. send_window:
// Exchange's.
std::unique_ptr<Strategy> make_pairwise(const char *name, MPI_Comm comm, int tag,
                                        const Sharing &sharing, Transport transport,
                                        SetupClock *clock, int send_window);

}  // namespace petacomm::xchg
