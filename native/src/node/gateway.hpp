// The gateway: the node leader carries all traffic between its node and other nodes.
//
//   rank x (node A) --shared memory--> gateway A ==MPI==> gateway B --shared memory--> rank y
//
// Outbound, small messages to the same node are appended to one batch per destination node,
// flushed as one MPI message at the end of each progress pass (or when it would exceed
// aggregate_bytes); a large message is announced by a head packet sent at once (so it keeps
// its place among the batches) and follows as fragments of at most max_mpi_bytes once it is
// staged. Inbound, batches are unpacked and every message is delivered through shared memory
// with its original source; a large message waits for its fragments, and only messages of
// the same (source, destination) pair wait behind it.
//
// MPI order between two gateways (one communicator, one tag for packets; the fragments of
// each large message have a tag its head names)
// plus FIFO channels inside both nodes keep messages of one source to one destination in
// order. The gateway's state is its batches, its MPI requests in flight and its deliveries in
// progress: nothing per rank or per node of the job beyond the nodes it is talking to.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine.hpp"
#include "heap.hpp"

namespace petacomm::node {

class Gateway : public RemoteSender {
 public:
  Gateway(const Domain &domain, Engine &engine, StagingPool &staging,
          petacomm_node_counters &counters, const petacomm_node_options &options);
  ~Gateway() override;
  Gateway(const Gateway &) = delete;
  Gateway &operator=(const Gateway &) = delete;

  // A message from a rank of this node to another node: returns the internal receive that
  // takes its data (into the batch, or into staging for large ones).
  Request *claim_forward(const Incoming &in);
  // A send of the gateway rank itself to another node.
  void send_remote(Request *send) override;
  // Receives packets, completes MPI requests, delivers, flushes batches.
  bool progress();

  // For free: all local forwards staged and sent, nothing of ours left in MPI.
  bool outbound_done() const;
  std::int64_t mpi_messages_sent() const { return counters_.mpi_messages_sent; }
  std::int64_t mpi_messages_received() const { return counters_.mpi_messages_received; }
  std::int64_t private_bytes() const;

 private:
  struct Delivery {
    int source = 0, dest = 0, tag = 0;
    std::int64_t bytes = 0;
    std::shared_ptr<const char> data;
    std::vector<MPI_Request> fragments;  // a large message still arriving
  };
  struct Outgoing {
    std::vector<MPI_Request> requests;
    std::shared_ptr<const void> hold;  // what the requests read from
    Request *send = nullptr;           // a send of the gateway rank to complete with them
  };

  char *append_item(int node, int source, int dest, int tag, std::int64_t bytes);
  void flush(int node);
  void flush_all();
  // Returns the tag the message's fragments will carry.
  int send_head(int node, int source, int dest, int tag, std::int64_t bytes);
  void send_fragments(int node, int fragment_tag, const char *data, std::int64_t bytes,
                      std::shared_ptr<const void> hold, Request *send);
  bool receive_packets();
  void unpack(const std::shared_ptr<char> &packet, std::int64_t bytes, int from);
  void enqueue(Delivery d);
  bool deliver_ready();
  void hand_over(Delivery &d);
  bool complete_outgoing();

  const Domain &domain_;
  Engine &engine_;
  StagingPool &staging_;
  petacomm_node_counters &counters_;
  const MPI_Comm comm_;
  const std::int64_t aggregate_bytes_, max_mpi_bytes_;
  std::unordered_map<int, std::vector<char>> batches_;  // destination node -> packet
  std::deque<Outgoing> outgoing_;
  std::deque<Delivery> deliveries_;    // in arrival order; only blocked ones stay
  std::int64_t forwards_staging_ = 0;  // large forwards claimed, data not yet staged
  int fragment_tags_ = 1;              // fragment tags in use: kFirstFragmentTag + [0, n)
  std::unordered_map<int, std::uint64_t> next_fragment_tag_;  // per destination node
};

}  // namespace petacomm::node
