#include "cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "mpi_support.hpp"

namespace petacomm::xchg {
namespace {

constexpr int L = PETACOMM_XCHG_HUB_LEVELS;
// Component layout.
enum {
  kLocalCommon = 0,  // combining positions into distinct keys and scattering back
  kPairTime,         // all-pairs exchange on the plan's transport
  kPairA2aTime,      // all-pairs exchange on MPI_Alltoallv
  kOwnerRound1,
  kOwnerRound2,
  kDirectorySetup,
  kPairMessages,
  kPairBytes,
  kOwnerMessages,
  kOwnerBytes,
  kHubTime0,  // + level: sparse remainder of hub-split
  kHubMessages0 = kHubTime0 + L,
  kHubBytes0 = kHubMessages0 + L,
  kComponents = kHubBytes0 + L,
};

double log2p(std::int64_t p) {
  return static_cast<double>(ceil_log2(std::max<std::int64_t>(p, 1)));
}

// Dense reduction of `keys` keys in chunks of chunk keys (allreduce formula).
double dense_time(double keys, double chunks, std::int64_t p, const petacomm_xchg_cost_params &c,
                  double eb) {
  if (keys <= 0) return 0;
  double t = 3.0 * keys * eb * c.local_beta;  // fill, place, copy out
  if (p > 1)
    t += chunks * 2.0 * log2p(p) * c.allreduce_alpha +
         2.0 * (p - 1) / static_cast<double>(p) * keys * eb * c.allreduce_beta;
  return t;
}

}  // namespace

const char *strategy_name(int id) {
  static const char *names[] = {"dense-allreduce", "allgather", "directory", "owner", "hub-split"};
  return id >= 0 && id < PETACOMM_XCHG_NSTRATEGIES ? names[id] : "unknown";
}

petacomm_xchg_cost_params default_cost_params() {
  petacomm_xchg_cost_params c;
  c.p2p_alpha = 2e-6;
  c.p2p_beta = 1.0 / 5e9;
  c.allreduce_alpha = 3e-6;
  c.allreduce_beta = 1.0 / 2e9;
  c.allgather_alpha = 3e-6;
  c.allgather_beta = 1.0 / 3e9;
  c.alltoallv_alpha = 1e-6;
  c.alltoallv_beta = 1.0 / 4e9;
  c.local_beta = 1.0 / 10e9;
  return c;
}

std::vector<double> cost_components(const petacomm_xchg_rank_stats &r,
                                    const petacomm_xchg_global_stats &g,
                                    const petacomm_xchg_cost_params &c, double eb,
                                    bool alltoallv_transport) {
  std::vector<double> v(kComponents, 0.0);
  const double p = static_cast<double>(g.ranks);
  const double u = static_cast<double>(r.n_unique);
  // Local work counts every element read or written (gamma = local_beta per byte): combining
  // positions into distinct keys reads n and writes u, scattering back reads u and writes n.
  v[kLocalCommon] = 2.0 * static_cast<double>(r.n_local + r.n_unique) * eb * c.local_beta;
  const double pair_vals = static_cast<double>(r.pair_values);
  // Pairwise: pack V (read + write), fill the result u, fold own u (read + update), fold the
  // V received (read + update): 3u + 4V.
  const double pair_local = (3.0 * u + 4.0 * pair_vals) * eb * c.local_beta;
  const double a2a = (p - 1) * c.alltoallv_alpha + pair_vals * eb * c.alltoallv_beta + pair_local;
  const double p2p =
      static_cast<double>(r.pair_partners) * c.p2p_alpha + pair_vals * eb * c.p2p_beta + pair_local;
  v[kPairTime] = alltoallv_transport ? a2a : p2p;
  v[kPairA2aTime] = a2a;
  const double send1 = static_cast<double>(r.owner_send_values);
  const double recv1 = static_cast<double>(r.owner_recv_values);
  const double msgs1 = static_cast<double>(std::max(r.owner_sends, r.owner_recvs));
  const double alpha = alltoallv_transport ? c.alltoallv_alpha : c.p2p_alpha;
  const double beta = alltoallv_transport ? c.alltoallv_beta : c.p2p_beta;
  const double fixed = alltoallv_transport ? (p - 1) * alpha : msgs1 * alpha;
  // Round 1: pack s, fill u, fold own u, fold the r received (3u + 2s + 2r); round 2: pack the
  // r results for the holders, copy the s results received (2s + 2r).
  v[kOwnerRound1] = fixed + std::max(send1, recv1) * eb * beta +
                    (3.0 * u + 2.0 * send1 + 2.0 * recv1) * eb * c.local_beta;
  v[kOwnerRound2] =
      fixed + std::max(send1, recv1) * eb * beta + 2.0 * (send1 + recv1) * eb * c.local_beta;
  v[kDirectorySetup] = static_cast<double>(r.directory_send_msgs) * 2.0 * c.p2p_alpha +
                       2.0 * log2p(g.ranks) * c.p2p_alpha +
                       (static_cast<double>(r.directory_send_keys) * 8.0 +
                        static_cast<double>(r.directory_reply_ints) * 4.0) *
                           (c.p2p_beta + 4.0 * c.local_beta) +
                       u * 8.0 * std::log2(std::max(2.0, u)) * c.local_beta;
  v[kPairMessages] = static_cast<double>(r.pair_partners);
  v[kPairBytes] = pair_vals * eb;
  v[kOwnerMessages] = static_cast<double>(r.owner_sends + r.owner_recvs);
  v[kOwnerBytes] = (send1 + recv1) * eb;
  for (int b = 0; b < L; ++b) {
    const double vals = static_cast<double>(r.hub_pair_values[b]);
    v[kHubTime0 + b] = static_cast<double>(r.hub_pair_partners[b]) * c.p2p_alpha +
                       vals * eb * c.p2p_beta + (3.0 * u + 4.0 * vals) * eb * c.local_beta;
    v[kHubMessages0 + b] = static_cast<double>(r.hub_pair_partners[b]);
    v[kHubBytes0 + b] = vals * eb;
  }
  return v;
}

void combine_predictions(const std::vector<double> &m, const petacomm_xchg_global_stats &g,
                         const petacomm_xchg_cost_params &c, double eb, int fixed_hub_threshold,
                         petacomm_xchg_prediction out[PETACOMM_XCHG_NSTRATEGIES]) {
  const std::int64_t p = g.ranks;
  const double B = static_cast<double>(std::max<std::int64_t>(g.chunk_keys, 1));
  const double range =
      g.key_max >= g.key_min && g.key_min >= 0 ? static_cast<double>(g.key_max - g.key_min) + 1 : 0;
  const double chunks = static_cast<double>(g.dense_chunks);
  const double dense_keys = std::min(chunks * B, range);
  for (int s = 0; s < PETACOMM_XCHG_NSTRATEGIES; ++s) {
    out[s] = petacomm_xchg_prediction{strategy_name(s), 0, 0, 0, 0, 0, 0};
  }
  const double dense_msgs = p > 1 ? chunks * 2.0 * log2p(p) : 0;
  const double dense_bytes_per_key = p > 1 ? 2.0 * (p - 1) / static_cast<double>(p) * eb : 0;
  out[kDense].execute_seconds = m[kLocalCommon] + dense_time(dense_keys, chunks, p, c, eb);
  out[kDense].setup_seconds = 2.0 * log2p(p) * c.allreduce_alpha;
  out[kDense].messages = dense_msgs;
  out[kDense].bytes = dense_keys * dense_bytes_per_key;

  const double nb = static_cast<double>(std::max<std::int64_t>(
      1, std::min(g.allgather_keys, std::max<std::int64_t>(g.max_unique, 1))));
  const double rounds = g.max_unique > 0 ? std::ceil(static_cast<double>(g.max_unique) / nb) : 0;
  out[kAllgather].execute_seconds = m[kLocalCommon] + m[kPairA2aTime];
  out[kAllgather].setup_seconds =
      rounds * (log2p(p) * c.allgather_alpha + (p - 1) * nb * 8.0 * c.allgather_beta +
                (p - 1) * nb * 8.0 * 4.0 * c.local_beta);
  out[kAllgather].messages = m[kPairMessages];
  out[kAllgather].bytes = m[kPairBytes];

  out[kDirectory].execute_seconds = m[kLocalCommon] + m[kPairTime];
  out[kDirectory].setup_seconds = m[kDirectorySetup];
  out[kDirectory].messages = m[kPairMessages];
  out[kDirectory].bytes = m[kPairBytes];

  out[kOwner].execute_seconds = m[kLocalCommon] + m[kOwnerRound1] + m[kOwnerRound2];
  out[kOwner].setup_seconds = m[kDirectorySetup];
  out[kOwner].messages = m[kOwnerMessages];
  out[kOwner].bytes = m[kOwnerBytes];

  // hub-split: keys with d > T = 2^b by one dense reduction, the rest pairwise.
  double best = -1;
  for (int b = 0; b < L && (std::int64_t{1} << b) < std::max<std::int64_t>(p, 2); ++b) {
    const int threshold = 1 << b;
    if (fixed_hub_threshold > 0 &&
        !(threshold <= fixed_hub_threshold && (b + 1 >= L || (1 << (b + 1)) > fixed_hub_threshold)))
      continue;
    double hubs = 0;
    for (int bucket = 0; bucket <= L; ++bucket) {
      // bucket holds d in (2^(bucket-1), 2^bucket]: all above 2^b when bucket > b.
      if (bucket > b) hubs += static_cast<double>(g.multiplicity[bucket]);
    }
    const double hub_chunks = std::ceil(hubs / B);
    const double t = m[kLocalCommon] + m[kHubTime0 + b] + dense_time(hubs, hub_chunks, p, c, eb);
    if (best < 0 || t < best) {
      best = t;
      out[kHubSplit].execute_seconds = t;
      out[kHubSplit].messages = m[kHubMessages0 + b] + (p > 1 ? hub_chunks * 2.0 * log2p(p) : 0);
      out[kHubSplit].bytes = m[kHubBytes0 + b] + hubs * dense_bytes_per_key;
      out[kHubSplit].hub_threshold = fixed_hub_threshold > 0 ? fixed_hub_threshold : threshold;
      out[kHubSplit].hub_keys = static_cast<std::int64_t>(hubs);
    }
  }
  out[kHubSplit].setup_seconds = m[kDirectorySetup] + 2.0 * log2p(p) * c.p2p_alpha;
  if (best < 0) out[kHubSplit].execute_seconds = out[kDirectory].execute_seconds;
}

}  // namespace petacomm::xchg
