// hub-split: the study's own proposal. Keys held by more than a threshold T of ranks
// ("hubs": scan crossings, poles) are numbered 0..H-1 by their homes and reduced by one dense
// reduction over just those H keys; the rest go all-pairs. The planner picks T (a power of
// two) unless hub_threshold gives it.
#include <algorithm>
#include <climits>
#include <cmath>

#include "dense_reducer.hpp"
#include "directory.hpp"
#include "error.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

class HubSplit final : public Strategy {
 public:
  HubSplit(MPI_Comm comm, int tag, const Sharing &sharing, int threshold, std::int64_t hubs,
           std::int64_t chunk_keys, bool deterministic, Transport transport, SetupClock *clock,
           int send_window) {
    int me = 0, p = 1;
    check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    PeerList peers = pair_peers(sharing, threshold, p);
    PeerList copy = peers;
    rest_ = std::make_unique<Exchange>(comm, std::move(peers), std::move(copy), transport, tag,
                                       clock, send_window);
    fold_ = std::make_unique<RankOrderFold>(rest_->recvs(), me);
    std::vector<std::pair<std::uint64_t, std::int32_t>> mine;
    for (std::size_t u = 0; u < sharing.keys(); ++u)
      if (sharing.multiplicity[u] > threshold) {
        PETACOMM_CHECK_INTERNAL(!sharing.hub_index.empty() && sharing.hub_index[u] >= 0, "hub key ",
                                u, " without a hub number");
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
  // The remainder's exchange goes ahead of the argument check; the hub reduction, whose
  // MPI operator is the execution's, waits for it.
  void start(const ExecContext &ctx, const void *data) override { rest_->start(data, ctx.type); }
  void begin(const ExecContext &ctx, void *data) override { dense_->begin(ctx, data); }
  void end(const ExecContext &ctx, void *data) override {
    rest_->wait();
    fold_->run(ctx.op, *rest_, data);  // the remainder's keys; the hub keys are disjoint
    dense_->end(ctx, data);
  }
  void abandon() override {
    if (rest_->started()) rest_->wait();
  }
  Traffic traffic() const override {
    Traffic t = dense_->traffic();
    t.messages += static_cast<double>(rest_->messages());
    t.entries += static_cast<double>(rest_->entries());
    return t;
  }
  std::size_t schedule_bytes() const override {
    return rest_->schedule_bytes() + fold_->memory_bytes() + dense_->schedule_bytes();
  }
  std::int64_t buffer_entries() const override {
    return rest_->buffer_entries() + static_cast<std::int64_t>(fold_->keys()) +
           dense_->buffer_entries();
  }

 private:
  std::unique_ptr<Exchange> rest_;
  std::unique_ptr<RankOrderFold> fold_;
  std::unique_ptr<DenseReducer> dense_;
};

constexpr int L = PETACOMM_XCHG_HUB_LEVELS;
// Terms: the setup, then per hub level b (threshold 2^b) the all-pairs remainder's time,
// messages and bytes.
enum Term {
  kSetup,
  kTime0,
  kMessages0 = kTime0 + L,
  kBytes0 = kMessages0 + L,
  kTerms = kBytes0 + L
};

void rank_terms(const RankCost &in, double *out) {
  const petacomm_xchg_rank_stats &r = in.rank;
  // Directory discovery plus numbering the hubs (MPI_Exscan + MPI_Allreduce).
  out[kSetup] = directory_setup_time(in) + in.cost.p2p(2.0 * log2_steps(in.ranks), 0.0);
  for (int b = 0; b < L; ++b) {
    const double partners = static_cast<double>(r.hub_pair_partners[b]);
    const double values = static_cast<double>(r.hub_pair_values[b]);
    out[kTime0 + b] = exchange_time(in, partners, values) + pairwise_local_time(in, values);
    out[kMessages0 + b] = partners;
    out[kBytes0 + b] = values * in.elem_bytes;
  }
}

// The hub level of a given threshold T: the bucket 2^b <= T < 2^(b+1) (the model's
// multiplicity histogram has power-of-two buckets).
int level_of(int threshold) {
  int b = 0;
  while (b + 1 < L && (std::int64_t{1} << (b + 1)) <= threshold) ++b;
  return b;
}

petacomm_xchg_prediction predict(const double *m, const GlobalCost &in) {
  const petacomm_xchg_global_stats &g = in.global;
  const std::int64_t p = g.ranks;
  const double chunk = static_cast<double>(std::max<std::int64_t>(g.chunk_keys, 1));
  petacomm_xchg_prediction best{nullptr, -1, m[kSetup], 0, 0, 0, 0};
  const int fixed = in.fixed_hub_threshold;
  const int first = fixed > 0 ? level_of(fixed) : 0;
  // Thresholds 2^b below p (a threshold >= p makes no hubs: that is directory).
  const int last = fixed > 0 ? first : std::max(0, ceil_log2(std::max<std::int64_t>(p, 2)) - 1);
  for (int b = first; b <= last && b < L; ++b) {
    double hubs = 0;  // keys with d > 2^b: the buckets above b
    for (int bucket = b + 1; bucket <= L; ++bucket)
      hubs += static_cast<double>(g.multiplicity[bucket]);
    const double hub_chunks = std::ceil(hubs / chunk);
    const double t = m[kTime0 + b] + dense_time(hubs, hub_chunks, p, in.cost, in.elem_bytes);
    if (best.execute_seconds < 0 || t < best.execute_seconds) {
      best.execute_seconds = t;
      best.messages = m[kMessages0 + b] + dense_messages(hub_chunks, p);
      best.bytes = m[kBytes0 + b] + dense_bytes(hubs, p, in.elem_bytes);
      best.hub_threshold = fixed > 0 ? fixed : 1 << b;
      best.hub_keys = static_cast<std::int64_t>(hubs);
    }
  }
  return best;
}

const char *not_a_candidate(const petacomm_xchg_prediction &predicted) {
  return predicted.hub_keys > 0 ? ""
                                : "no key is held by more ranks than the threshold: it would be "
                                  "directory";
}

// Holder lists are needed for the keys reduced pairwise: d <= a given threshold.
int holder_lists(const petacomm_xchg_options &o) {
  return o.hub_threshold > 0 ? o.hub_threshold : INT_MAX;
}

std::unique_ptr<Strategy> build(BuildContext &ctx) {
  const int given = ctx.options.hub_threshold;
  const int threshold =
      given > 0 ? given : std::max(1, ctx.predicted ? ctx.predicted->hub_threshold : 1);
  const std::int64_t hubs = ctx.directory->assign_hubs(threshold);
  ctx.hub_threshold = threshold;
  ctx.hub_keys = hubs;
  ctx.detail = concat("threshold ", threshold, " ranks, ", hubs, " hub keys",
                      given > 0 ? ", given" : ", from the model");
  return std::make_unique<HubSplit>(ctx.comm, ctx.tag(kTagHubRest), *ctx.sharing, threshold, hubs,
                                    ctx.options.chunk_keys, ctx.deterministic, ctx.transport,
                                    ctx.clock, ctx.options.send_window);
}

}  // namespace

extern const XchgStrategy kHubSplitStrategy{
    {"hub-split",
     "keys held by more than hub_threshold ranks reduced by one dense allreduce over just "
     "those keys, the rest all-pairs; the threshold is chosen by the model unless given",
     "hub_threshold chunk_keys deterministic transport send_window"},
    Discovery::kDirectory,
    holder_lists,
    kTerms,
    rank_terms,
    predict,
    not_a_candidate,
    build,
};

}  // namespace petacomm::xchg
