// One halo exchange strategy: every rank sends face k of its send buffer to send_to[k] and
// receives face k of its receive buffer from recv_from[k] (buffers hold one face of `bytes`
// after the other, in offset order). A strategy is built once per message size (where it
// creates communicators or persistent requests) and executed many times.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "neighbourhood.hpp"
#include "strategy_registry.hpp"

namespace petacomm::apps::halo {

struct HaloSetup {
  MPI_Comm comm;  // ranks in logical order
  const LogicalGrid *grid;
  std::string stencil;
  const Neighbours *neighbours;  // -1 entries: no neighbour
  std::size_t bytes;             // per face
  unsigned char *send, *recv;    // face k at k * bytes
};

class HaloExchange {
 public:
  virtual ~HaloExchange() = default;
  virtual void exchange() = 0;  // collective
};

struct ExchangeEntry {
  StrategyAbout about;
  // Empty when the strategy can run this exchange, else why not (same on every rank).
  std::string (*not_applicable)(const HaloSetup &setup);
  std::unique_ptr<HaloExchange> (*make)(const HaloSetup &setup);  // collective
};

const StrategyRegistry<ExchangeEntry> &exchanges();

// MPI_PROC_NULL for a missing neighbour (the p2p strategies send to it as a no-op).
inline int mpi_rank(int rank) { return rank < 0 ? MPI_PROC_NULL : rank; }

}  // namespace petacomm::apps::halo
