// One halo exchange strategy: every rank sends face k of its send buffer to send_to[k] and
// receives face k of its receive buffer from recv_from[k] (buffers hold one face of `bytes`
// after the other, in offset order). A strategy is built once per message size (where it
// creates communicators, persistent requests or a node layer) and executed many times.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "app_support.hpp"
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
  int node_size = 0;             // node-aware strategies: ranks per virtual node (0: default)
  // The ranks as launched (rank order of MPI_COMM_WORLD), where a mapping file put them
  // node by node, and per logical rank its launched rank (nullptr: the same). Node-aware
  // strategies build their nodes from launched ranks, so virtual nodes follow the mapping.
  MPI_Comm launched = MPI_COMM_NULL;
  const std::vector<int> *launched_rank = nullptr;
};

class HaloExchange {
 public:
  virtual ~HaloExchange() = default;
  virtual void exchange() = 0;  // collective
  // Where the faces to send are written and the received ones checked: the setup's buffers,
  // unless the strategy hands out memory of its own (shared memory moves a face in one copy).
  virtual unsigned char *send_buffer(const HaloSetup &s) { return s.send; }
  virtual unsigned char *recv_buffer(const HaloSetup &s) { return s.recv; }
  // Lines the ranks up before a timed exchange (collective). A layer with gateways must keep
  // progressing here, so it uses its own barrier instead of MPI's.
  virtual void synchronize(MPI_Comm comm) { PETACOMM_APP_MPI(MPI_Barrier(comm)); }
  // Node-aware strategies: messages this rank sent to ranks of its own node so far (self
  // included); -1 where the strategy does not know nodes.
  virtual long long messages_in_node() const { return -1; }
};

struct ExchangeEntry {
  StrategyAbout about;
  // Empty when the strategy can run this exchange, else why not (same on every rank).
  std::string (*not_applicable)(const HaloSetup &setup);
  std::unique_ptr<HaloExchange> (*make)(const HaloSetup &setup);  // collective
  bool uses_node_size = false;                                    // runs once per --node-size
};

const StrategyRegistry<ExchangeEntry> &exchanges();

// MPI_PROC_NULL for a missing neighbour (the p2p strategies send to it as a no-op).
inline int mpi_rank(int rank) { return rank < 0 ? MPI_PROC_NULL : rank; }

}  // namespace petacomm::apps::halo
