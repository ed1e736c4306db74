// Point-to-point messaging inside a node, on the shared window (docs/node-layer.md has the
// diagram). Per ordered pair s -> r of local ranks:
//
//   slots      `slots` fixed-size slots in r's segment, written in sequence by s. A slot
//              holds a whole small message (eager), the header of a large one (rendezvous)
//              or a chunk of a large one being piped through. s writes slot seq % slots only
//              when it is empty: a full ring stalls the sender (flow control).
//   descriptors a ring in s's segment written by r: for each large message r has matched,
//              where the data goes (r's heap buffer: s copies once, "put"), or that r copied
//              it already from s's heap buffer ("pulled"), or that s must pipe it through the
//              slots (two copies, both private), or drop it (r's buffer too small).
//   completed  a counter in r's segment: descriptors s has fulfilled, stored after the data.
//
// The receiver matches (per source, in order, by tag), so probe and unexpected messages work
// and there is one matching authority; data placement is receiver-initiated. Unmatched
// eager messages stay in their slot until the sender needs that slot again; only then are
// they copied out ("spilled"); a sender that waits for a slot says so, and only then does
// its receiver spill the message in that slot, so a receiver that does not take its
// messages stalls its senders instead of buffering without bound.
//
// Messages to other nodes go to this node's gateway through the same channels (the header
// names the final destination); messages from other nodes arrive from the gateway with the
// original source in the header. A rank's state is O(ranks per node) plus its outstanding
// messages.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "buffer.hpp"
#include "domain.hpp"
#include "petacomm/node.h"

namespace petacomm::node {

// Tags the layer uses for itself; user tags are >= 0 and PETACOMM_NODE_ANY_TAG never
// matches these.
constexpr int kTagRpcCall = -2;     // an RPC header, to the servant
constexpr int kTagRpcBulk = -3;     // the RPC's bulk arguments, after its header
constexpr int kTagRpcReply = -4;    // the servant's answer
constexpr int kTagRpcResult = -5;   // the answer's bulk result, after it
constexpr int kTagCollective = -6;  // collectives moving data between a root and its leader

struct Request;
using Completion = std::function<void(Request &)>;

constexpr std::uint32_t kRequestLive = 0x6e6f6465;  // a request handed out and not released

struct Request {
  std::uint32_t magic = 0;
  bool is_send = false;
  bool user = true;  // internal requests are released by the engine after on_complete
  bool done = false;
  petacomm_status error = PETACOMM_SUCCESS;
  std::string error_message;
  Buffer buffer;  // send: the data; receive: where it goes (bytes = capacity)
  int peer = 0;   // send: destination; receive: source
  int tag = 0;
  int as_source = 0;  // send: the source written into the message
  std::uint64_t send_id = 0;
  std::int64_t moved = 0;  // pipelined transfers: bytes through so far
  petacomm_node_status status{};
  Completion on_complete;
};

// A message that has arrived and is waiting to be matched (or being matched).
struct Incoming {
  enum class Where : std::uint8_t { kSlot, kRendezvous, kHeld };
  Where where = Where::kSlot;
  int source = 0, dest = 0, tag = 0;
  std::int64_t bytes = 0;
  int channel = 0;                       // kSlot, kRendezvous: the local rank that wrote the slot
  std::uint64_t seq = 0;                 // kSlot
  std::uint64_t send_id = 0;             // kRendezvous
  std::int64_t sender_heap_offset = -1;  // kRendezvous: the send buffer, if in the heap
  std::shared_ptr<const char> held;      // kHeld: the data, in this process
};

// Takes arrivals that are not for user matching: messages to forward (on the gateway) and
// RPC calls (on the servant). Returns an internal receive to deliver the message into now.
class Claimer {
 public:
  virtual ~Claimer() = default;
  virtual Request *claim(const Incoming &in) = 0;
};

// The gateway's side of sends to other nodes made by the gateway rank itself.
class RemoteSender {
 public:
  virtual ~RemoteSender() = default;
  virtual void send_remote(Request *send) = 0;
};

class Engine {
 public:
  Engine(const Domain &domain, petacomm_node_counters &counters);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  void set_claimer(Claimer *claimer) { claimer_ = claimer; }
  void set_remote_sender(RemoteSender *remote) { remote_ = remote; }

  // Arguments are checked by the caller. as_source is the rank written as the source (this
  // rank except for gateway deliveries). on_complete runs for internal requests only.
  Request *post_send(const void *data, std::int64_t bytes, int dest, int tag, int as_source,
                     bool user, Completion on_complete = nullptr);
  Request *post_recv(void *data, std::int64_t capacity, int source, int tag, bool user,
                     Completion on_complete = nullptr);
  // An internal receive for a Claimer to return: matched to the claimed message at once.
  Request *post_claimed(void *data, std::int64_t capacity, Completion on_complete = nullptr);
  // A message that is already in this process (a gateway delivering to itself).
  void inject(Incoming in);
  // One pass over this rank's channels; true if anything moved.
  bool progress();
  // A matching message that has arrived (not received).
  bool probe(int source, int tag, petacomm_node_status *status);
  // Marks a request complete (the gateway completes the remote sends it took).
  void complete(Request *r);
  // Returns a completed user request to the pool.
  void release(Request *r);
  // Runs callbacks of internal requests that completed outside progress().
  void run_callbacks();

  std::int64_t eager_limit() const { return payload_; }
  std::int64_t outstanding_user() const { return outstanding_user_; }
  // Nothing queued, being piped, or waiting for a descriptor or a put.
  bool idle() const;
  std::int64_t private_bytes() const;

 private:
  struct OutChannel {  // this rank -> local rank j
    std::uint64_t next_seq = 0;
    std::uint64_t next_send_id = 0;
    std::uint64_t desc_head = 0;   // descriptors from j consumed
    std::uint64_t completed = 0;   // descriptors from j fulfilled
    std::uint64_t wanted = 0;      // last wait announced: 1 + the seq waiting for a slot
    std::deque<Request *> queued;  // sends waiting for a slot, in order
    std::deque<Request *> pipes;   // granted pipelined sends, in descriptor order
    std::unordered_map<std::uint64_t, Request *> awaiting;  // rendezvous without descriptor
  };
  struct Grant {
    DescriptorMode mode;
    std::uint64_t send_id;
    std::int64_t heap_offset;
    std::int64_t bytes;
    Request *recv;  // kPut, kPipeline: the receive completed by the transfer
  };
  struct InChannel {  // local rank j -> this rank
    std::uint64_t next_seq = 0;
    std::uint64_t desc_tail = 0;                           // descriptors published to j
    std::deque<Grant> to_grant;                            // decided, waiting for room in j's ring
    std::deque<std::pair<std::uint64_t, Request *>> puts;  // (descriptor, receive)
    std::deque<Request *> pipes;  // pipelined receives, in descriptor order
  };
  struct SourceQueues {
    std::deque<Incoming> unmatched;  // arrived, in order
    std::deque<Request *> posted;    // receives, in order
  };

  Request *make_request();
  SourceQueues &queues_for(int source);
  void forget_if_empty(int source);
  char *payload(SlotHeader *h) const { return reinterpret_cast<char *>(h) + kCacheLine; }
  Buffer slot_buffer(SlotHeader *h) const { return window_buffer(payload(h), payload_); }
  Buffer heap_buffer(std::int64_t offset, std::int64_t bytes) const {
    return window_buffer(domain_.heap_base() + offset, bytes, offset);
  }
  void start_send(Request *r);
  // The slot for this channel's next message, or nullptr (after announcing the wait) when
  // it is still full.
  SlotHeader *free_slot(int j);
  bool try_push(int j, Request *r);
  bool push_chunk(int j, Request *r);
  bool scan(int j);
  void spill(int j, SlotHeader *h);
  void arrive(Incoming in);
  void deliver(Incoming &in, Request *r);
  void discard(Incoming &in);
  void grant(int j, const Grant &g);
  bool publish(int j, const Grant &g);
  bool consume_descriptors(int j);
  bool push_out(int j);
  bool check_puts(int j);
  void bump_completed(int j);

  const Domain &domain_;
  petacomm_node_counters &counters_;
  Claimer *claimer_ = nullptr;
  RemoteSender *remote_ = nullptr;
  const int me_;    // local rank
  const int rank_;  // rank
  const std::int64_t payload_;
  std::vector<OutChannel> out_;
  std::vector<InChannel> in_;
  std::vector<SourceQueues> local_queues_;
  std::unordered_map<int, SourceQueues> remote_queues_;
  std::vector<std::unique_ptr<Request>> pool_;
  std::vector<Request *> free_;
  std::vector<Request *> finished_;  // internal requests whose callbacks are due
  bool in_callbacks_ = false;
  std::int64_t outstanding_user_ = 0;
  std::int64_t spilled_bytes_ = 0;
};

}  // namespace petacomm::node
