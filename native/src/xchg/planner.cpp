#include "planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "dense_reducer.hpp"
#include "directory.hpp"
#include "error.hpp"
#include "json_out.hpp"
#include "mpi_support.hpp"
#include "registry.hpp"

namespace petacomm::xchg {

namespace {
// Words of the touched-chunk bitmap carried by the fused statistics reduction: chunks below
// 64 x 64 = 4096 (keys below 2^28 with the default 65536 keys per chunk).
constexpr std::size_t kFusedChunkWords = 64;

// Per-partner values: a dense array when p is at most the entries it will see (memory stays
// O(local data)), else a hash map. Absent partners hold 0.
class PartnerTable {
 public:
  PartnerTable(int p, std::size_t entries) : dense_(static_cast<std::size_t>(p) <= entries) {
    if (dense_) values_.assign(static_cast<std::size_t>(p), 0);
  }
  int &operator[](int rank) {
    if (!dense_) return map_[rank];
    int &v = values_[static_cast<std::size_t>(rank)];
    if (v == 0) ++count_;  // callers store positive values only
    return v;
  }
  std::size_t size() const { return dense_ ? count_ : map_.size(); }
  template <class F>
  void for_each(F f) const {
    if (dense_) {
      for (int v : values_)
        if (v != 0) f(v);
    } else {
      for (const auto &kv : map_) f(kv.second);
    }
  }

 private:
  bool dense_;
  std::size_t count_ = 0;
  std::vector<int> values_;
  std::unordered_map<int, int> map_;
};
}  // namespace

petacomm_xchg_rank_stats rank_statistics(const KeyIndex &index, const Sharing &sharing, int me,
                                         const SetupTraffic &discovery, std::int64_t reply_ints) {
  petacomm_xchg_rank_stats r{};
  r.n_local = index.positions();
  r.n_unique = static_cast<std::int64_t>(index.unique());
  // Only the shared keys are visited: a key held here alone is owned here and has no
  // partner, so it counts in bucket 0 and nowhere else.
  int p = me + 1;
  for (std::int32_t rank : sharing.list_ranks) p = std::max(p, rank + 1);
  for (std::int32_t u : sharing.shared) p = std::max(p, sharing.owner[u] + 1);
  const std::size_t entries = sharing.list_ranks.size() + sharing.shared.size();
  PartnerTable min_d(p, entries);  // partner -> smallest d of a key shared with it
  PartnerTable owners(p, entries), holders(p, entries);
  // Keys by multiplicity bucket c = ceil(log2 d): a key is a hub at level b (d > 2^b) iff
  // b < c, else (d >= 2) it goes pairwise; prefix sums over buckets give every level.
  std::array<std::int64_t, PETACOMM_XCHG_HUB_LEVELS + 1> bucket_keys{}, bucket_values{};
  bucket_keys[0] = static_cast<std::int64_t>(sharing.keys() - sharing.shared.size());
  for (std::int32_t u : sharing.shared) {
    const int d = sharing.multiplicity[u];
    const int c = multiplicity_bucket(d);
    bucket_keys[c] += 1;
    bucket_values[c] += d - 1;
    r.n_shared += 1;
    r.pair_values += d - 1;
    for (std::int64_t j = sharing.list_begin[u]; j < sharing.list_begin[u + 1]; ++j) {
      int &smallest = min_d[sharing.list_ranks[j]];
      smallest = smallest == 0 ? d : std::min(smallest, d);
    }
    if (sharing.owner[u] != me) {
      owners[sharing.owner[u]] += 1;
      r.owner_send_values += 1;
    } else {
      r.owned_keys += 1;
      r.owner_recv_values += d - 1;
      for (std::int64_t j = sharing.list_begin[u]; j < sharing.list_begin[u + 1]; ++j)
        holders[sharing.list_ranks[j]] += 1;
    }
  }
  std::int64_t values_up_to = 0, keys_above = 0;
  for (int c = 0; c <= PETACOMM_XCHG_HUB_LEVELS; ++c) keys_above += bucket_keys[c];
  for (int b = 0; b < PETACOMM_XCHG_HUB_LEVELS; ++b) {
    values_up_to += bucket_values[b];
    keys_above -= bucket_keys[b];
    r.hub_pair_values[b] = values_up_to;  // buckets 1..b (bucket 0 has d == 1)
    r.hub_keys[b] = keys_above;           // buckets > b
  }
  r.pair_partners = static_cast<std::int64_t>(min_d.size());
  r.owner_sends = static_cast<std::int64_t>(owners.size());
  r.owner_recvs = static_cast<std::int64_t>(holders.size());
  min_d.for_each([&r](int d) {
    for (int b = 0; b < PETACOMM_XCHG_HUB_LEVELS; ++b)
      if (d <= (std::int64_t{1} << b)) r.hub_pair_partners[b] += 1;
  });
  r.directory_send_msgs = discovery.messages;
  r.directory_send_keys = static_cast<std::int64_t>(index.unique());
  r.directory_reply_ints = reply_ints;
  return r;
}

std::vector<double> rank_cost_terms(const RankCost &in) {
  std::vector<double> terms = {combine_scatter_time(in)};
  for (const XchgStrategy *s : registry().entries()) {
    const std::size_t at = terms.size();
    terms.resize(at + static_cast<std::size_t>(s->terms), 0.0);
    s->rank_terms(in, terms.data() + at);
  }
  return terms;
}

PlanStatistics plan_statistics(MPI_Comm comm, const KeyIndex &index, const Histogram &histogram,
                               const std::vector<double> &terms,
                               const std::vector<double> &per_rank, std::int64_t chunk_keys,
                               std::int64_t allgather_keys, SetupClock *clock) {
  PlanStatistics out;
  petacomm_xchg_global_stats &g = out.global;
  int p = 1;
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  g.ranks = p;
  g.chunk_keys = chunk_keys;
  g.allgather_keys = allgather_keys;
  const auto &keys = index.keys();
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

  FusedReduction r;
  const std::size_t at_min = r.add(FusedReduction::kMinI, keys.empty() ? kNone : keys.front());
  const std::size_t at_max = r.add(FusedReduction::kMaxI, keys.empty() ? -1 : keys.back());
  const std::size_t at_unique =
      r.add(FusedReduction::kMaxI, static_cast<std::int64_t>(keys.size()));
  const std::size_t at_hist = r.size();
  for (std::int64_t count : histogram) r.add(FusedReduction::kSumI, count);
  const std::size_t at_terms = r.size();
  for (double v : terms) r.add(FusedReduction::kMaxD, v);
  const std::size_t at_spread = r.size();
  for (double v : per_rank) {
    r.add(FusedReduction::kMinD, v);
    r.add(FusedReduction::kSumD, v);
    r.add(FusedReduction::kMaxD, v);
  }
  const auto chunk = static_cast<std::uint64_t>(chunk_keys);
  std::array<std::uint64_t, kFusedChunkWords> bits{};
  // Keys are ascending and >= 0: one division per touched chunk, not per key.
  for (std::size_t u = 0, next = 0; u < keys.size(); ++u) {
    const auto pos = static_cast<std::uint64_t>(keys[u]);
    if (pos < next) continue;
    const std::uint64_t c = pos / chunk;
    if (c >= 64 * kFusedChunkWords) break;
    bits[c / 64] |= 1ULL << (c % 64);
    next = (c + 1) * chunk;
  }
  const std::size_t at_bits = r.size();
  for (std::uint64_t word : bits) r.add(FusedReduction::kOrI, static_cast<std::int64_t>(word));
  r.run(comm, clock);

  // No rank holds a key when the largest is -1: the smallest's sentinel (kNone) is also a
  // valid key, 2^63 - 1, and taking it for "none" once made a key set of that key alone
  // look empty (and `range` compute a negative owner rank from the range [-1, -1]).
  g.key_max = r.integer(at_max);
  g.key_min = g.key_max < 0 ? -1 : r.integer(at_min);
  g.max_unique = r.integer(at_unique);
  for (int b = 0; b <= PETACOMM_XCHG_HUB_LEVELS; ++b) {
    g.multiplicity[b] = r.integer(at_hist + static_cast<std::size_t>(b));
    g.distinct_keys += g.multiplicity[b];
  }
  out.max_terms.resize(terms.size());
  for (std::size_t j = 0; j < terms.size(); ++j) out.max_terms[j] = r.real(at_terms + j);
  for (std::size_t j = 0; j < per_rank.size(); ++j)
    out.spread.push_back({r.real(at_spread + 3 * j), r.real(at_spread + 3 * j + 1) / p,
                          r.real(at_spread + 3 * j + 2)});

  if (g.key_min >= 0) {
    const auto space = static_cast<std::uint64_t>(g.key_max) + 1;
    const std::uint64_t last = static_cast<std::uint64_t>(g.key_max) / chunk;
    if (last < 64 * kFusedChunkWords) {  // the fused bitmap has every touched chunk
      for (std::uint64_t c = 0; c <= last; ++c)
        if (static_cast<std::uint64_t>(r.integer(at_bits + c / 64)) >> (c % 64) & 1U)
          out.chunks.push_back(c);
      out.chunks_known = true;
    } else if (last - static_cast<std::uint64_t>(g.key_min) / chunk < (std::uint64_t{1} << 23)) {
      MpiWait wait(clock);
      const std::vector<std::uint64_t> positions(keys.begin(), keys.end());
      out.chunks = touched_chunks(comm, positions, chunk, space);
      out.chunks_known = true;
    }
    const std::uint64_t spanned = last - static_cast<std::uint64_t>(g.key_min) / chunk + 1;
    g.dense_chunks = out.chunks_known ? static_cast<std::int64_t>(out.chunks.size())
                                      : static_cast<std::int64_t>(std::min<std::uint64_t>(
                                            spanned, static_cast<std::uint64_t>(g.distinct_keys)));
  }
  return out;
}

namespace {

// "; 1200 distinct keys, 35.2% shared, dense range 40000 keys"
std::string statistics_summary(const petacomm_xchg_global_stats &g) {
  const double shared = g.distinct_keys > 0 ? 1.0 - static_cast<double>(g.multiplicity[0]) /
                                                        static_cast<double>(g.distinct_keys)
                                            : 0.0;
  return concat("; ", g.distinct_keys, " distinct keys, ", std::round(shared * 1000) / 10,
                "% shared, dense range ",
                g.key_min < 0 ? 0 : static_cast<std::uint64_t>(g.key_max - g.key_min) + 1, " keys");
}

}  // namespace

Planned decide(const std::vector<double> &max_terms, const GlobalCost &in) {
  const auto &entries = registry().entries();
  PETACOMM_CHECK_INTERNAL(!max_terms.empty(), "no cost terms");
  // Every execution pays the combine/scatter of the slowest rank and the argument check.
  const double common = max_terms[0] + agreement_time(in.global.ranks, in.cost);
  Planned out;
  std::vector<CandidateCost> candidates;
  std::size_t at = 1;
  for (const XchgStrategy *s : entries) {
    PETACOMM_CHECK_INTERNAL(at + static_cast<std::size_t>(s->terms) <= max_terms.size(),
                            "cost terms of ", s->about.name, " missing");
    petacomm_xchg_prediction p = s->predict(max_terms.data() + at, in);
    at += static_cast<std::size_t>(s->terms);
    p.strategy = s->about.name;
    p.execute_seconds += common;
    const char *why_not = s->not_a_candidate(p);
    candidates.push_back({s->about.name, *why_not == '\0', why_not, p.execute_seconds,
                          std::numeric_limits<double>::quiet_NaN()});
    out.predicted.push_back(p);
  }
  PETACOMM_CHECK_INTERNAL(at == max_terms.size(), "cost terms: ", max_terms.size(), " given, ", at,
                          " read");
  out.decision = decide_cheapest(std::move(candidates));
  out.decision.reason += statistics_summary(in.global);
  return out;
}

std::string decision_json(const Decision &decision) {
  JsonOut j;
  j.begin_object();
  j.value("choice", decision.choice).value("reason", decision.reason);
  j.value("measured", decision.measured);
  j.begin_array("candidates");
  for (const CandidateCost &c : decision.candidates) {
    j.begin_object();
    j.value("name", c.name).value("candidate", c.applicable);
    j.value("not_a_candidate_because", c.not_applicable_because);
    j.value("predicted_execute_seconds", c.predicted_seconds);
    if (!std::isnan(c.measured_seconds)) j.value("measured_execute_seconds", c.measured_seconds);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str();
}

std::vector<petacomm_xchg_minavgmax> min_avg_max(MPI_Comm comm, const std::vector<double> &values) {
  int p = 1;
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  FusedReduction r;
  for (double v : values) {
    r.add(FusedReduction::kMinD, v);
    r.add(FusedReduction::kSumD, v);
    r.add(FusedReduction::kMaxD, v);
  }
  r.run(comm, nullptr);  // after setup
  std::vector<petacomm_xchg_minavgmax> out(values.size());
  for (std::size_t j = 0; j < values.size(); ++j)
    out[j] = {r.real(3 * j), r.real(3 * j + 1) / p, r.real(3 * j + 2)};
  return out;
}

}  // namespace petacomm::xchg
