// alltoall: every block packed (transposed) into an equal slot of the largest block's size,
// one MPI_Alltoall, unpacked. Uneven distributions pad the smaller blocks.
#include <algorithm>

#include "blocks.hpp"
#include "cost_model.hpp"
#include "mpi_resources.hpp"
#include "strategy.hpp"

namespace petacomm::transpose {
namespace {

class AlltoallExchange final : public Exchange {
 public:
  explicit AlltoallExchange(const ExchangeSetup &s)
      : comm_(s.comm),
        blocks_(s.geometry, s.q, s.me, false),
        slot_(blocks_.max_block_bytes()),
        send_(slot_ * s.q),
        recv_(slot_ * s.q),
        slot_type_(contiguous_type(static_cast<std::int64_t>(slot_ / s.geometry.elem), s.element,
                                   "alltoall block")) {}

  void execute(const char *in, char *out) override {
    const int q = blocks_.ranks(), me = blocks_.me();
    const bool in_place = in == out;
    for (int d = 0; d < q; ++d)
      if (d != me || in_place) blocks_.pack(in, d, send_.data() + d * slot_);
    if (!in_place) blocks_.transpose_self(in, out);  // the own block never travels
    PETACOMM_CHECK_MPI(
        MPI_Alltoall(send_.data(), 1, slot_type_.get(), recv_.data(), 1, slot_type_.get(), comm_));
    for (int r = 0; r < q; ++r)
      if (r != me || in_place) blocks_.unpack(recv_.data() + r * slot_, r, out);
  }
  double messages() const override { return slot_ > 0 ? blocks_.ranks() - 1 : 0; }
  double bytes() const override { return static_cast<double>(slot_) * (blocks_.ranks() - 1); }
  std::size_t memory_bytes() const override { return send_.size() + recv_.size(); }

 private:
  MPI_Comm comm_;
  Blocks blocks_;
  std::size_t slot_;
  Buffer send_, recv_;
  Datatype slot_type_;
};

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  const Volumes v = volumes(s, c);
  CostEstimate e;
  e.messages = s.q - 1;
  e.steps = s.q - 1;
  e.bytes = v.max_block_bytes * (s.q - 1);
  const double link = link_seconds(v, e.bytes, c, &e.node_link_bytes);
  e.seconds = (s.q - 1) * collective_alpha(v, c) + std::max(e.bytes * collective_beta(v, c), link) +
              pack_unpack_seconds(v, c);
  return e;
}

std::string applicable(const ProblemStats &) { return {}; }

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return std::make_unique<AlltoallExchange>(s);
}

}  // namespace

extern const TransposeStrategy kAlltoall{
    {"alltoall",
     "MPI_Alltoall of packed equal blocks (padded to the largest block when sizes are uneven): "
     "wins where the MPI library's alltoall is well tuned and blocks are even",
     ""},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
