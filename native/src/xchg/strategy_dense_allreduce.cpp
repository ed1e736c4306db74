#include <limits>

#include "dense_reducer.hpp"
#include "error.hpp"
#include "strategies.hpp"

namespace petacomm::xchg {
namespace {

class DenseAllreduce final : public Strategy {
 public:
  explicit DenseAllreduce(std::unique_ptr<DenseReducer> dense) : dense_(std::move(dense)) {}
  const char *name() const override { return "dense-allreduce"; }
  void begin(const ExecContext &ctx, const void *own) override { dense_->begin(ctx, own); }
  void end(const ExecContext &ctx, const void *own, void *result) override {
    dense_->end(ctx, own, result);
  }
  Traffic traffic() const override { return dense_->traffic(); }
  std::size_t schedule_bytes() const override { return dense_->schedule_bytes(); }
  std::int64_t buffer_entries() const override { return dense_->buffer_entries(); }

 private:
  std::unique_ptr<DenseReducer> dense_;
};

}  // namespace

std::unique_ptr<Strategy> make_dense_allreduce(MPI_Comm comm, const KeyIndex &index,
                                               std::int64_t chunk_keys, bool deterministic) {
  const auto &keys = index.keys();
  // One MIN reduction gives the smallest key and minus the largest (keys < 2^63).
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  const std::int64_t local[2] = {keys.empty() ? kNone : keys.front(),
                                 keys.empty() ? kNone : -keys.back()};
  std::int64_t global[2];
  {
    MpiWait wait;
    check_mpi(MPI_Allreduce(local, global, 2, MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce");
  }
  const bool any = global[0] != std::numeric_limits<std::int64_t>::max();
  const std::int64_t kmin = any ? global[0] : 0;
  const std::uint64_t space =
      any ? static_cast<std::uint64_t>(-global[1]) - static_cast<std::uint64_t>(kmin) + 1 : 0;
  std::vector<std::uint64_t> positions(keys.size());
  std::vector<std::int32_t> local_index(keys.size());
  for (std::size_t u = 0; u < keys.size(); ++u) {
    positions[u] = static_cast<std::uint64_t>(keys[u] - kmin);
    local_index[u] = static_cast<std::int32_t>(u);
  }
  const auto chunk = static_cast<std::uint64_t>(chunk_keys);
  std::vector<std::uint64_t> chunks;
  {
    MpiWait wait;
    chunks = touched_chunks(comm, positions, chunk, space);
  }
  return std::make_unique<DenseAllreduce>(
      std::make_unique<DenseReducer>(comm, std::move(positions), std::move(local_index),
                                     std::move(chunks), chunk, space, deterministic));
}

}  // namespace petacomm::xchg
