// Node-aware: the faces travel through petacomm's node layer (node.h). Neighbours on the
// same (virtual) node exchange through the node's shared-memory window; faces for other
// nodes go through the two nodes' gateways, small ones batched into one MPI message per
// pair of nodes. The face buffers are allocated in the node heap, so a face between ranks of
// one node moves with a single copy (the sender puts it straight into the receive buffer).
// The layer numbers ranks as launched, so with a mapping file (reorder mode) virtual nodes
// of as many ranks as the file's nodes hold are the nodes of the mapping.
#include <petacomm/node.h>

#include <algorithm>
#include <vector>

#include "error.hpp"
#include "exchange.hpp"

namespace petacomm::apps::halo {
namespace {

// Heap for the face buffers above this: they stay in private memory (two copies per face)
// rather than make every node map a huge window.
constexpr std::int64_t kHeapBuffersLimit = std::int64_t{1} << 30;
constexpr std::int64_t kCacheLine = 64;

void check(petacomm_status status, const char *call) {
  if (status != PETACOMM_SUCCESS) throw Error(status, concat(call, ": ", petacomm_last_error()));
}

std::int64_t round_up(std::int64_t bytes) {
  return (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
}

class NodeExchange final : public HaloExchange {
 public:
  explicit NodeExchange(const HaloSetup &s) : s_(s) {
    const std::size_t faces = s.neighbours->offsets.size();
    petacomm_node_options opts;
    check(petacomm_node_options_default(&opts), "petacomm_node_options_default");
    opts.node_size = s.node_size;
    int ranks = 1;
    PETACOMM_APP_MPI(MPI_Comm_size(s.comm, &ranks));
    // Every rank of a node takes its two buffers from the node's heap; a node holds at most
    // node_size ranks (all of them when the size is the whole shared-memory domain).
    const int sharing = s.node_size > 0 ? std::min(s.node_size, ranks) : ranks;
    const std::int64_t per_rank = 2 * round_up(static_cast<std::int64_t>(faces * s.bytes));
    in_heap_ = per_rank * sharing <= kHeapBuffersLimit;
    if (in_heap_) opts.heap_bytes += per_rank * sharing;
    check(petacomm_node_create(s.launched, &opts, &node_), "petacomm_node_create");
    auto launched = [&](int logical) {
      return logical < 0 || s.launched_rank == nullptr
                 ? logical
                 : (*s.launched_rank)[static_cast<std::size_t>(logical)];
    };
    for (std::size_t k = 0; k < faces; ++k) {
      send_to_.push_back(launched(s.neighbours->send_to[k]));
      recv_from_.push_back(launched(s.neighbours->recv_from[k]));
    }
    if (in_heap_) {
      void *send = nullptr, *recv = nullptr;
      const auto bytes = static_cast<std::int64_t>(faces * s.bytes);
      check(petacomm_node_alloc(node_, bytes, &send), "petacomm_node_alloc (send faces)");
      check(petacomm_node_alloc(node_, bytes, &recv), "petacomm_node_alloc (receive faces)");
      send_ = static_cast<unsigned char *>(send);
      recv_ = static_cast<unsigned char *>(recv);
      // The servant answers allocations only inside layer calls: keep every rank in the
      // layer until all of its node have theirs.
      check(petacomm_node_barrier(node_, PETACOMM_NODE_SCOPE_ALL), "petacomm_node_barrier");
    } else {
      send_ = s.send;
      recv_ = s.recv;
    }
    requests_.assign(2 * faces, nullptr);
  }
  // Collective (every rank destroys the exchange after the same exchange); free lets the
  // gateways finish forwarding, and the heap buffers go with the layer.
  ~NodeExchange() override {
    if (node_ != nullptr) petacomm_node_free(&node_);
  }

  void exchange() override {
    const std::size_t faces = s_.neighbours->offsets.size();
    const auto bytes = static_cast<std::int64_t>(s_.bytes);
    int n = 0;  // the layer's waitall takes live requests only (none for missing neighbours)
    for (std::size_t k = 0; k < faces; ++k)
      if (recv_from_[k] >= 0)
        check(petacomm_node_irecv(node_, recv_ + k * s_.bytes, bytes, recv_from_[k],
                                  static_cast<int>(k), &requests_[n++]),
              "petacomm_node_irecv");
    for (std::size_t k = 0; k < faces; ++k)
      if (send_to_[k] >= 0)
        check(petacomm_node_isend(node_, send_ + k * s_.bytes, bytes, send_to_[k],
                                  static_cast<int>(k), &requests_[n++]),
              "petacomm_node_isend");
    check(petacomm_node_waitall(node_, n, requests_.data(), nullptr), "petacomm_node_waitall");
  }

  long long messages_in_node() const override {
    petacomm_node_counters c;
    check(petacomm_node_get_counters(node_, &c), "petacomm_node_get_counters");
    return c.local_messages;
  }

  unsigned char *send_buffer(const HaloSetup &) override { return send_; }
  unsigned char *recv_buffer(const HaloSetup &) override { return recv_; }

  // Faces may still sit in a gateway when its own exchange is complete: the layer barrier
  // keeps every rank forwarding until all have theirs (an MPI barrier could strand them).
  void synchronize(MPI_Comm) override {
    check(petacomm_node_barrier(node_, PETACOMM_NODE_SCOPE_ALL), "petacomm_node_barrier");
  }

 private:
  HaloSetup s_;
  petacomm_node node_ = nullptr;
  std::vector<int> send_to_, recv_from_;  // the neighbours as launched ranks (-1: none)
  bool in_heap_ = false;
  unsigned char *send_ = nullptr, *recv_ = nullptr;
  std::vector<petacomm_node_request> requests_;  // receives, then sends
};

std::string always(const HaloSetup &) { return {}; }
std::unique_ptr<HaloExchange> make(const HaloSetup &s) { return std::make_unique<NodeExchange>(s); }

}  // namespace

extern const ExchangeEntry kNode;
const ExchangeEntry kNode{
    {"node",
     "node-aware layer (node.h): faces in the node heap, shared memory inside a node, "
     "gateways between nodes",
     "node_size"},
    always,
    make,
    true};

}  // namespace petacomm::apps::halo
