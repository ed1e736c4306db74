#include "pairwise.hpp"

#include <climits>

#include "error.hpp"

namespace petacomm::xchg {
namespace {

class Pairwise final : public Strategy {
 public:
  Pairwise(const char *name, MPI_Comm comm, int tag, const Sharing &sharing, Transport transport,
           SetupClock *clock, int send_window)
      : name_(name) {
    int me = 0, p = 1;
    check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    PeerList peers = pair_peers(sharing, INT_MAX, p);
    PeerList copy = peers;
    exchange_ = std::make_unique<Exchange>(comm, std::move(peers), std::move(copy), transport, tag,
                                           clock, send_window);
    fold_ = std::make_unique<RankOrderFold>(exchange_->recvs(), me);
  }
  const char *name() const override { return name_; }
  void start(const ExecContext &ctx, const void *data) override {
    exchange_->start(data, ctx.type);
  }
  void begin(const ExecContext &, void *) override {}
  void end(const ExecContext &ctx, void *data) override {
    exchange_->wait();
    fold_->run(ctx.op, *exchange_, data);
  }
  void abandon() override {
    if (exchange_->started()) exchange_->wait();
  }
  Traffic traffic() const override {
    return Traffic{static_cast<double>(exchange_->messages()),
                   static_cast<double>(exchange_->entries())};
  }
  std::size_t schedule_bytes() const override {
    return exchange_->schedule_bytes() + fold_->memory_bytes();
  }
  std::int64_t buffer_entries() const override {
    return exchange_->buffer_entries() + static_cast<std::int64_t>(fold_->keys());
  }

 private:
  const char *name_;
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<RankOrderFold> fold_;
};

}  // namespace

std::unique_ptr<Strategy> make_pairwise(const char *name, MPI_Comm comm, int tag,
                                        const Sharing &sharing, Transport transport,
                                        SetupClock *clock, int send_window) {
  return std::make_unique<Pairwise>(name, comm, tag, sharing, transport, clock, send_window);
}

}  // namespace petacomm::xchg
