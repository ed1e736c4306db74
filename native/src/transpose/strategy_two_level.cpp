// two-level: node-aware. Every rank packs all its blocks (grouped by destination node) and
// gives them to its node's leader; the leaders trade one message per pair of nodes; each
// leader hands its members what they receive. Fewer, larger messages between nodes at the
// price of the gathers, the scatters and the leaders' copies.
#include <algorithm>
#include <cstring>

#include "blocks.hpp"
#include "cost_model.hpp"
#include "mpi_resources.hpp"
#include "node_stage.hpp"
#include "node_topology.hpp"
#include "strategy.hpp"

namespace petacomm::transpose {
namespace {

class TwoLevelExchange final : public Exchange {
 public:
  explicit TwoLevelExchange(const ExchangeSetup &s)
      : comm_(s.comm),
        element_(s.element),
        blocks_(s.geometry, s.q, s.me, false),
        nodes_(s.comm, s.node_size),
        stage_(make_node_stage(nodes_.node(), s.element, s.geometry.elem)),
        send_(blocks_.send_bytes()),
        recv_(blocks_.recv_bytes()) {
    // My blocks in the order the leaders forward them: by destination node, then rank.
    for (int n = 0; n < nodes_.nodes(); ++n)
      for (int d : nodes_.members(n)) order_.push_back(d);
    if (nodes_.leaders() == MPI_COMM_NULL) return;
    const std::vector<int> &mine = nodes_.members(nodes_.node_of(s.me));
    for (int m : mine) {
      gathered_bytes_.push_back(total(m, order_, true));
      scattered_bytes_.push_back(total(m, order_, false));
    }
    std::size_t gathered = 0, scattered = 0;
    for (std::size_t k = 0; k < mine.size(); ++k) {
      gathered += gathered_bytes_[k];
      scattered += scattered_bytes_[k];
    }
    gathered_.resize(gathered);
    outbound_.resize(gathered);
    inbound_.resize(scattered);
    scattered_.resize(scattered);
    // Leader exchange: to node n, every member's blocks to n's ranks.
    std::int64_t out_at = 0, in_at = 0;
    for (int n = 0; n < nodes_.nodes(); ++n) {
      std::int64_t out = 0, in = 0;
      for (int m : mine)
        for (int d : nodes_.members(n)) {
          out += blocks_.elements(m, d);
          in += blocks_.elements(d, m);
        }
      send_counts_.push_back(int_count(out, "two-level leader message"));
      recv_counts_.push_back(int_count(in, "two-level leader message"));
      send_displs_.push_back(int_count(out_at, "two-level leader buffer"));
      recv_displs_.push_back(int_count(in_at, "two-level leader buffer"));
      out_at += out;
      in_at += in;
    }
  }

  void execute(const char *in, char *out) override {
    // 1. Pack everything (the input is dead afterwards: in place is safe).
    std::size_t at = 0;
    for (int d : order_) {
      blocks_.pack(in, d, send_.data() + at);
      at += blocks_.bytes(blocks_.me(), d);
    }
    // 2-4. Members to leader, leader to leaders, leader to members.
    stage_->gather(send_.data(), send_.size(), gathered_.data(), gathered_bytes_);
    if (nodes_.leaders() != MPI_COMM_NULL) exchange_between_leaders();
    stage_->scatter(scattered_.data(), scattered_bytes_, recv_.data(), recv_.size());
    // 5. Unpack: from every source rank, by node then rank.
    at = 0;
    for (int src : order_) {
      blocks_.unpack(recv_.data() + at, src, out);
      at += blocks_.bytes(src, blocks_.me());
    }
  }
  double messages() const override {
    double n = stage_messages();
    if (nodes_.leaders() != MPI_COMM_NULL)
      for (int k = 0; k < nodes_.nodes(); ++k)
        n += k != nodes_.node_of(blocks_.me()) && send_counts_[k] > 0;
    return n;
  }
  double bytes() const override {
    // What leaves this rank: its packed blocks to the leader (unless it is the leader),
    // the leader's messages to other nodes and its scatters to its members.
    double b = nodes_.node_rank() == 0 ? 0.0 : static_cast<double>(send_.size());
    if (nodes_.leaders() != MPI_COMM_NULL) {
      const int mine = nodes_.node_of(blocks_.me());
      for (int k = 0; k < nodes_.nodes(); ++k)
        if (k != mine) b += static_cast<double>(send_counts_[k]) * blocks_.elem();
      for (std::size_t m = 1; m < scattered_bytes_.size(); ++m)
        b += static_cast<double>(scattered_bytes_[m]);
    }
    return b;
  }
  std::size_t memory_bytes() const override {
    return send_.size() + recv_.size() + gathered_.size() + outbound_.size() + inbound_.size() +
           scattered_.size();
  }

 private:
  double stage_messages() const {
    if (nodes_.node_rank() != 0) return send_.size() == 0 ? 0 : 1;
    double n = 0;
    for (std::size_t m = 1; m < scattered_bytes_.size(); ++m) n += scattered_bytes_[m] > 0;
    return n;
  }
  // Bytes member m sends in all (outgoing) or receives in all.
  std::size_t total(int m, const std::vector<int> &others, bool outgoing) const {
    std::size_t sum = 0;
    for (int r : others) sum += outgoing ? blocks_.bytes(m, r) : blocks_.bytes(r, m);
    return sum;
  }

  void exchange_between_leaders() {
    const std::vector<int> &mine = nodes_.members(nodes_.node_of(blocks_.me()));
    // gathered: member k's blocks, grouped by destination node. outbound: by destination
    // node, then member, then destination rank.
    std::vector<std::size_t> member_at(mine.size(), 0);
    for (std::size_t k = 1; k < mine.size(); ++k)
      member_at[k] = member_at[k - 1] + gathered_bytes_[k - 1];
    char *out = outbound_.data();
    for (int n = 0; n < nodes_.nodes(); ++n)
      for (std::size_t k = 0; k < mine.size(); ++k) {
        std::size_t group = 0;
        for (int d : nodes_.members(n)) group += blocks_.bytes(mine[k], d);
        std::memcpy(out, gathered_.data() + member_at[k], group);
        out += group;
        member_at[k] += group;
      }
    PETACOMM_CHECK_MPI(MPI_Alltoallv(outbound_.data(), send_counts_.data(), send_displs_.data(),
                                     element_, inbound_.data(), recv_counts_.data(),
                                     recv_displs_.data(), element_, nodes_.leaders()));
    // inbound from node n: for each source s of n, blocks (s -> each of my members). Each
    // member receives, from every source by node then rank, its block.
    std::vector<std::size_t> dest_at(mine.size(), 0);
    for (std::size_t k = 1; k < mine.size(); ++k)
      dest_at[k] = dest_at[k - 1] + scattered_bytes_[k - 1];
    const char *from = inbound_.data();
    for (int n = 0; n < nodes_.nodes(); ++n)
      for (int src : nodes_.members(n))
        for (std::size_t k = 0; k < mine.size(); ++k) {
          const std::size_t b = blocks_.bytes(src, mine[k]);
          std::memcpy(scattered_.data() + dest_at[k], from, b);
          dest_at[k] += b;
          from += b;
        }
  }

  MPI_Comm comm_;
  MPI_Datatype element_;
  Blocks blocks_;
  NodeTopology nodes_;
  std::unique_ptr<NodeStage> stage_;
  std::vector<int> order_;
  Buffer send_, recv_;
  // Leaders only.
  std::vector<std::size_t> gathered_bytes_, scattered_bytes_;
  Buffer gathered_, outbound_, inbound_, scattered_;
  std::vector<int> send_counts_, recv_counts_, send_displs_, recv_displs_;
};

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  const Volumes v = volumes(s, c);
  CostEstimate e;
  const double members = v.c - 1;
  // The leader's share of the node's data: c ranks' inputs in, c ranks' outputs out.
  const double node_in = v.c * v.in_bytes, node_out = v.c * v.out_bytes;
  const double off_node = v.q > 1 ? static_cast<double>(v.q - v.c) / v.q : 0.0;
  const double between = node_in * off_node;
  e.messages = (v.nodes - 1) + members;
  e.steps = 3;
  e.bytes = between + (node_out - v.out_bytes);
  const double link = link_seconds(v, v.remote_bytes, c, &e.node_link_bytes);
  const double gather = members * c.p2p_alpha + (node_in - v.in_bytes) * c.p2p_beta;
  const double scatter = members * c.p2p_alpha + (node_out - v.out_bytes) * c.p2p_beta;
  const double leaders = (v.nodes - 1) * c.net_alpha + std::max(between * c.net_beta, link);
  const double copies = (node_in + node_out) * c.copy_beta;
  e.seconds = gather + copies + leaders + scatter + v.in_bytes * c.transpose_beta +
              v.out_bytes * c.copy_beta;
  return e;
}

std::string applicable(const ProblemStats &) { return {}; }

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return std::make_unique<TwoLevelExchange>(s);
}

}  // namespace

extern const TransposeStrategy kTwoLevel{
    {"two-level",
     "node-aware: gather to one leader per node, one message per pair of nodes between "
     "leaders, scatter; wins when many ranks per node send small messages across nodes",
     "node_size"},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
