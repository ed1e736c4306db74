// The communicator plans talk on. Like PETSc's inner communicators: one duplicate of the
// caller's communicator, made when the first plan is created on it and cached on it as an
// attribute; each plan takes its own block of tags on it, so plans never receive each
// other's messages. Only the first plan on a communicator pays MPI_Comm_dup, a collective
// that synchronises every rank. Plans are created collectively, in the same order on every
// rank, so every rank hands out the same blocks without talking.
#pragma once

#include <mpi.h>

#include "mpi_support.hpp"

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
  // Releases the reference now (MPI_Comm_free when it was the last); get() is then NULL.
  void release();

 private:
  PrivateCommShared *shared_ = nullptr;
  int base_ = 0;
};

}  // namespace petacomm::xchg
