// The planner's cost model: alpha-beta predictions of every strategy from plan statistics.
// Each rank computes a vector of cost components from its own statistics; the elementwise
// maximum over ranks (an MPI reduction in a plan, a loop offline) is combined with the
// global statistics into one prediction per strategy. The offline C entry point
// petacomm_xchg_model_predict runs exactly this code.
#pragma once

#include <cstdint>
#include <vector>

#include "petacomm/xchg.h"

namespace petacomm::xchg {

enum StrategyId { kDense = 0, kAllgather = 1, kDirectory = 2, kOwner = 3, kHubSplit = 4 };
const char *strategy_name(int id);

// Per-rank cost components (seconds, messages, bytes) to be max-reduced over ranks.
std::vector<double> cost_components(const petacomm_xchg_rank_stats &rank,
                                    const petacomm_xchg_global_stats &global,
                                    const petacomm_xchg_cost_params &cost, double elem_bytes,
                                    bool alltoallv_transport);

// Predictions for the five strategies from the max-reduced components. A hub threshold of
// 0 lets the model choose the best power of two; otherwise it is fixed.
void combine_predictions(const std::vector<double> &max_components,
                         const petacomm_xchg_global_stats &global,
                         const petacomm_xchg_cost_params &cost, double elem_bytes,
                         int fixed_hub_threshold,
                         petacomm_xchg_prediction out[PETACOMM_XCHG_NSTRATEGIES]);

petacomm_xchg_cost_params default_cost_params();

}  // namespace petacomm::xchg
