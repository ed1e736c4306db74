#include "pairwise.hpp"

#include <climits>

#include "error.hpp"

namespace petacomm::xchg {
namespace {

constexpr int kTagPairs = 201;

class Pairwise final : public Strategy {
 public:
  Pairwise(const char *name, MPI_Comm comm, const Sharing &sharing, Transport transport)
      : name_(name), keys_(sharing.keys()) {
    check_mpi(MPI_Comm_rank(comm, &me_), "MPI_Comm_rank");
    int p = 1;
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    PeerList peers = pair_peers(sharing, INT_MAX, p);
    PeerList copy = peers;
    exchange_ =
        std::make_unique<Exchange>(comm, std::move(peers), std::move(copy), transport, kTagPairs);
  }
  const char *name() const override { return name_; }
  void begin(const ExecContext &ctx, const void *own) override { exchange_->start(own, ctx.type); }
  void end(const ExecContext &ctx, const void *own, void *result) override {
    exchange_->wait();
    fold_in_rank_order(ctx.op, me_, *exchange_, own, result, keys_);
  }
  Traffic traffic() const override {
    return Traffic{static_cast<double>(exchange_->messages()),
                   static_cast<double>(exchange_->entries())};
  }
  std::size_t schedule_bytes() const override { return exchange_->schedule_bytes(); }
  std::int64_t buffer_entries() const override { return exchange_->buffer_entries(); }

 private:
  const char *name_;
  std::size_t keys_;
  int me_ = 0;
  std::unique_ptr<Exchange> exchange_;
};

}  // namespace

std::unique_ptr<Strategy> make_pairwise(const char *name, MPI_Comm comm, const Sharing &sharing,
                                        Transport transport) {
  return std::make_unique<Pairwise>(name, comm, sharing, transport);
}

}  // namespace petacomm::xchg
