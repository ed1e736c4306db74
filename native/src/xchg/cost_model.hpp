// The planner's cost model: the machine parameters (alpha-beta, optionally a piecewise
// point-to-point fit) and the formulas the strategies' cost functions share. Each strategy
// prices itself in its own file (registry.hpp: rank_terms and predict); this file holds
// only what several of them use. No MPI: the offline model runs the same code.
#pragma once

#include <cstdint>
#include <string>

#include "petacomm/xchg.h"

namespace petacomm::xchg {

petacomm_xchg_cost_params default_cost_params();

// The machine as the planner sees it.
class CostModel {
 public:
  // curve may be NULL or have 0 pieces: params.p2p_alpha/p2p_beta at every size.
  explicit CostModel(const petacomm_xchg_cost_params &params,
                     const petacomm_xchg_p2p_curve *curve = nullptr);

  const petacomm_xchg_cost_params &params() const { return params_; }
  const petacomm_xchg_p2p_curve &curve() const { return curve_; }

  // Point-to-point alpha (s) and beta (s/byte) for a message of `bytes` bytes.
  double p2p_alpha(double bytes) const;
  double p2p_beta(double bytes) const;
  // `messages` point-to-point messages carrying `bytes` bytes in total, each priced at the
  // piece covering the mean message size bytes / messages.
  double p2p(double messages, double bytes) const;

 private:
  int piece(double bytes) const;
  petacomm_xchg_p2p_curve curve_{};
  petacomm_xchg_cost_params params_;
};

// Throws ERR_ARG naming the field unless every parameter is finite and >= 0 and the curve
// is well formed. Returns "" or the message (used to agree on errors collectively).
const char *cost_param_name(int i);  // i-th double of petacomm_xchg_cost_params
double cost_param(const petacomm_xchg_cost_params &c, int i);
constexpr int kCostParams = 9;
std::string validate_cost(const petacomm_xchg_cost_params &cost,
                          const petacomm_xchg_p2p_curve *curve);

// Inputs of a strategy's per-rank cost terms: this rank's statistics and what every rank
// knows before the statistics are reduced (the terms travel in that same reduction).
struct RankCost {
  const petacomm_xchg_rank_stats &rank;
  std::int64_t ranks;
  const CostModel &cost;
  double elem_bytes;
  bool alltoallv;  // the plan's transport is MPI_Alltoallv
};

// Inputs of a strategy's prediction: the global statistics (with the per-rank terms already
// reduced by maximum over ranks, passed separately).
struct GlobalCost {
  const petacomm_xchg_global_stats &global;
  const CostModel &cost;
  double elem_bytes;
  int fixed_hub_threshold;  // options.hub_threshold (0: the model chooses)
};

// ceil(log2 p) as a double (0 for p <= 1).
double log2_steps(std::int64_t p);

// Local work every strategy pays per execution (combine positions into distinct keys, read
// n write u; scatter back, read u write n): 2 (n + u) E gamma.
double combine_scatter_time(const RankCost &in);

// The per-execution argument check on p > 1 ranks: one small MPI_Allreduce, 2 ceil(log2 p)
// allreduce latencies.
double agreement_time(std::int64_t p, const CostModel &cost);

// A dense reduction of `keys` keys in `chunks` chunks: allreduce latency per chunk, the
// Rabenseifner volume, and local fill + place + copy out (3 keys E gamma).
double dense_time(double keys, double chunks, std::int64_t p, const CostModel &cost, double eb);
double dense_messages(double chunks, std::int64_t p);
double dense_bytes(double keys, std::int64_t p, double eb);

// One exchange with `partners` peers moving `values` values per rank on the plan's
// transport: (p-1) alpha_a2a + bytes beta_a2a on MPI_Alltoallv, else point to point.
double exchange_time(const RankCost &in, double partners, double values);

// All-pairs exchange's local work: pack V, fill u, fold own u, fold the V received.
double pairwise_local_time(const RankCost &in, double values);

// Directory discovery (NBX to homes, replies, the local sort): shared by every strategy
// built on the directory.
double directory_setup_time(const RankCost &in);

}  // namespace petacomm::xchg
