// pipelined: non-blocking point-to-point with at most `window` messages in flight each way.
// Rank me sends to me+1, me+2, ... and receives from me-1, me-2, ...; it packs the next
// block while earlier ones travel; blocks land in the output through receive datatypes.
#include <algorithm>

#include "blocks.hpp"
#include "cost_model.hpp"
#include "mpi_resources.hpp"
#include "strategy.hpp"

namespace petacomm::transpose {
namespace {

constexpr int kTag = 7302;

class PipelinedExchange final : public Exchange {
 public:
  explicit PipelinedExchange(const ExchangeSetup &s)
      : comm_(s.comm),
        element_(s.element),
        blocks_(s.geometry, s.q, s.me, false),
        window_(std::max(1, std::min(s.window, s.q - 1))),
        slot_(blocks_.max_block_bytes()),
        send_slots_(slot_ * window_) {
    landing_.resize(s.q);
    for (int k = 1; k < s.q; ++k) {
      int_count(blocks_.elements(s.me, (s.me + k) % s.q), "pipelined block");
      const int src = (s.me - k + s.q) % s.q;
      landing_[src] = Datatype(blocks_.landing_type(src, s.element));
    }
  }

  void execute(const char *in, char *out) override {
    const int q = blocks_.ranks(), me = blocks_.me();
    const bool in_place = in == out;
    std::vector<std::size_t> offset;
    if (in_place) {  // every block leaves the input before the output overwrites it
      offset.resize(q + 1, 0);
      for (int d = 0; d < q; ++d) offset[d + 1] = offset[d] + blocks_.bytes(me, d);
      all_.resize(offset.back());
      for (int d = 0; d < q; ++d) blocks_.pack(in, d, all_.data() + offset[d]);
    }
    // requests[0 .. window): receives, [window .. 2 window): sends (from send slot w).
    std::vector<MPI_Request> requests(2 * window_, MPI_REQUEST_NULL);
    int next_recv = 1, next_send = 1, received = 0;
    auto post_recv = [&](int w) {  // the block lands in the output directly
      const int src = (me - next_recv++ + q) % q;
      PETACOMM_CHECK_MPI(MPI_Irecv(out, 1, landing_[src].get(), src, kTag, comm_, &requests[w]));
    };
    auto post_send = [&](int w) {
      const int dst = (me + next_send++) % q;
      const char *block;
      if (in_place) {
        block = all_.data() + offset[dst];
      } else {
        blocks_.pack(in, dst, send_slots_.data() + w * slot_);
        block = send_slots_.data() + w * slot_;
      }
      PETACOMM_CHECK_MPI(MPI_Isend(block, static_cast<int>(blocks_.elements(me, dst)), element_,
                                   dst, kTag, comm_, &requests[window_ + w]));
    };
    try {
      for (int w = 0; w < window_ && next_recv < q; ++w) post_recv(w);
      for (int w = 0; w < window_ && next_send < q; ++w) post_send(w);
      // The own block while the first messages travel.
      if (in_place) {
        blocks_.unpack(all_.data() + offset[me], me, out);
      } else {
        blocks_.transpose_self(in, out);
      }
      // Until every block is received and every send posted (a rank may receive all its
      // blocks before its own sends are out).
      while (received < q - 1 || next_send < q) {
        int index = MPI_UNDEFINED;
        PETACOMM_CHECK_MPI(MPI_Waitany(2 * window_, requests.data(), &index, MPI_STATUS_IGNORE));
        if (index == MPI_UNDEFINED) fail_internal("pipelined: no request left to wait for");
        if (index < window_) {
          ++received;
          if (next_recv < q) post_recv(index);
        } else if (next_send < q) {
          post_send(index - window_);
        }
      }
      wait_all(requests);  // the last sends
    } catch (...) {
      for (MPI_Request &r : requests)
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Request_free(&r);
        }
      throw;
    }
  }
  double messages() const override {
    double n = 0;
    for (int k = 1; k < blocks_.ranks(); ++k)
      n += blocks_.elements(blocks_.me(), (blocks_.me() + k) % blocks_.ranks()) > 0;
    return n;
  }
  double bytes() const override {
    return static_cast<double>(blocks_.send_bytes() - blocks_.bytes(blocks_.me(), blocks_.me()));
  }
  std::size_t memory_bytes() const override { return send_slots_.size() + all_.size(); }

 private:
  MPI_Comm comm_;
  MPI_Datatype element_;
  Blocks blocks_;
  int window_;
  std::size_t slot_;
  Buffer send_slots_;
  Buffer all_;                     // in-place executions only
  std::vector<Datatype> landing_;  // per source: where its block lands in the output
};

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  const Volumes v = volumes(s, c);
  CostEstimate e;
  e.messages = s.q - 1;
  e.steps = 1;
  e.bytes = v.remote_bytes;
  const double link = link_seconds(v, e.bytes, c, &e.node_link_bytes);
  const double wire = (s.q - 1) * v.message_alpha + std::max(e.bytes * v.byte_beta, link);
  const double local = v.in_bytes * c.transpose_beta;  // packing; blocks land unpacked
  // Packing overlaps the transfers; one block's worth does not (fill, drain).
  e.seconds = std::max(wire, local) + std::min(wire, local) / std::max(1, s.q - 1);
  return e;
}

std::string applicable(const ProblemStats &) { return {}; }

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return std::make_unique<PipelinedExchange>(s);
}

}  // namespace

extern const TransposeStrategy kPipelined{
    {"pipelined",
     "non-blocking point-to-point with a bounded window of messages in flight, packing "
     "overlapped with the transfers, blocks received straight into the output: wins when "
     "local reordering costs as much as the network",
     "window"},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
