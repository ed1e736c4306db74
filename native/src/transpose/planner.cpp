#include "planner.hpp"

#include "json_out.hpp"

namespace petacomm::transpose {

Planned decide(const ProblemStats &stats, const petacomm_transpose_cost_params &cost,
               const std::string &forced) {
  Planned out;
  std::vector<CandidateCost> candidates;
  for (const TransposeStrategy *s : registry().entries()) {
    CandidateCost c;
    c.name = s->about.name;
    c.not_applicable_because = s->not_applicable(stats);
    c.applicable = c.not_applicable_because.empty();
    CostEstimate e;
    if (c.applicable) {
      e = s->cost(stats, cost);
      c.predicted_seconds = e.seconds;
    }
    candidates.push_back(std::move(c));
    out.estimates.push_back(e);
  }
  if (forced == "auto") {
    out.decision = decide_cheapest(std::move(candidates));
    return out;
  }
  const int index = registry().index_of(forced);
  if (index < 0) registry().require("strategy", forced);  // throws naming the choices
  const CandidateCost &chosen = candidates[index];
  if (!chosen.applicable) fail_arg("strategy: ", forced, " ", chosen.not_applicable_because);
  out.decision.choice = forced;
  out.decision.reason = "requested by the caller";
  out.decision.candidates = std::move(candidates);
  return out;
}

ProblemStats problem_stats(const petacomm_transpose_problem &p, std::string *problem) {
  ProblemStats s;
  auto bad = [&](const char *field, std::int64_t value, const char *rule) {
    *problem = concat("problem.", field, ": ", rule, ", got ", value);
    return s;
  };
  if (p.ranks < 1 || p.ranks > (1 << 30)) return bad("ranks", p.ranks, "must be in [1, 2^30]");
  if (p.n0 < 1) return bad("n0", p.n0, "must be >= 1");
  if (p.n1 < 1) return bad("n1", p.n1, "must be >= 1");
  if (p.batch < 1) return bad("batch", p.batch, "must be >= 1");
  if (p.elem_bytes < 1) return bad("elem_bytes", p.elem_bytes, "must be >= 1");
  if (p.ranks_per_node < 1) return bad("ranks_per_node", p.ranks_per_node, "must be >= 1");
  if (p.mask == nullptr && p.mask_length != 0) {
    *problem = concat("problem.mask: NULL with mask_length ", p.mask_length);
    return s;
  }
  if (p.mask != nullptr && p.mask_length != p.n1)
    return bad("mask_length", p.mask_length, "must equal n1 when a mask is given");
  s.q = static_cast<int>(p.ranks);
  s.n_rows = p.n0;
  s.n_cols = p.n1;
  s.batch = p.batch;
  s.elem = static_cast<double>(p.elem_bytes);
  s.ranks_per_node = static_cast<int>(std::min(p.ranks_per_node, p.ranks));
  if (p.mask != nullptr)
    for (std::int64_t j = 0; j < p.n1; ++j) s.col_kept.push_back(p.mask[j] != 0);
  return s;
}

std::string decision_json(const Planned &planned) {
  const Decision &d = planned.decision;
  JsonOut j;
  j.begin_object();
  j.value("choice", d.choice).value("reason", d.reason).value("measured", d.measured);
  j.begin_array("candidates");
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    const CandidateCost &c = d.candidates[i];
    const CostEstimate &e = planned.estimates[i];
    j.begin_object();
    j.value("name", c.name).value("applicable", c.applicable);
    j.value("not_applicable_because", c.not_applicable_because);
    j.value("predicted_seconds", c.predicted_seconds);
    j.value("measured_seconds", c.measured_seconds);
    j.value("messages", e.messages).value("bytes", e.bytes).value("steps", e.steps);
    j.value("node_link_bytes", e.node_link_bytes);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str();
}

}  // namespace petacomm::transpose
