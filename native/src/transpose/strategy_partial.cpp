// partial: the filter-aware transpose. Given the mask (columns that may be nonzero), a block
// carries only its kept rows and columns; blocks with nothing kept are not sent and pairs
// with nothing to trade exchange no message. Non-blocking point-to-point to the real
// partners only.
#include <algorithm>

#include "blocks.hpp"
#include "cost_model.hpp"
#include "mpi_resources.hpp"
#include "strategy.hpp"

namespace petacomm::transpose {
namespace {

constexpr int kTag = 7303;

class PartialExchange final : public Exchange {
 public:
  explicit PartialExchange(const ExchangeSetup &s)
      : comm_(s.comm), element_(s.element), blocks_(s.geometry, s.q, s.me, true) {
    std::size_t sent = 0, received = 0;
    for (int r = 0; r < s.q; ++r) {
      if (r == s.me) continue;
      if (blocks_.elements(s.me, r) > 0) {
        int_count(blocks_.elements(s.me, r), "partial block");
        dests_.push_back({r, sent});
        sent += blocks_.bytes(s.me, r);
      }
      if (blocks_.elements(r, s.me) > 0) {
        int_count(blocks_.elements(r, s.me), "partial block");
        sources_.push_back({r, received});
        received += blocks_.bytes(r, s.me);
      }
    }
    send_.resize(sent);
    recv_.resize(received);
  }

  void execute(const char *in, char *out) override {
    const int me = blocks_.me();
    const bool in_place = in == out;
    std::vector<MPI_Request> recvs(sources_.size(), MPI_REQUEST_NULL);
    std::vector<MPI_Request> sends(dests_.size(), MPI_REQUEST_NULL);
    try {
      for (std::size_t k = 0; k < sources_.size(); ++k) {
        const int src = sources_[k].rank;
        PETACOMM_CHECK_MPI(MPI_Irecv(recv_.data() + sources_[k].offset,
                                     static_cast<int>(blocks_.elements(src, me)), element_, src,
                                     kTag, comm_, &recvs[k]));
      }
      for (std::size_t k = 0; k < dests_.size(); ++k) {
        const int dst = dests_[k].rank;
        char *block = send_.data() + dests_[k].offset;
        blocks_.pack(in, dst, block);
        PETACOMM_CHECK_MPI(MPI_Isend(block, static_cast<int>(blocks_.elements(me, dst)), element_,
                                     dst, kTag, comm_, &sends[k]));
      }
      if (in_place) {  // the own block through a buffer: the input is the output
        own_.resize(blocks_.bytes(me, me));
        blocks_.pack(in, me, own_.data());
        blocks_.unpack(own_.data(), me, out);
      } else {
        blocks_.transpose_self(in, out);
      }
      for (std::size_t done = 0; done < sources_.size(); ++done) {
        int k = MPI_UNDEFINED;
        PETACOMM_CHECK_MPI(
            MPI_Waitany(static_cast<int>(recvs.size()), recvs.data(), &k, MPI_STATUS_IGNORE));
        if (k == MPI_UNDEFINED) fail_internal("partial: no receive left to wait for");
        blocks_.unpack(recv_.data() + sources_[k].offset, sources_[k].rank, out);
      }
      wait_all(sends);
    } catch (...) {
      for (auto *list : {&recvs, &sends})
        for (MPI_Request &r : *list)
          if (r != MPI_REQUEST_NULL) {
            MPI_Cancel(&r);
            MPI_Request_free(&r);
          }
      throw;
    }
  }
  double messages() const override { return static_cast<double>(dests_.size()); }
  double bytes() const override { return static_cast<double>(send_.size()); }
  std::size_t memory_bytes() const override {
    return send_.size() + recv_.size() + own_.size() +
           (dests_.size() + sources_.size()) * sizeof(Partner);
  }

 private:
  struct Partner {
    int rank;
    std::size_t offset;
  };
  MPI_Comm comm_;
  MPI_Datatype element_;
  Blocks blocks_;
  std::vector<Partner> dests_, sources_;
  Buffer send_, recv_, own_;
};

// Kept columns in each rank's column block.
std::vector<double> kept_columns(const ProblemStats &s) {
  const BlockDistribution cols{s.n_cols, s.q};
  std::vector<double> kept(s.q, 0);
  for (int r = 0; r < s.q; ++r)
    for (std::int64_t j = cols.offset(r); j < cols.offset(r) + cols.count(r); ++j)
      kept[r] += s.col_kept.empty() || s.col_kept[j];
  return kept;
}

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  const Volumes v = volumes(s, c);
  const BlockDistribution rows{s.n_rows, s.q};
  const std::vector<double> kept = kept_columns(s);
  const double unit = static_cast<double>(s.batch) * s.elem;
  CostEstimate e;
  // Rank 0 (the most rows) sends its rows x the kept columns of every other rank; the rank
  // with the most kept columns receives the most.
  double most_kept = 0, kept_total = 0;
  for (int r = 0; r < s.q; ++r) {
    kept_total += kept[r];
    most_kept = std::max(most_kept, kept[r]);
    if (r > 0 && kept[r] > 0) {
      e.messages += 1;
      e.bytes += static_cast<double>(rows.count(0)) * kept[r] * unit;
    }
  }
  const double received = (static_cast<double>(s.n_rows - rows.count(0))) * most_kept * unit;
  e.steps = 1;
  const double link = link_seconds(v, std::max(e.bytes, received), c, &e.node_link_bytes);
  const double wire =
      e.messages * v.message_alpha + std::max(std::max(e.bytes, received) * v.byte_beta, link);
  const double packed = static_cast<double>(rows.count(0)) * kept_total * unit;
  const double zeroed = v.out_bytes - static_cast<double>(s.n_rows) * most_kept * unit;
  const double local =
      packed * c.transpose_beta + received * c.copy_beta + std::max(0.0, zeroed) * c.copy_beta;
  e.seconds = wire + local;
  return e;
}

std::string applicable(const ProblemStats &s) {
  if (s.col_kept.empty()) return "needs a mask (the columns that may be nonzero)";
  return {};
}

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return std::make_unique<PartialExchange>(s);
}

}  // namespace

extern const TransposeStrategy kPartial{
    {"partial",
     "filter-aware: given a mask of the columns that may be nonzero, sends only those and "
     "skips the pairs that carry nothing (the study's partial transposes)",
     "mask"},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
