// The communicator plans talk on. Like PETSc's inner communicators: one duplicate of the
// caller's communicator, made when the first plan is created on it and cached on it as an
// attribute; each plan takes its own block of tags on it, so plans never receive each
// other's messages. Only the first plan on a communicator pays MPI_Comm_dup, a collective
// that synchronises every rank. Plans are created collectively, in the same order on every
// rank, so every rank hands out the same blocks without talking. The node layout of the
// duplicate (which ranks share a node) is found once too, for the planner's statistics.
#pragma once

#include <mpi.h>

#include <memory>

#include "mpi_support.hpp"
#include "node_topology.hpp"

namespace petacomm::xchg {

struct PrivateCommShared;

// Tags within a plan's block: tag = base + one of these.
enum PlanTag : int {
  kTagKeys,       // directory: keys to their homes (NBX)
  kTagReply,      // directory: holders back to each key's holders
  kTagHub,        // directory: hub numbers
  kTagPairs,      // all-pairs exchange
  kTagToOwner,    // owner, round 1
  kTagFromOwner,  // owner, round 2
  kTagHubRest,    // hub-split's all-pairs remainder
  kTagRange,      // range: keys to the owners of their part of the key range (NBX)
  kTagButterfly,  // butterfly: every step, at setup and per execution
  kTagBarrier,    // NBX's barrier under SimGrid SMPI (nbx.hpp)
  kTagsPerPlan = 16
};

class PrivateComm {
 public:
  PrivateComm() = default;
  // Collective over `user` when it has no cached duplicate yet (or its tags ran out).
  // Its MPI_Comm_dup is timed on `clock` (may be nullptr).
  PrivateComm(MPI_Comm user, SetupClock *clock);
  ~PrivateComm();  // releases this plan's reference (the duplicate lives while any holds one)
  PrivateComm(PrivateComm &&other) noexcept;
  PrivateComm &operator=(PrivateComm &&other) noexcept;
  PrivateComm(const PrivateComm &) = delete;
  PrivateComm &operator=(const PrivateComm &) = delete;

  MPI_Comm get() const;
  int tag_base() const { return base_; }
  int tag(PlanTag which) const { return base_ + which; }
  // Collective the first time on a duplicate (and when PETACOMM_NODE_SIZE changed): the
  // node layout of get(), shared by the plans on it. Its communicators serve blocking
  // collectives during plan creation only; a strategy that exchanges messages on them
  // during execution builds its own NodeTopology, so executions of plans never meet.
  std::shared_ptr<const NodeTopology> nodes(SetupClock *clock);
  // Releases the reference now (MPI_Comm_free when it was the last); get() is then NULL.
  void release();

 private:
  PrivateCommShared *shared_ = nullptr;
  int base_ = 0;
};

}  // namespace petacomm::xchg
