// alltoallv: every block packed (transposed) at its exact size, one MPI_Alltoallv, unpacked.
#include <algorithm>

#include "blocks.hpp"
#include "cost_model.hpp"
#include "mpi_resources.hpp"
#include "strategy.hpp"

namespace petacomm::transpose {
namespace {

class AlltoallvExchange final : public Exchange {
 public:
  explicit AlltoallvExchange(const ExchangeSetup &s)
      : comm_(s.comm),
        element_(s.element),
        blocks_(s.geometry, s.q, s.me, false),
        send_(blocks_.send_bytes()),
        recv_(blocks_.recv_bytes()) {
    std::int64_t sent = 0, received = 0;
    for (int r = 0; r < s.q; ++r) {
      send_displs_.push_back(int_count(sent, "alltoallv send displacement"));
      recv_displs_.push_back(int_count(received, "alltoallv receive displacement"));
      sent += blocks_.elements(s.me, r);
      received += blocks_.elements(r, s.me);
    }
    int_count(sent, "alltoallv send buffer");
    int_count(received, "alltoallv receive buffer");
  }

  void execute(const char *in, char *out) override {
    const int q = blocks_.ranks(), me = blocks_.me();
    const bool in_place = in == out;
    const std::size_t E = blocks_.elem();
    std::vector<int> send_counts(q), recv_counts(q);
    for (int r = 0; r < q; ++r) {
      const bool skip = r == me && !in_place;  // the own block never travels
      send_counts[r] = skip ? 0 : static_cast<int>(blocks_.elements(me, r));
      recv_counts[r] = skip ? 0 : static_cast<int>(blocks_.elements(r, me));
      if (send_counts[r] > 0) blocks_.pack(in, r, send_.data() + send_displs_[r] * E);
    }
    if (!in_place) blocks_.transpose_self(in, out);
    PETACOMM_CHECK_MPI(MPI_Alltoallv(send_.data(), send_counts.data(), send_displs_.data(),
                                     element_, recv_.data(), recv_counts.data(),
                                     recv_displs_.data(), element_, comm_));
    for (int r = 0; r < q; ++r)
      if (recv_counts[r] > 0) blocks_.unpack(recv_.data() + recv_displs_[r] * E, r, out);
  }
  double messages() const override {
    double n = 0;
    for (int r = 0; r < blocks_.ranks(); ++r)
      n += r != blocks_.me() && blocks_.elements(blocks_.me(), r) > 0;
    return n;
  }
  double bytes() const override {
    return static_cast<double>(blocks_.send_bytes() - blocks_.bytes(blocks_.me(), blocks_.me()));
  }
  std::size_t memory_bytes() const override { return send_.size() + recv_.size(); }

 private:
  MPI_Comm comm_;
  MPI_Datatype element_;
  Blocks blocks_;
  Buffer send_, recv_;
  std::vector<int> send_displs_, recv_displs_;
};

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  const Volumes v = volumes(s, c);
  CostEstimate e;
  e.messages = s.q - 1;
  e.steps = s.q - 1;
  e.bytes = v.remote_bytes;
  const double link = link_seconds(v, e.bytes, c, &e.node_link_bytes);
  e.seconds = (s.q - 1) * collective_alpha(v, c) + std::max(e.bytes * collective_beta(v, c), link) +
              pack_unpack_seconds(v, c);
  return e;
}

std::string applicable(const ProblemStats &s) {
  const BlockDistribution rows{s.n_rows, s.q}, cols{s.n_cols, s.q};
  const double elements =
      static_cast<double>(std::max(rows.count(0) * s.n_cols, cols.count(0) * s.n_rows)) *
      static_cast<double>(s.batch);
  if (elements > 2147483647.0) return "needs fewer than 2^31 elements per rank (int counts)";
  return {};
}

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return std::make_unique<AlltoallvExchange>(s);
}

}  // namespace

extern const TransposeStrategy kAlltoallv{
    {"alltoallv",
     "MPI_Alltoallv of packed blocks at their exact sizes: the usual choice when sizes are "
     "uneven and the MPI library's alltoallv is good",
     ""},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
