// The planner's decision, pure: from the problem's statistics and the cost parameters to
// every strategy's applicability and predicted cost, and the cheapest (core's
// decide_cheapest). Plan creation calls it; so do the offline model and its unit tests.
#pragma once

#include <string>
#include <vector>

#include "petacomm/transpose.h"
#include "strategy.hpp"

namespace petacomm::transpose {

struct Planned {
  Decision decision;                    // candidates in registry order
  std::vector<CostEstimate> estimates;  // the same order
};

// Every registered strategy, predicted. When `forced` names a strategy, that one is the
// choice (ERR_ARG when it does not apply, saying why); "auto" takes the cheapest.
Planned decide(const ProblemStats &stats, const petacomm_transpose_cost_params &cost,
               const std::string &forced = "auto");

// The statistics of a problem as the C API describes it; "" or a problem naming the field.
ProblemStats problem_stats(const petacomm_transpose_problem &p, std::string *problem);

// {"choice", "reason", "measured", "candidates": [...]} (the model_decide and describe form).
std::string decision_json(const Planned &planned);

}  // namespace petacomm::transpose
