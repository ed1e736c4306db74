// Planner support: plan statistics (per rank and global) and the in-plan predictions.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

#include "cost_model.hpp"
#include "key_index.hpp"
#include "nbx.hpp"
#include "petacomm/xchg.h"
#include "sharing.hpp"

namespace petacomm::xchg {

using Histogram = std::array<std::int64_t, PETACOMM_XCHG_HUB_LEVELS + 1>;

// This rank's sharing statistics (holder lists give the partner counts; keys whose list is
// not known count towards volumes but not partners).
petacomm_xchg_rank_stats rank_statistics(const KeyIndex &index, const Sharing &sharing, int me,
                                         const SetupTraffic &discovery, std::int64_t reply_ints);

// What the planner and describe() learn from all ranks.
struct PlanStatistics {
  petacomm_xchg_global_stats global{};
  std::array<petacomm_xchg_prediction, PETACOMM_XCHG_NSTRATEGIES> predicted{};
  std::vector<petacomm_xchg_minavgmax> spread;  // of `per_rank`, in its order
};

// Collective, two reductions: one fused MPI_Allreduce of the key range, the largest key
// count, the multiplicity histogram (`histogram`: this rank's share, each distinct key
// counted on exactly one rank), the per-rank cost components (max) and min/sum/max of
// `per_rank`; then the touched dense chunks (bitmap reduction when the key range allows,
// else estimated as min(chunks in range, distinct keys), no communication).
PlanStatistics plan_statistics(MPI_Comm comm, const KeyIndex &index,
                               const petacomm_xchg_rank_stats &rank, const Histogram &histogram,
                               const std::vector<double> &per_rank, std::int64_t chunk_keys,
                               std::int64_t allgather_keys, const petacomm_xchg_cost_params &cost,
                               double elem_bytes, bool alltoallv_transport,
                               int fixed_hub_threshold);

// Collective (one fused reduction): min, sum/p and max over ranks of each value.
std::vector<petacomm_xchg_minavgmax> min_avg_max(MPI_Comm comm, const std::vector<double> &values);

}  // namespace petacomm::xchg
