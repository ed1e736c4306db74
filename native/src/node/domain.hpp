// A memory domain: the layer's communicators, the node's shared window and the rank map.
//
//   comm     the layer's duplicate of the caller's communicator (its ranks are "ranks")
//   node     the ranks of this node (MPI_Comm_split_type SHARED, cut into virtual nodes of
//            node_size ranks), in rank order, so local rank order is rank order
//   leaders  local rank 0 of every node, in rank order: a node's index is its leader's rank
//            here (MPI_COMM_NULL elsewhere); used by the collectives
//   gateway  a duplicate of leaders for gateway traffic, so it never meets collectives
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "petacomm/node.h"
#include "shm_layout.hpp"

namespace petacomm::node {

struct Location {
  int node;
  int local;
};

class Domain {
 public:
  // Collective over comm; options already checked and agreed on every rank.
  Domain(MPI_Comm comm, const petacomm_node_options &o);
  ~Domain();
  Domain(const Domain &) = delete;
  Domain &operator=(const Domain &) = delete;

  // Collective over the node: unmaps the window and frees the communicators. Skipped (local
  // memory only) after MPI_Finalize.
  void release();

  MPI_Comm comm() const { return comm_; }
  MPI_Comm node_comm() const { return node_; }
  MPI_Comm leader_comm() const { return leaders_; }
  MPI_Comm gateway_comm() const { return gateway_; }

  int rank() const { return rank_; }
  int size() const { return size_; }
  int node() const { return node_index_; }
  int nodes() const { return nodes_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  bool is_leader() const { return local_rank_ == 0; }
  int leader() const { return local_ranks_[0]; }
  int node_size_setting() const { return node_size_setting_; }
  int domains() const { return domains_; }
  bool oversubscribed() const { return oversubscribed_; }
  const Geometry &geometry() const { return geometry_; }

  // Rank of local rank l of this node.
  int rank_of_local(int l) const { return local_ranks_[static_cast<std::size_t>(l)]; }
  // Local rank of `rank` if it is on this node, else -1.
  int local_of(int rank) const;
  // Node and local rank of any rank (binary search of the node's shared rank map).
  Location locate(int rank) const;
  int leader_of(int node) const;

  // Addresses in this process of the window parts of local rank l.
  char *segment(int l) const { return segments_[static_cast<std::size_t>(l)]; }
  SlotHeader *slot(int receiver, int sender, std::uint64_t seq) const {
    return reinterpret_cast<SlotHeader *>(
        segment(receiver) + geometry_.channel_offset(sender) + kCacheLine +
        static_cast<std::int64_t>(seq % static_cast<std::uint64_t>(geometry_.slots)) *
            geometry_.slot_bytes);
  }
  ChannelControl *channel(int receiver, int sender) const {
    return reinterpret_cast<ChannelControl *>(segment(receiver) + geometry_.channel_offset(sender));
  }
  // Descriptors from `receiver` to `sender`, in the sender's segment.
  RingProducer *ring_producer(int sender, int receiver) const {
    return reinterpret_cast<RingProducer *>(segment(sender) + geometry_.ring_offset(receiver));
  }
  RingConsumer *ring_consumer(int sender, int receiver) const {
    return reinterpret_cast<RingConsumer *>(segment(sender) + geometry_.ring_offset(receiver) +
                                            kCacheLine);
  }
  Descriptor *ring_entry(int sender, int receiver, std::uint64_t index) const {
    return reinterpret_cast<Descriptor *>(segment(sender) + geometry_.ring_offset(receiver) +
                                          2 * kCacheLine) +
           index % static_cast<std::uint64_t>(geometry_.descriptors);
  }
  CollControl *coll_control(int l) const {
    return reinterpret_cast<CollControl *>(segment(l) + geometry_.coll_offset());
  }
  char *coll_data(int l) const { return segment(l) + geometry_.coll_offset() + kCacheLine; }
  char *heap_base() const { return heap_base_; }
  std::int64_t heap_bytes() const { return geometry_.heap_bytes; }
  // Offset in the heap of [p, p + bytes), or -1 if that range is not inside the heap.
  std::int64_t heap_offset_of(const void *p, std::int64_t bytes) const;
  std::int64_t segment_bytes() const;

 private:
  void split(MPI_Comm comm, int node_size);
  void build_rank_map(std::vector<RankRun> &runs);
  void allocate_window(const petacomm_node_options &o, const std::vector<RankRun> &runs);

  MPI_Comm comm_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL, leaders_ = MPI_COMM_NULL,
           gateway_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  bool locked_ = false;
  int rank_ = 0, size_ = 1, node_index_ = 0, nodes_ = 1, local_rank_ = 0, local_size_ = 1;
  int node_size_setting_ = 0, domains_ = 1;
  bool oversubscribed_ = false;
  std::vector<int> local_ranks_;   // rank of every local rank (O(ranks per node))
  std::vector<char *> segments_;   // this process's address of every local segment
  const RankRun *runs_ = nullptr;  // the node's rank map, in the leader's segment
  std::int64_t nruns_ = 0;
  char *heap_base_ = nullptr;
  Geometry geometry_;
};

// True once MPI_Finalize has been called.
bool mpi_finalized();

}  // namespace petacomm::node
