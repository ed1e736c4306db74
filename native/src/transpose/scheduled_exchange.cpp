#include "scheduled_exchange.hpp"

#include <algorithm>

#include "blocks.hpp"
#include "cost_model.hpp"
#include "mpi_resources.hpp"

namespace petacomm::transpose {
namespace {

constexpr int kTag = 7301;

class ScheduledExchange final : public Exchange {
 public:
  ScheduledExchange(const ExchangeSetup &s, std::vector<int> partners)
      : comm_(s.comm),
        element_(s.element),
        blocks_(s.geometry, s.q, s.me, false),
        partners_(std::move(partners)),
        send_(blocks_.max_block_bytes()) {
    landing_.resize(s.q);
    for (int p : partners_)
      if (p >= 0) {
        int_count(blocks_.elements(s.me, p), "sendrecv block");
        landing_[p] = Datatype(blocks_.landing_type(p, s.element));
      }
  }

  void execute(const char *in, char *out) override {
    const int me = blocks_.me();
    const bool in_place = in == out;
    std::vector<std::size_t> offset;
    if (in_place) {
      // Every block leaves the input before the output overwrites it.
      offset.resize(blocks_.ranks() + 1, 0);
      for (int d = 0; d < blocks_.ranks(); ++d) offset[d + 1] = offset[d] + blocks_.bytes(me, d);
      all_.resize(offset.back());
      for (int d = 0; d < blocks_.ranks(); ++d) blocks_.pack(in, d, all_.data() + offset[d]);
    } else {
      blocks_.transpose_self(in, out);
    }
    for (int p : partners_) {
      if (p < 0) continue;
      const char *block = send_.data();
      if (in_place) {
        block = all_.data() + offset[p];
      } else {
        blocks_.pack(in, p, send_.data());
      }
      // The partner's block lands in the output directly (no unpacking copy).
      PETACOMM_CHECK_MPI(MPI_Sendrecv(block, static_cast<int>(blocks_.elements(me, p)), element_, p,
                                      kTag, out, 1, landing_[p].get(), p, kTag, comm_,
                                      MPI_STATUS_IGNORE));
    }
    if (in_place) blocks_.unpack(all_.data() + offset[me], me, out);
  }
  double messages() const override {
    double n = 0;
    for (int p : partners_) n += p >= 0 && blocks_.elements(blocks_.me(), p) > 0;
    return n;
  }
  double bytes() const override {
    return static_cast<double>(blocks_.send_bytes() - blocks_.bytes(blocks_.me(), blocks_.me()));
  }
  std::size_t memory_bytes() const override {
    return send_.size() + all_.size() + partners_.size() * sizeof(int);
  }

 private:
  MPI_Comm comm_;
  MPI_Datatype element_;
  Blocks blocks_;
  std::vector<int> partners_;
  Buffer send_;
  Buffer all_;                     // in-place executions only
  std::vector<Datatype> landing_;  // per partner: where its block lands in the output
};

}  // namespace

std::unique_ptr<Exchange> make_scheduled_exchange(const ExchangeSetup &s,
                                                  std::vector<int> partners) {
  return std::make_unique<ScheduledExchange>(s, std::move(partners));
}

CostEstimate scheduled_cost(const ProblemStats &s, const petacomm_transpose_cost_params &c,
                            const std::vector<int> &rank0_partners) {
  const Volumes v = volumes(s, c);
  CostEstimate e;
  e.steps = static_cast<double>(rank0_partners.size());
  // Each round waits for the slower pair: charge the largest block per round.
  double wire = 0;
  for (int p : rank0_partners) {
    if (p < 0) continue;
    e.messages += 1;
    wire += on_node(v, p) ? c.p2p_alpha + v.max_block_bytes * c.p2p_beta
                          : c.net_alpha + v.max_block_bytes * c.net_beta;
  }
  e.bytes = v.remote_bytes;
  const double link = link_seconds(v, e.bytes, c, &e.node_link_bytes);
  // Blocks land in the output by receive datatypes: packing only, no unpacking copy.
  e.seconds = std::max(wire, link) + v.in_bytes * c.transpose_beta;
  return e;
}

}  // namespace petacomm::transpose
