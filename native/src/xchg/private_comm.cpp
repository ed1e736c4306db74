#include "private_comm.hpp"

#include <utility>

#include "error.hpp"
#include "mpi_support.hpp"

namespace petacomm::xchg {

// One cached duplicate: held by the attribute on the caller's communicator (while cached)
// and by every plan using it.
struct PrivateCommShared {
  MPI_Comm comm = MPI_COMM_NULL;
  int next_tag = 0;   // first tag of the next plan's block
  int tag_limit = 0;  // MPI_TAG_UB
  int references = 0;
  std::shared_ptr<NodeTopology> nodes;  // found by the first plan that needed it
  int nodes_size = 0;                   // the node size it was found with (0: the machine)
};

namespace {

#ifdef SMPI_H
// SimGrid SMPI: its simulated ranks share one object per communicator, attributes included,
// so a duplicate cached by one rank would be found by the others; every plan duplicates.
constexpr bool kCacheOnCommunicator = false;
#else
constexpr bool kCacheOnCommunicator = true;
#endif

// Set when MPI_Finalize starts (it deletes MPI_COMM_SELF's attributes first): from then on
// the duplicates are left to MPI, which may be tearing communicators down already.
bool finalizing = false;

int note_finalize(MPI_Comm, int, void *, void *) {
  finalizing = true;
  return MPI_SUCCESS;
}

void drop(PrivateCommShared *shared) {
  if (--shared->references > 0) return;
  const bool can_free = !finalizing && !mpi_finalized();
  if (shared->nodes && !can_free) shared->nodes->abandon_communicators();
  shared->nodes.reset();
  if (shared->comm != MPI_COMM_NULL && can_free) MPI_Comm_free(&shared->comm);
  delete shared;
}

// The caller's communicator was freed (or MPI is finalising it): its reference goes.
int forget_cached(MPI_Comm, int, void *value, void *) {
  drop(static_cast<PrivateCommShared *>(value));
  return MPI_SUCCESS;
}

int cache_key() {
  static const int key = [] {
    int k = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, forget_cached, &k, nullptr),
              "MPI_Comm_create_keyval");
    int hook = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, note_finalize, &hook, nullptr),
              "MPI_Comm_create_keyval");
    check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, hook, nullptr), "MPI_Comm_set_attr");
    return k;
  }();
  return key;
}

}  // namespace

PrivateComm::PrivateComm(MPI_Comm user, SetupClock *clock) {
  PrivateCommShared *shared = nullptr;
  int found = 0;
  if (kCacheOnCommunicator)
    check_mpi(MPI_Comm_get_attr(user, cache_key(), &shared, &found), "MPI_Comm_get_attr");
  if (found && shared->next_tag + kTagsPerPlan > shared->tag_limit) {
    // Out of tags: plans made from now on use a fresh duplicate.
    check_mpi(MPI_Comm_delete_attr(user, cache_key()), "MPI_Comm_delete_attr");
    found = 0;
  }
  if (!found) {
    auto fresh = new PrivateCommShared;
    {
      MpiWait wait(clock);
      const int status = MPI_Comm_dup(user, &fresh->comm);
      if (status != MPI_SUCCESS) delete fresh;
      check_mpi(status, "MPI_Comm_dup");
    }
    int *upper = nullptr, has = 0;
    check_mpi(MPI_Comm_get_attr(fresh->comm, MPI_TAG_UB, &upper, &has), "MPI_Comm_get_attr");
    fresh->tag_limit = has && upper != nullptr ? *upper : 32767;
    if (kCacheOnCommunicator) {
      fresh->references = 1;  // the attribute's
      const int status = MPI_Comm_set_attr(user, cache_key(), fresh);
      if (status != MPI_SUCCESS) drop(fresh);
      check_mpi(status, "MPI_Comm_set_attr");
    }
    shared = fresh;
  }
  base_ = shared->next_tag;
  shared->next_tag += kTagsPerPlan;
  ++shared->references;
  shared_ = shared;
}

PrivateComm::~PrivateComm() { release(); }

PrivateComm::PrivateComm(PrivateComm &&other) noexcept
    : shared_(std::exchange(other.shared_, nullptr)), base_(other.base_) {}

PrivateComm &PrivateComm::operator=(PrivateComm &&other) noexcept {
  if (this != &other) {
    release();
    shared_ = std::exchange(other.shared_, nullptr);
    base_ = other.base_;
  }
  return *this;
}

MPI_Comm PrivateComm::get() const { return shared_ ? shared_->comm : MPI_COMM_NULL; }

std::shared_ptr<const NodeTopology> PrivateComm::nodes(SetupClock *clock) {
  PETACOMM_CHECK_INTERNAL(shared_ != nullptr, "node layout of a released communicator");
  const int size = node_size_from_environment();
  if (!shared_->nodes || shared_->nodes_size != size) {
    MpiWait wait(clock);
    shared_->nodes = std::make_shared<NodeTopology>(shared_->comm, size);
    shared_->nodes_size = size;
  }
  return shared_->nodes;
}

void PrivateComm::release() {
  if (shared_ != nullptr) drop(std::exchange(shared_, nullptr));
}

}  // namespace petacomm::xchg
