#include <algorithm>

#include "dense_reducer.hpp"
#include "error.hpp"
#include "strategies.hpp"

namespace petacomm::xchg {
namespace {

constexpr int kTagHubRest = 401;

class HubSplit final : public Strategy {
 public:
  HubSplit(MPI_Comm comm, const Sharing &sharing, int threshold, std::int64_t hubs,
           std::int64_t chunk_keys, bool deterministic, Transport transport)
      : keys_(sharing.keys()) {
    check_mpi(MPI_Comm_rank(comm, &me_), "MPI_Comm_rank");
    int p = 1;
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    PeerList peers = pair_peers(sharing, threshold, p);
    PeerList copy = peers;
    rest_ =
        std::make_unique<Exchange>(comm, std::move(peers), std::move(copy), transport, kTagHubRest);
    std::vector<std::pair<std::uint64_t, std::int32_t>> mine;
    for (std::size_t u = 0; u < sharing.keys(); ++u)
      if (sharing.multiplicity[u] > threshold) {
        if (sharing.hub_index.empty() || sharing.hub_index[u] < 0)
          fail_state("internal: hub key without a hub number");
        mine.emplace_back(static_cast<std::uint64_t>(sharing.hub_index[u]),
                          static_cast<std::int32_t>(u));
      }
    std::sort(mine.begin(), mine.end());
    std::vector<std::uint64_t> positions(mine.size());
    std::vector<std::int32_t> local(mine.size());
    for (std::size_t j = 0; j < mine.size(); ++j) {
      positions[j] = mine[j].first;
      local[j] = mine[j].second;
    }
    const auto chunk = static_cast<std::uint64_t>(chunk_keys);
    const auto space = static_cast<std::uint64_t>(hubs);
    std::vector<std::uint64_t> chunks(space == 0 ? 0 : (space - 1) / chunk + 1);
    for (std::size_t c = 0; c < chunks.size(); ++c) chunks[c] = c;  // every hub is held
    dense_ = std::make_unique<DenseReducer>(comm, std::move(positions), std::move(local),
                                            std::move(chunks), chunk, space, deterministic);
  }
  const char *name() const override { return "hub-split"; }
  void begin(const ExecContext &ctx, const void *own) override {
    rest_->start(own, ctx.type);
    dense_->begin(ctx, own);
  }
  void end(const ExecContext &ctx, const void *own, void *result) override {
    rest_->wait();
    fold_in_rank_order(ctx.op, me_, *rest_, own, result, keys_);
    dense_->end(ctx, own, result);
  }
  Traffic traffic() const override {
    Traffic t = dense_->traffic();
    t.messages += static_cast<double>(rest_->messages());
    t.entries += static_cast<double>(rest_->entries());
    return t;
  }
  std::size_t schedule_bytes() const override {
    return rest_->schedule_bytes() + dense_->schedule_bytes();
  }
  std::int64_t buffer_entries() const override {
    return rest_->buffer_entries() + dense_->buffer_entries();
  }

 private:
  std::size_t keys_;
  int me_ = 0;
  std::unique_ptr<Exchange> rest_;
  std::unique_ptr<DenseReducer> dense_;
};

}  // namespace

std::unique_ptr<Strategy> make_hub_split(MPI_Comm comm, const Sharing &sharing, int threshold,
                                         std::int64_t hubs, std::int64_t chunk_keys,
                                         bool deterministic, Transport transport) {
  return std::make_unique<HubSplit>(comm, sharing, threshold, hubs, chunk_keys, deterministic,
                                    transport);
}

}  // namespace petacomm::xchg
