// dense-allreduce: the baseline. Walks the key range in chunks of chunk_keys keys, filled
// with the identity, this rank's values placed, reduced over all ranks; chunks no rank
// touches are skipped.
#include <algorithm>
#include <limits>

#include "dense_reducer.hpp"
#include "error.hpp"
#include "planner.hpp"
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

// Chunks are aligned on multiples of chunk_keys (chunk c: keys [c chunk_keys, (c + 1)
// chunk_keys)), so the plan's statistics reduction finds the touched ones without knowing
// the key range first; the build reuses them and then needs no communication.
std::unique_ptr<Strategy> make_dense_allreduce(MPI_Comm comm, const KeyIndex &index,
                                               std::int64_t chunk_keys, bool deterministic,
                                               const PlanStatistics *statistics,
                                               SetupClock *clock) {
  const auto &keys = index.keys();
  std::vector<std::uint64_t> positions(keys.size());
  std::vector<std::int32_t> local_index(keys.size());
  for (std::size_t u = 0; u < keys.size(); ++u) {
    positions[u] = static_cast<std::uint64_t>(keys[u]);
    local_index[u] = static_cast<std::int32_t>(u);
  }
  const auto chunk = static_cast<std::uint64_t>(chunk_keys);
  std::uint64_t space = 0;
  std::vector<std::uint64_t> chunks;
  if (statistics != nullptr && statistics->chunks_known) {
    space = statistics->global.key_max < 0
                ? 0
                : static_cast<std::uint64_t>(statistics->global.key_max) + 1;
    chunks = statistics->chunks;
  } else {
    const std::int64_t mine = keys.empty() ? -1 : keys.back();
    std::int64_t largest = -1;
    MpiWait wait(clock);
    check_mpi(MPI_Allreduce(&mine, &largest, 1, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    space = largest < 0 ? 0 : static_cast<std::uint64_t>(largest) + 1;
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
  const std::int64_t chunk_keys = std::max<std::int64_t>(g.chunk_keys, 1);
  const double chunk = static_cast<double>(chunk_keys);
  // The chunk-aligned range: from the first touched chunk's start to the largest key.
  const double range = g.key_min >= 0 && g.key_max >= g.key_min
                           ? static_cast<double>(g.key_max) + 1 -
                                 static_cast<double>(g.key_min / chunk_keys * chunk_keys)
                           : 0;
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
  return make_dense_allreduce(ctx.comm, ctx.index, ctx.options.chunk_keys, ctx.deterministic,
                              ctx.statistics, ctx.clock);
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
