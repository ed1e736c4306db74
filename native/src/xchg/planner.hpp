// The planner: plan statistics (per rank, then reduced over ranks, collective) and the
// decision (pure: no MPI, no clocks), so the decision is unit-tested offline through
// petacomm_xchg_model_decide with exactly the code a plan runs.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cost_model.hpp"
#include "key_index.hpp"
#include "nbx.hpp"
#include "petacomm/xchg.h"
#include "sharing.hpp"
#include "strategy_registry.hpp"

namespace petacomm::xchg {

using Histogram = std::array<std::int64_t, PETACOMM_XCHG_HUB_LEVELS + 1>;

// This rank's sharing statistics (holder lists give the partner counts; keys whose list is
// not known count towards volumes but not partners).
petacomm_xchg_rank_stats rank_statistics(const KeyIndex &index, const Sharing &sharing, int me,
                                         const SetupTraffic &discovery, std::int64_t reply_ints);

// Every cost term of one rank, reduced elementwise by maximum over ranks: the local work all
// strategies share, then each registered strategy's terms in registry order.
std::vector<double> rank_cost_terms(const RankCost &in);

// What the planner and describe() learn from all ranks.
struct PlanStatistics {
  petacomm_xchg_global_stats global{};
  // The chunks of chunk_keys keys (chunk c: keys [c chunk_keys, (c + 1) chunk_keys)) any
  // rank has keys in, ascending; only when chunks_known (else global.dense_chunks is an
  // estimate: the key range spans more than 2^23 chunks).
  std::vector<std::uint64_t> chunks;
  bool chunks_known = false;
  std::vector<double> max_terms;                // rank_cost_terms, max over ranks
  std::vector<petacomm_xchg_minavgmax> spread;  // of `per_rank`, in its order
};

// Collective: one fused MPI_Allreduce of the key range, the largest key count, the
// multiplicity histogram (`histogram`: this rank's share, each distinct key counted on
// exactly one rank), the cost terms (max), min/sum/max of `per_rank` and a bitmap of the
// touched dense chunks below chunk 4096; only when keys lie beyond those chunks, a second
// reduction of the touched chunks (bitmap or gathered ids when the key range spans at most
// 2^23 chunks, else estimated as min(chunks in range, distinct keys), no communication).
PlanStatistics plan_statistics(MPI_Comm comm, const KeyIndex &index, const Histogram &histogram,
                               const std::vector<double> &terms,
                               const std::vector<double> &per_rank, std::int64_t chunk_keys,
                               std::int64_t allgather_keys, SetupClock *clock);

// The planner's output: a prediction per registered strategy (registry order; execute time
// including the local work and argument check every strategy pays) and auto's decision
// among the candidates (every strategy's predicted cost, the choice and why).
struct Planned {
  std::vector<petacomm_xchg_prediction> predicted;
  Decision decision;
};

// Pure: the predictions from the max-reduced terms and the global statistics, and the
// cheapest candidate. The reason names the runner-up and summarises the statistics.
Planned decide(const std::vector<double> &max_terms, const GlobalCost &in);

// JSON of a decision: {"choice", "reason", "candidates": [{"name", "candidate",
// "not_a_candidate_because", "predicted_execute_seconds"}]}.
std::string decision_json(const Decision &decision);

// Collective (one fused reduction): min, sum/p and max over ranks of each value.
std::vector<petacomm_xchg_minavgmax> min_avg_max(MPI_Comm comm, const std::vector<double> &values);

}  // namespace petacomm::xchg
