// Strategies that reduce each key at one rank and send the result back (owner, range):
// round 1 gathers the holders' values at the reducing rank, which folds them in rank order;
// round 2 returns the results to the holders. The two exchanges, the fold, and what the plan
// asks every strategy about them, once.
#pragma once

#include <memory>

#include "exchange.hpp"
#include "registry.hpp"

namespace petacomm::xchg {

class TwoRoundStrategy : public Strategy {
 public:
  void start(const ExecContext &ctx, const void *data) override { gather_->start(data, ctx.type); }
  void begin(const ExecContext &, void *) override {}
  void abandon() override {
    if (gather_->started()) gather_->wait();
  }
  Traffic traffic() const override {
    return Traffic{static_cast<double>(gather_->messages() + scatter_->messages()),
                   static_cast<double>(gather_->entries() + scatter_->entries())};
  }
  std::size_t schedule_bytes() const override {
    return gather_->schedule_bytes() + scatter_->schedule_bytes() +
           (fold_ ? fold_->memory_bytes() : 0);
  }
  std::int64_t buffer_entries() const override {
    return gather_->buffer_entries() + scatter_->buffer_entries() +
           static_cast<std::int64_t>(fold_ ? fold_->keys() : 0);
  }

 protected:
  // Round 1 sends to `to_reducers` and receives from `from_holders`; round 2 the reverse.
  void build_exchanges(const BuildContext &ctx, PeerList to_reducers, PeerList from_holders) {
    const int window = ctx.options.send_window;
    gather_ = std::make_unique<Exchange>(ctx.comm, to_reducers, from_holders, ctx.transport,
                                         ctx.tag(kTagToOwner), ctx.clock, window);
    scatter_ = std::make_unique<Exchange>(ctx.comm, std::move(from_holders), std::move(to_reducers),
                                          ctx.transport, ctx.tag(kTagFromOwner), ctx.clock, window);
  }
  // The exchanges, and a fold of round 1's values into the reducer's own in rank order.
  void build_rounds(const BuildContext &ctx, PeerList to_reducers, PeerList from_holders, int me) {
    build_exchanges(ctx, std::move(to_reducers), std::move(from_holders));
    fold_ = std::make_unique<RankOrderFold>(gather_->recvs(), me);
  }

  std::unique_ptr<Exchange> gather_, scatter_;
  std::unique_ptr<RankOrderFold> fold_;  // build_rounds' (build_exchanges leaves none)
};

}  // namespace petacomm::xchg
