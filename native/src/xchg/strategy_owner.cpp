// owner: each shared key is reduced at one of its holders (the owner, chosen by a hash so
// owners are balanced) and the result sent back: 2 (d - 1) values per key in two rounds
// instead of d (d - 1) in one.
#include <algorithm>

#include "directory.hpp"
#include "error.hpp"
#include "registry.hpp"
#include "two_rounds.hpp"

namespace petacomm::xchg {
namespace {

class Owner final : public TwoRoundStrategy {
 public:
  Owner(MPI_Comm comm, const BuildContext &ctx) {
    int me = 0, p = 1;
    check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    build_rounds(ctx, owner_send_peers(*ctx.sharing, me, p), owner_recv_peers(*ctx.sharing, me, p),
                 me);
  }
  const char *name() const override { return "owner"; }
  void end(const ExecContext &ctx, void *data) override {
    gather_->wait();
    fold_->run(ctx.op, *gather_, data);  // the keys I own, reduced in rank order
    scatter_->start(data, ctx.type);     // their results back to their other holders
    scatter_->wait();
    copy_received(*scatter_, ctx.op.elem_bytes(), data);
  }
};

enum Term { kRound1, kRound2, kSetup, kMessages, kBytes, kTerms };

void rank_terms(const RankCost &in, double *out) {
  const petacomm_xchg_rank_stats &r = in.rank;
  const double s = static_cast<double>(r.owner_send_values);  // to owners
  const double v = static_cast<double>(r.owner_recv_values);  // from the holders of keys I own
  const double u = static_cast<double>(r.n_unique);
  const double messages = static_cast<double>(std::max(r.owner_sends, r.owner_recvs));
  const double gamma_e = in.elem_bytes * in.cost.params().local_beta;
  // Each round sends one way and receives the other: max(sends, receives) messages and
  // max(s, r) values. Round 1: pack s, fill u, fold own u, fold the r received; round 2:
  // pack the r results for the holders, copy the s results received.
  const double wire = exchange_time(in, messages, std::max(s, v));
  out[kRound1] = wire + (3.0 * u + 2.0 * s + 2.0 * v) * gamma_e;
  out[kRound2] = wire + 2.0 * (s + v) * gamma_e;
  out[kSetup] = directory_setup_time(in);
  out[kMessages] = static_cast<double>(r.owner_sends + r.owner_recvs);
  out[kBytes] = (s + v) * in.elem_bytes;
}

petacomm_xchg_prediction predict(const double *m, const GlobalCost &) {
  return {nullptr, m[kRound1] + m[kRound2], m[kSetup], m[kMessages], m[kBytes], 0, 0};
}

// The owner needs no holder lists except for the keys it owns (always returned).
int no_holder_lists(const petacomm_xchg_options &) { return 0; }

std::unique_ptr<Strategy> build(BuildContext &ctx) {
  return std::make_unique<Owner>(ctx.comm, ctx);
}

}  // namespace

extern const XchgStrategy kOwnerStrategy{
    {"owner",
     "each shared key reduced at one holder chosen by hash and the result sent back: "
     "2(d-1) values per key in two rounds; wins for keys held by many ranks",
     "transport send_window"},
    Discovery::kDirectory,
    no_holder_lists,
    kTerms,
    rank_terms,
    predict,
    always_a_candidate,
    build,
};

}  // namespace petacomm::xchg
