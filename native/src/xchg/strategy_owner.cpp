// owner: each shared key is reduced at one of its holders (the owner, chosen by a hash so
// owners are balanced) and the result sent back: 2 (d - 1) values per key in two rounds
// instead of d (d - 1) in one.
#include <algorithm>

#include "directory.hpp"
#include "error.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

class Owner final : public Strategy {
 public:
  Owner(MPI_Comm comm, const BuildContext &ctx) {
    const Sharing &sharing = *ctx.sharing;
    const Transport transport = ctx.transport;
    int me = 0, p = 1;
    check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    PeerList to_owner = owner_send_peers(sharing, me, p);
    PeerList from_holders = owner_recv_peers(sharing, me, p);
    PeerList back_to_holders = from_holders;
    PeerList from_owner = to_owner;
    gather_ = std::make_unique<Exchange>(comm, std::move(to_owner), std::move(from_holders),
                                         transport, ctx.tag(kTagToOwner), ctx.clock);
    scatter_ = std::make_unique<Exchange>(comm, std::move(back_to_holders), std::move(from_owner),
                                          transport, ctx.tag(kTagFromOwner), ctx.clock);
    fold_ = std::make_unique<RankOrderFold>(gather_->recvs(), me);
  }
  const char *name() const override { return "owner"; }
  void start(const ExecContext &ctx, const void *data) override { gather_->start(data, ctx.type); }
  void begin(const ExecContext &, void *) override {}
  void end(const ExecContext &ctx, void *data) override {
    gather_->wait();
    fold_->run(ctx.op, *gather_, data);  // the keys I own, reduced in rank order
    scatter_->start(data, ctx.type);     // their results back to their other holders
    scatter_->wait();
    copy_received(*scatter_, ctx.op.elem_bytes(), data);
  }
  void abandon() override {
    if (gather_->started()) gather_->wait();
  }
  Traffic traffic() const override {
    return Traffic{static_cast<double>(gather_->messages() + scatter_->messages()),
                   static_cast<double>(gather_->entries() + scatter_->entries())};
  }
  std::size_t schedule_bytes() const override {
    return gather_->schedule_bytes() + scatter_->schedule_bytes() + fold_->memory_bytes();
  }
  std::int64_t buffer_entries() const override {
    return gather_->buffer_entries() + scatter_->buffer_entries() +
           static_cast<std::int64_t>(fold_->keys());
  }

 private:
  std::unique_ptr<Exchange> gather_, scatter_;
  std::unique_ptr<RankOrderFold> fold_;
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
     "transport"},
    Discovery::kDirectory,
    no_holder_lists,
    kTerms,
    rank_terms,
    predict,
    always_a_candidate,
    build,
};

}  // namespace petacomm::xchg
