// Which ranks share a node. The ranks of one machine (MPI_Comm_split_type with
// MPI_COMM_TYPE_SHARED) form a node; a virtual node size k (the node_size argument, or the
// environment variable PETACOMM_NODE_SIZE) splits each machine's ranks further into nodes of
// k consecutive ranks, so node-aware algorithms can be exercised on one machine.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "error.hpp"

namespace petacomm {

// PETACOMM_NODE_SIZE as a positive integer, 0 when unset or empty; ERR_ARG naming the
// variable when it is set to anything else.
inline int node_size_from_environment() {
  const char *text = std::getenv("PETACOMM_NODE_SIZE");
  if (text == nullptr || *text == '\0') return 0;
  errno = 0;
  char *end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 1 || value > (1 << 30))
    fail_arg("PETACOMM_NODE_SIZE: expected a positive integer, got '", text, "'");
  return static_cast<int>(value);
}

// Collective over comm: the node communicators and the leaders' communicator. Owns them.
class NodeTopology {
 public:
  // node_size > 0: virtual nodes of that many ranks; 0: PETACOMM_NODE_SIZE or the machine.
  NodeTopology(MPI_Comm comm, int node_size) {
    if (node_size < 0) fail_arg("node_size: must be >= 0, got ", node_size);
    if (node_size == 0) node_size = node_size_from_environment();
    int rank = 0, size = 1;
    PETACOMM_CHECK_MPI(MPI_Comm_rank(comm, &rank));
    PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &size));
    MPI_Comm machine = MPI_COMM_NULL;
    PETACOMM_CHECK_MPI(
        MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &machine));
    int machine_rank = 0;
    PETACOMM_CHECK_MPI(MPI_Comm_rank(machine, &machine_rank));
    if (node_size > 0) {
      PETACOMM_CHECK_MPI(MPI_Comm_split(machine, machine_rank / node_size, rank, &node_));
      PETACOMM_CHECK_MPI(MPI_Comm_free(&machine));
    } else {
      node_ = machine;
    }
    PETACOMM_CHECK_MPI(MPI_Comm_rank(node_, &node_rank_));
    PETACOMM_CHECK_MPI(MPI_Comm_size(node_, &node_ranks_));
    PETACOMM_CHECK_MPI(MPI_Comm_split(comm, node_rank_ == 0 ? 0 : MPI_UNDEFINED, rank, &leaders_));
    // Every rank learns every rank's node (numbered by the leaders' order) and local rank.
    int node_index = 0;
    if (leaders_ != MPI_COMM_NULL) PETACOMM_CHECK_MPI(MPI_Comm_rank(leaders_, &node_index));
    PETACOMM_CHECK_MPI(MPI_Bcast(&node_index, 1, MPI_INT, 0, node_));
    int mine[2] = {node_index, node_rank_};
    std::vector<int> all(2 * static_cast<std::size_t>(size));
    PETACOMM_CHECK_MPI(MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm));
    node_of_.resize(size);
    local_rank_of_.resize(size);
    for (int r = 0; r < size; ++r) {
      node_of_[r] = all[2 * r];
      local_rank_of_[r] = all[2 * r + 1];
      nodes_ = std::max(nodes_, node_of_[r] + 1);
    }
    members_.assign(nodes_, {});
    for (int r = 0; r < size; ++r) members_[node_of_[r]].push_back(r);
    for (const auto &m : members_) max_node_ranks_ = std::max<int>(max_node_ranks_, m.size());
  }
  ~NodeTopology() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (leaders_ != MPI_COMM_NULL) MPI_Comm_free(&leaders_);
    if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
  }
  // MPI is finalising: the communicators are left to it (the destructor frees nothing).
  void abandon_communicators() { node_ = leaders_ = MPI_COMM_NULL; }
  NodeTopology(const NodeTopology &) = delete;
  NodeTopology &operator=(const NodeTopology &) = delete;

  MPI_Comm node() const { return node_; }        // this rank's node
  MPI_Comm leaders() const { return leaders_; }  // one rank per node; MPI_COMM_NULL elsewhere
  int node_rank() const { return node_rank_; }
  int node_ranks() const { return node_ranks_; }
  int nodes() const { return nodes_; }
  int max_node_ranks() const { return max_node_ranks_; }
  int node_of(int rank) const { return node_of_[rank]; }
  int local_rank_of(int rank) const { return local_rank_of_[rank]; }
  // Ranks (of the communicator given at construction) on node n, in rank order.
  const std::vector<int> &members(int n) const { return members_[n]; }

 private:
  MPI_Comm node_ = MPI_COMM_NULL, leaders_ = MPI_COMM_NULL;
  int node_rank_ = 0, node_ranks_ = 1, nodes_ = 0, max_node_ranks_ = 0;
  std::vector<int> node_of_, local_rank_of_;
  std::vector<std::vector<int>> members_;
};

}  // namespace petacomm
