// dense-allreduce: the baseline. Walks [min key, max key] in chunks of chunk_keys keys,
// filled with the identity, this rank's values placed, reduced over all ranks; chunks no
// rank touches are skipped.
#include <algorithm>
#include <limits>

#include "dense_reducer.hpp"
#include "error.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

class DenseAllreduce final : public Strategy {
 public:
  explicit DenseAllreduce(std::unique_ptr<DenseReducer> dense) : dense_(std::move(dense)) {}
  const char *name() const override { return "dense-allreduce"; }
  void start(const ExecContext &, const void *) override {}
  void begin(const ExecContext &ctx, void *data) override { dense_->begin(ctx, data); }
  void end(const ExecContext &ctx, void *data) override { dense_->end(ctx, data); }
  void abandon() override {}
  Traffic traffic() const override { return dense_->traffic(); }
  std::size_t schedule_bytes() const override { return dense_->schedule_bytes(); }
  std::int64_t buffer_entries() const override { return dense_->buffer_entries(); }

 private:
  std::unique_ptr<DenseReducer> dense_;
};

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

void rank_terms(const RankCost &, double *) {}

petacomm_xchg_prediction predict(const double *, const GlobalCost &in) {
  const petacomm_xchg_global_stats &g = in.global;
  const std::int64_t p = g.ranks;
  const double chunk = static_cast<double>(std::max<std::int64_t>(g.chunk_keys, 1));
  const double range =
      g.key_min >= 0 && g.key_max >= g.key_min ? static_cast<double>(g.key_max - g.key_min) + 1 : 0;
  const double chunks = static_cast<double>(g.dense_chunks);
  const double keys = std::min(chunks * chunk, range);  // the touched chunks, the last one short
  return {nullptr,
          dense_time(keys, chunks, p, in.cost, in.elem_bytes),
          2.0 * log2_steps(p) * in.cost.params().allreduce_alpha,
          dense_messages(chunks, p),
          dense_bytes(keys, p, in.elem_bytes),
          0,
          0};
}

std::unique_ptr<Strategy> build(BuildContext &ctx) {
  return make_dense_allreduce(ctx.comm, ctx.index, ctx.options.chunk_keys, ctx.deterministic);
}

}  // namespace

extern const XchgStrategy kDenseAllreduceStrategy{
    {"dense-allreduce",
     "the baseline: the key range reduced in chunks of chunk_keys keys by allreduce, untouched "
     "chunks skipped; best when most ranks hold most keys",
     "chunk_keys deterministic"},
    Discovery::kNone,
    all_holder_lists,
    0,
    rank_terms,
    predict,
    always_a_candidate,
    build,
};

}  // namespace petacomm::xchg
