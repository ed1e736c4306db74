// The sparse-reduction strategy registry. A strategy is one source file (strategy_*.cpp)
// defining one XchgStrategy entry: its name, summary and options, what discovery it needs,
// its cost function (per-rank terms + prediction) and its build function. registry.cpp
// lists the entries once; the planner, describe(), the offline model and the C API (hence
// the Python binding, the benchmark and the docs' strategy table) all read that list.
// docs/sparse-reduce.md ("Adding a strategy") walks through adding one.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "cost_model.hpp"
#include "exchange.hpp"
#include "key_index.hpp"
#include "node_topology.hpp"
#include "petacomm/xchg.h"
#include "private_comm.hpp"
#include "sharing.hpp"
#include "strategy.hpp"
#include "strategy_registry.hpp"

namespace petacomm::xchg {

class Directory;
struct PlanStatistics;

// What a strategy needs to know about sharing before it can be built (and priced).
enum class Discovery {
  kNone,       // nothing: the plan learns only the key range (no predictions)
  kAllgather,  // the study's buffered MPI_Allgather of every key list
  kDirectory,  // the distributed directory (what auto runs)
};

// What a build function may use, and what it reports back for describe().
struct BuildContext {
  MPI_Comm comm;
  int tag_base;       // the plan's block of tags on comm: tag(kTagPairs) etc.
  SetupClock *clock;  // the plan's setup clock: MpiWait scopes of the build time on it
  const KeyIndex &index;
  const petacomm_xchg_options &options;
  Transport transport;
  bool deterministic;
  Sharing *sharing = nullptr;                           // with discovery kAllgather / kDirectory
  Directory *directory = nullptr;                       // with discovery kDirectory
  const petacomm_xchg_prediction *predicted = nullptr;  // this strategy's, if predicted
  const PlanStatistics *statistics = nullptr;           // what the plan learnt of all ranks
  // Out: what the build chose beyond the options (hub-split: its threshold), for reasons.
  std::string detail;
  int hub_threshold = 0;
  std::int64_t hub_keys = 0;

  int tag(PlanTag which) const { return tag_base + which; }
};

struct XchgStrategy {
  StrategyAbout about;
  Discovery discovery;
  // Directory discovery returns holder lists for keys with d <= this (INT_MAX: all).
  int (*holder_lists)(const petacomm_xchg_options &options);
  // Per-rank cost terms (seconds, messages, bytes...): `terms` values written to out. The
  // planner reduces each by maximum over ranks.
  int terms;
  void (*rank_terms)(const RankCost &in, double *out);
  // The prediction of one execution from the max-reduced terms and the global statistics,
  // without the local work and argument check every strategy pays (the planner adds them).
  // strategy is left for the planner to fill.
  petacomm_xchg_prediction (*predict)(const double *max_terms, const GlobalCost &in);
  // "" when auto may choose it for this prediction, else why not.
  const char *(*not_a_candidate)(const petacomm_xchg_prediction &predicted);
  // Collective over ctx.comm.
  std::unique_ptr<Strategy> (*build)(BuildContext &ctx);
  // The plan finds the nodes (NodeTopology: machines, or PETACOMM_NODE_SIZE virtual nodes)
  // and the node statistics (petacomm_xchg_rank_stats' node fields) before pricing.
  bool needs_nodes = false;
};

const StrategyRegistry<XchgStrategy> &registry();

// Helpers for entries.
int all_holder_lists(const petacomm_xchg_options &);
const char *always_a_candidate(const petacomm_xchg_prediction &);

}  // namespace petacomm::xchg
