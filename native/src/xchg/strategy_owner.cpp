#include "error.hpp"
#include "strategies.hpp"

namespace petacomm::xchg {
namespace {

constexpr int kTagToOwner = 301;
constexpr int kTagFromOwner = 302;

class Owner final : public Strategy {
 public:
  Owner(MPI_Comm comm, const Sharing &sharing, Transport transport) : keys_(sharing.keys()) {
    check_mpi(MPI_Comm_rank(comm, &me_), "MPI_Comm_rank");
    int p = 1;
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    PeerList to_owner = owner_send_peers(sharing, me_, p);
    PeerList from_holders = owner_recv_peers(sharing, me_, p);
    PeerList back_to_holders = from_holders;
    PeerList from_owner = to_owner;
    gather_ = std::make_unique<Exchange>(comm, std::move(to_owner), std::move(from_holders),
                                         transport, kTagToOwner);
    scatter_ = std::make_unique<Exchange>(comm, std::move(back_to_holders), std::move(from_owner),
                                          transport, kTagFromOwner);
  }
  const char *name() const override { return "owner"; }
  void begin(const ExecContext &ctx, const void *own) override { gather_->start(own, ctx.type); }
  void end(const ExecContext &ctx, const void *own, void *result) override {
    gather_->wait();
    fold_in_rank_order(ctx.op, me_, *gather_, own, result, keys_);
    scatter_->start(result, ctx.type);
    scatter_->wait();
    copy_received(*scatter_, ctx.op.elem_bytes(), result);
  }
  Traffic traffic() const override {
    return Traffic{static_cast<double>(gather_->messages() + scatter_->messages()),
                   static_cast<double>(gather_->entries() + scatter_->entries())};
  }
  std::size_t schedule_bytes() const override {
    return gather_->schedule_bytes() + scatter_->schedule_bytes();
  }
  std::int64_t buffer_entries() const override {
    return gather_->buffer_entries() + scatter_->buffer_entries();
  }

 private:
  std::size_t keys_;
  int me_ = 0;
  std::unique_ptr<Exchange> gather_, scatter_;
};

}  // namespace

std::unique_ptr<Strategy> make_owner(MPI_Comm comm, const Sharing &sharing, Transport transport) {
  return std::make_unique<Owner>(comm, sharing, transport);
}

}  // namespace petacomm::xchg
