#include "planner.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "dense_reducer.hpp"
#include "directory.hpp"
#include "error.hpp"

namespace petacomm::xchg {

petacomm_xchg_rank_stats rank_statistics(const KeyIndex &index, const Sharing &sharing, int me,
                                         const SetupTraffic &discovery, std::int64_t reply_ints) {
  petacomm_xchg_rank_stats r{};
  r.n_local = index.positions();
  r.n_unique = static_cast<std::int64_t>(index.unique());
  std::unordered_map<int, int> min_d;  // partner -> smallest d of a key shared with it
  std::unordered_map<int, int> owners, holders;
  for (std::size_t u = 0; u < sharing.keys(); ++u) {
    const int d = sharing.multiplicity[u];
    for (int b = 0; b < PETACOMM_XCHG_HUB_LEVELS; ++b) {
      const std::int64_t threshold = std::int64_t{1} << b;
      if (d > threshold) {
        r.hub_keys[b] += 1;
      } else if (d >= 2) {
        r.hub_pair_values[b] += d - 1;
      }
    }
    if (d < 2) continue;
    r.n_shared += 1;
    r.pair_values += d - 1;
    for (std::int64_t j = sharing.list_begin[u]; j < sharing.list_begin[u + 1]; ++j) {
      auto [it, fresh] = min_d.emplace(sharing.list_ranks[j], d);
      if (!fresh) it->second = std::min(it->second, d);
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
  r.pair_partners = static_cast<std::int64_t>(min_d.size());
  r.owner_sends = static_cast<std::int64_t>(owners.size());
  r.owner_recvs = static_cast<std::int64_t>(holders.size());
  for (const auto &[partner, d] : min_d)
    for (int b = 0; b < PETACOMM_XCHG_HUB_LEVELS; ++b)
      if (d <= (std::int64_t{1} << b)) r.hub_pair_partners[b] += 1;
  r.directory_send_msgs = discovery.messages;
  r.directory_send_keys = static_cast<std::int64_t>(index.unique());
  r.directory_reply_ints = reply_ints;
  return r;
}

petacomm_xchg_global_stats global_statistics(MPI_Comm comm, const KeyIndex &index,
                                             const Histogram &histogram, std::int64_t chunk_keys,
                                             std::int64_t allgather_keys,
                                             std::int64_t dense_chunks) {
  petacomm_xchg_global_stats g{};
  int p = 1;
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  g.ranks = p;
  g.chunk_keys = chunk_keys;
  g.allgather_keys = allgather_keys;
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  const auto &keys = index.keys();
  std::int64_t mins[2] = {keys.empty() ? kNone : keys.front(), keys.empty() ? kNone : -keys.back()};
  std::int64_t gmins[2];
  check_mpi(MPI_Allreduce(mins, gmins, 2, MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce");
  g.key_min = gmins[0] == kNone ? -1 : gmins[0];
  g.key_max = gmins[1] == kNone ? -1 : -gmins[1];
  std::int64_t mine = static_cast<std::int64_t>(keys.size());
  check_mpi(MPI_Allreduce(&mine, &g.max_unique, 1, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(histogram.data(), g.multiplicity, PETACOMM_XCHG_HUB_LEVELS + 1,
                          MPI_INT64_T, MPI_SUM, comm),
            "MPI_Allreduce");
  for (std::int64_t count : g.multiplicity) g.distinct_keys += count;
  if (dense_chunks >= 0 || g.key_min < 0) {
    g.dense_chunks = std::max<std::int64_t>(dense_chunks, 0);
    return g;
  }
  const auto space = static_cast<std::uint64_t>(g.key_max - g.key_min) + 1;
  const auto chunk = static_cast<std::uint64_t>(chunk_keys);
  const std::uint64_t nchunks = (space - 1) / chunk + 1;
  if (nchunks <= (std::uint64_t{1} << 23)) {
    std::vector<std::uint64_t> positions(keys.size());
    for (std::size_t u = 0; u < keys.size(); ++u)
      positions[u] = static_cast<std::uint64_t>(keys[u] - g.key_min);
    g.dense_chunks =
        static_cast<std::int64_t>(touched_chunks(comm, positions, chunk, space).size());
  } else {
    g.dense_chunks = std::min<std::int64_t>(static_cast<std::int64_t>(nchunks), g.distinct_keys);
  }
  return g;
}

std::array<petacomm_xchg_prediction, PETACOMM_XCHG_NSTRATEGIES> predict_collective(
    MPI_Comm comm, const petacomm_xchg_rank_stats &rank, const petacomm_xchg_global_stats &global,
    const petacomm_xchg_cost_params &cost, double elem_bytes, bool alltoallv_transport,
    int fixed_hub_threshold) {
  std::vector<double> mine = cost_components(rank, global, cost, elem_bytes, alltoallv_transport);
  std::vector<double> worst(mine.size());
  check_mpi(MPI_Allreduce(mine.data(), worst.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                          MPI_MAX, comm),
            "MPI_Allreduce");
  std::array<petacomm_xchg_prediction, PETACOMM_XCHG_NSTRATEGIES> out{};
  combine_predictions(worst, global, cost, elem_bytes, fixed_hub_threshold, out.data());
  return out;
}

std::vector<petacomm_xchg_minavgmax> min_avg_max(MPI_Comm comm, const std::vector<double> &values) {
  int p = 1;
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  const int n = static_cast<int>(values.size());
  std::vector<double> lo(values.size()), hi(values.size()), sum(values.size());
  check_mpi(MPI_Allreduce(values.data(), lo.data(), n, MPI_DOUBLE, MPI_MIN, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(values.data(), hi.data(), n, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(values.data(), sum.data(), n, MPI_DOUBLE, MPI_SUM, comm),
            "MPI_Allreduce");
  std::vector<petacomm_xchg_minavgmax> out(values.size());
  for (std::size_t j = 0; j < values.size(); ++j) out[j] = {lo[j], sum[j] / p, hi[j]};
  return out;
}

}  // namespace petacomm::xchg
