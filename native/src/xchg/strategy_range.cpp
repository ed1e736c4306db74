// range: each key reduced at the rank that owns its part of the key range (the key range
// split in p equal parts, as a PetscLayout splits PetscSF roots) and the result sent back.
// No discovery: a key's owner is a division of the key, so setup is one NBX round that tells
// each owner which keys it receives from whom. Every key travels, shared or not: 2 u values
// per rank in two rounds, against the directory's one reply round and the fused statistics
// at setup.
#include <algorithm>

#include "element_op.hpp"
#include "error.hpp"
#include "nbx.hpp"
#include "planner.hpp"
#include "registry.hpp"
#include "two_rounds.hpp"

namespace petacomm::xchg {
namespace {

// The key range [first, last] in p parts of (nearly) equal width, as PetscSplitOwnership
// splits a layout.
struct RangeSplit {
  std::int64_t first = 0, last = -1;
  int parts = 1;
  // Monotone in the key and the same on every rank (double rounding included), which is
  // all the split needs: a rank's ascending keys meet their owners in ascending order.
  int owner(std::int64_t key) const {
    const double offset = static_cast<double>(static_cast<std::uint64_t>(key - first));
    const double span = static_cast<double>(static_cast<std::uint64_t>(last - first)) + 1.0;
    return std::min(parts - 1, static_cast<int>(offset / span * parts));
  }
};

RangeSplit split_of(MPI_Comm comm, const KeyIndex &index, const PlanStatistics *statistics,
                    SetupClock *clock) {
  RangeSplit split;
  check_mpi(MPI_Comm_size(comm, &split.parts), "MPI_Comm_size");
  if (statistics != nullptr) {
    split.first = statistics->global.key_min;
    split.last = statistics->global.key_max;
  } else {
    const auto &keys = index.keys();
    std::int64_t mine[2] = {keys.empty() ? INT64_MIN : -keys.front(),
                            keys.empty() ? INT64_MIN : keys.back()};
    std::int64_t all[2] = {0, 0};
    MpiWait wait(clock);
    check_mpi(MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    split.first = all[0] == INT64_MIN ? 0 : -all[0];
    split.last = all[1] == INT64_MIN ? -1 : all[1];
  }
  return split;
}

class Range final : public TwoRoundStrategy {
 public:
  explicit Range(const BuildContext &ctx) {
    int me = 0, p = 1;
    check_mpi(MPI_Comm_rank(ctx.comm, &me), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(ctx.comm, &p), "MPI_Comm_size");
    const RangeSplit split = split_of(ctx.comm, ctx.index, ctx.statistics, ctx.clock);
    const std::vector<std::int64_t> &keys = ctx.index.keys();  // distinct, ascending
    // My keys by owner: ascending keys have non-decreasing owners, so each owner's keys are
    // one run. Keys I own myself stay here.
    std::vector<Message> outgoing;
    std::vector<std::pair<int, std::int32_t>> to_owner;
    std::vector<std::int64_t> own_keys;
    for (std::size_t u = 0; u < keys.size(); ++u) {
      const int owner = split.owner(keys[u]);
      if (owner == me) {
        own_keys.push_back(keys[u]);
        own_local_.push_back(static_cast<std::int32_t>(u));
        continue;
      }
      if (outgoing.empty() || outgoing.back().rank != owner) outgoing.push_back({owner, {}});
      outgoing.back().data.push_back(keys[u]);
      to_owner.emplace_back(owner, static_cast<std::int32_t>(u));
    }
    std::vector<Message> incoming =
        nbx_exchange(ctx.comm, ctx.tag(kTagRange), std::move(outgoing), setup_traffic_, ctx.clock);
    // The keys of my part that any rank holds, ascending: the root slots.
    // Every run is ascending: merged pairwise, ceil(log2 runs) linear passes.
    std::vector<std::int64_t> slots = own_keys;
    std::vector<std::size_t> bounds = {0, slots.size()};
    for (const Message &m : incoming) {
      slots.insert(slots.end(), m.data.begin(), m.data.end());
      bounds.push_back(slots.size());
    }
    while (bounds.size() > 2) {
      std::vector<std::size_t> next = {0};
      for (std::size_t r = 0; r + 1 < bounds.size(); r += 2) {
        const std::size_t hi = r + 2 < bounds.size() ? bounds[r + 2] : bounds[r + 1];
        std::inplace_merge(slots.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                           slots.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]),
                           slots.begin() + static_cast<std::ptrdiff_t>(hi));
        next.push_back(hi);
      }
      bounds.swap(next);
    }
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    // Each run of keys (mine, each message) is ascending, so its slots are found by one
    // forward walk over the slots, not a binary search per key.
    const auto slots_of = [&slots](const std::vector<std::int64_t> &run, auto emit) {
      std::size_t at = 0;
      for (std::int64_t key : run) {
        while (slots[at] < key) ++at;
        emit(static_cast<std::int32_t>(at));
      }
    };
    slot_count_ = slots.size();
    slots_of(own_keys, [this](std::int32_t slot) { own_slot_.push_back(slot); });
    std::vector<std::pair<int, std::int32_t>> from_holders;
    for (const Message &m : incoming)
      slots_of(m.data, [&](std::int32_t slot) { from_holders.emplace_back(m.rank, slot); });
    build_rounds(ctx, group_by_peer(std::move(to_owner), p),
                 group_by_peer(std::move(from_holders), p), me);
  }
  const char *name() const override { return "range"; }
  void end(const ExecContext &ctx, void *data) override {
    gather_->wait();
    // Root slots: the identity, my own values in place, then every holder's in rank order.
    const std::size_t eb = ctx.op.elem_bytes();
    roots_.resize(slot_count_ * eb);
    ctx.op.fill_identity(roots_.data(), slot_count_);
    char *values = static_cast<char *>(data);
    for (std::size_t j = 0; j < own_local_.size(); ++j)
      std::copy_n(values + static_cast<std::size_t>(own_local_[j]) * eb, eb,
                  roots_.data() + static_cast<std::size_t>(own_slot_[j]) * eb);
    fold_->run(ctx.op, *gather_, roots_.data());
    for (std::size_t j = 0; j < own_local_.size(); ++j)
      std::copy_n(roots_.data() + static_cast<std::size_t>(own_slot_[j]) * eb, eb,
                  values + static_cast<std::size_t>(own_local_[j]) * eb);
    scatter_->start(roots_.data(), ctx.type);  // the results back to the holders
    scatter_->wait();
    copy_received(*scatter_, eb, data);
  }
  std::size_t schedule_bytes() const override {
    return TwoRoundStrategy::schedule_bytes() +
           (own_local_.size() + own_slot_.size()) * sizeof(std::int32_t);
  }
  std::int64_t buffer_entries() const override {
    return gather_->buffer_entries() + scatter_->buffer_entries() +
           static_cast<std::int64_t>(slot_count_);
  }

 private:
  std::vector<std::int32_t> own_local_, own_slot_;  // my keys in my part: local index, slot
  std::size_t slot_count_ = 0;
  std::vector<char> roots_;
  SetupTraffic setup_traffic_;
};

enum Term { kKeys, kTerms };

void rank_terms(const RankCost &in, double *out) {
  out[kKeys] = static_cast<double>(in.rank.n_unique);
}

// Without discovery the plan knows neither partners nor where keys fall: priced as every
// key going to its owner and back, every rank talking to every other (an upper bound).
petacomm_xchg_prediction predict(const double *m, const GlobalCost &in) {
  const double partners = static_cast<double>(std::max<std::int64_t>(in.global.ranks - 1, 0));
  const double values = m[kKeys];
  const double round = in.cost.p2p(partners, values * in.elem_bytes);
  const double local = 4.0 * values * in.elem_bytes * in.cost.params().local_beta;
  const double setup = in.cost.p2p(partners, values * sizeof(std::int64_t));
  return {nullptr, 2.0 * round + local, setup, 2.0 * partners, 2.0 * values * in.elem_bytes, 0, 0};
}

const char *by_name_only(const petacomm_xchg_prediction &) {
  return "requested by name only: without discovery its cost is an upper bound";
}

int no_holder_lists(const petacomm_xchg_options &) { return 0; }

std::unique_ptr<Strategy> build(BuildContext &ctx) { return std::make_unique<Range>(ctx); }

}  // namespace

extern const XchgStrategy kRangeStrategy{
    {"range",
     "each key reduced at the owner of its part of the key range (PetscSF's layout) and sent "
     "back: no discovery, one NBX round at setup; every key travels, 2u values per rank",
     "transport"},
    Discovery::kNone,
    no_holder_lists,
    kTerms,
    rank_terms,
    predict,
    by_name_only,
    build,
};

}  // namespace petacomm::xchg
