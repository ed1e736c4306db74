// range: each key reduced at the rank that owns its part of the key range (the key range
// split in p equal parts, as a PetscLayout splits PetscSF roots) and the result sent back.
// No discovery: a key's owner is a division of the key, so setup is one NBX round that tells
// each owner which keys it receives from whom. Every key travels, shared or not: 2 u values
// per rank in two rounds, against the directory's one reply round and the fused statistics
// at setup.
#include <algorithm>
#include <functional>

#include "element_op.hpp"
#include "error.hpp"
#include "nbx.hpp"
#include "planner.hpp"
#include "registry.hpp"
#include "sorted_runs.hpp"
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

struct OwnerRun {
  int owner;
  std::size_t begin, end;  // keys[begin, end) are this owner's
};

// Ascending keys have non-decreasing owners, so each owner's keys are one run. Its end is
// found by galloping from its first key: O(log run) owner evaluations per run, not a
// division per key.
std::vector<OwnerRun> owner_runs(const std::vector<std::int64_t> &keys, const RangeSplit &split) {
  std::vector<OwnerRun> runs;
  const std::size_t n = keys.size();
  for (std::size_t b = 0; b < n;) {
    const int owner = split.owner(keys[b]);
    const auto same = [&](std::int64_t key) { return split.owner(key) == owner; };
    std::size_t lo = b + 1, hi = b + 1;  // keys[b, lo) are the owner's; keys[hi] is not
    for (std::size_t step = 1; hi < n && same(keys[hi]); step *= 2) {
      lo = hi + 1;
      hi = b + 2 * step;
    }
    hi = std::min(hi, n);
    const auto end = std::partition_point(keys.begin() + static_cast<std::ptrdiff_t>(lo),
                                          keys.begin() + static_cast<std::ptrdiff_t>(hi), same);
    runs.push_back({owner, b, static_cast<std::size_t>(end - keys.begin())});
    b = runs.back().end;
  }
  return runs;
}

class Range final : public TwoRoundStrategy {
 public:
  explicit Range(const BuildContext &ctx) {
    check_mpi(MPI_Comm_rank(ctx.comm, &me_), "MPI_Comm_rank");
    const int me = me_;
    const RangeSplit split = split_of(ctx.comm, ctx.index, ctx.statistics, ctx.clock);
    const std::vector<std::int64_t> &keys = ctx.index.keys();  // distinct, ascending
    // My keys by owner, one run each; keys I own myself stay here.
    std::vector<Message> outgoing;
    PeerList to_owners;
    to_owners.begin.push_back(0);
    std::size_t own_begin = 0, own_end = 0;
    for (const OwnerRun &run : owner_runs(keys, split)) {
      if (run.owner == me) {
        own_begin = run.begin;
        own_end = run.end;
        continue;
      }
      outgoing.push_back({run.owner,
                          {keys.begin() + static_cast<std::ptrdiff_t>(run.begin),
                           keys.begin() + static_cast<std::ptrdiff_t>(run.end)}});
      to_owners.ranks.push_back(run.owner);
      for (std::size_t u = run.begin; u < run.end; ++u)
        to_owners.index.push_back(static_cast<std::int32_t>(u));
      to_owners.begin.push_back(static_cast<std::int64_t>(to_owners.index.size()));
    }
    std::vector<Message> incoming =
        nbx_exchange(ctx.comm, ctx.tag(kTagRange), ctx.tag(kTagBarrier), std::move(outgoing),
                     setup_traffic_, ctx.clock, ctx.options.send_window);
    std::sort(incoming.begin(), incoming.end(),
              [](const Message &a, const Message &b) { return a.rank < b.rank; });
    // The keys of my part that any rank holds, ascending, are the root slots.
    std::vector<KeyRun> runs = {{keys.data() + own_begin, keys.data() + own_end}};
    for (const Message &m : incoming)
      runs.push_back({m.data.data(), m.data.data() + m.data.size()});
    const std::size_t own_count = own_end - own_begin;
    const std::vector<std::int32_t> slot_of_entry = number_slots(runs, &slot_count_);
    own_begin_ = own_begin;
    own_slot_.assign(slot_of_entry.begin(),
                     slot_of_entry.begin() + static_cast<std::ptrdiff_t>(own_count));
    PeerList from_holders;  // in rank order, as the rank-order fold needs them
    from_holders.begin.push_back(0);
    for (const Message &m : incoming) {
      from_holders.ranks.push_back(m.rank);
      from_holders.begin.push_back(from_holders.begin.back() +
                                   static_cast<std::int64_t>(m.data.size()));
    }
    from_holders.index.assign(slot_of_entry.begin() + static_cast<std::ptrdiff_t>(own_count),
                              slot_of_entry.end());
    build_exchanges(ctx, std::move(to_owners), std::move(from_holders));
  }
  const char *name() const override { return "range"; }
  void end(const ExecContext &ctx, void *data) override {
    gather_->wait();
    // Root slots: the identity, then every holder's values folded in straight, in rank
    // order with mine in my place (my keys in my part are one run of my values).
    const std::size_t eb = ctx.op.elem_bytes();
    roots_.resize(slot_count_ * eb);
    ctx.op.fill_identity(roots_.data(), slot_count_);
    char *mine = static_cast<char *>(data) + own_begin_ * eb;
    const PeerList &from = gather_->recvs();
    const auto fold_peer = [&](std::size_t j) {
      ctx.op.fold_indexed(roots_.data(), from.index.data() + from.begin[j],
                          static_cast<std::size_t>(from.begin[j + 1] - from.begin[j]),
                          gather_->received(j));
    };
    std::size_t j = 0;
    for (; j < from.peers() && from.ranks[j] < me_; ++j) fold_peer(j);
    ctx.op.fold_indexed(roots_.data(), own_slot_.data(), own_slot_.size(), mine);
    for (; j < from.peers(); ++j) fold_peer(j);
    for (std::size_t i = 0; i < own_slot_.size(); ++i)  // my results
      std::copy_n(roots_.data() + static_cast<std::size_t>(own_slot_[i]) * eb, eb, mine + i * eb);
    scatter_->start(roots_.data(), ctx.type);  // the results back to the holders
    scatter_->wait();
    copy_received(*scatter_, eb, data);
  }
  std::size_t schedule_bytes() const override {
    return TwoRoundStrategy::schedule_bytes() + own_slot_.size() * sizeof(std::int32_t);
  }
  std::int64_t buffer_entries() const override {
    return gather_->buffer_entries() + scatter_->buffer_entries() +
           static_cast<std::int64_t>(slot_count_);
  }

 private:
  int me_ = 0;
  std::size_t own_begin_ = 0;           // my keys in my part: keys()[own_begin_ ...),
  std::vector<std::int32_t> own_slot_;  // and their slots
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
     "transport send_window"},
    Discovery::kNone,
    no_holder_lists,
    kTerms,
    rank_terms,
    predict,
    by_name_only,
    build,
};

}  // namespace petacomm::xchg
