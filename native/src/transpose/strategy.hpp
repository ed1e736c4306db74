// What a transpose strategy is: a registry entry (name, options, applicability, cost
// function, build function) and the Exchange it builds. Each strategy lives in one file
// (strategy_<name>.cpp) defining its entry; registry.cpp lists the entries in one table.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layout.hpp"
#include "petacomm/transpose.h"
#include "strategy_registry.hpp"

namespace petacomm::transpose {

// What the planner knows of a transpose, without MPI: enough to predict every strategy.
// Nodes are groups of ranks_per_node consecutive ranks.
struct ProblemStats {
  int q = 1;
  std::int64_t n_rows = 0, n_cols = 0, batch = 1;
  double elem = 0;
  int ranks_per_node = 1;
  std::vector<unsigned char> col_kept;  // the mask over columns; empty = none
};

// One strategy's predicted cost of one execution on the busiest rank.
struct CostEstimate {
  double seconds = 0;
  double messages = 0;         // sent by that rank
  double bytes = 0;            // sent to other ranks
  double steps = 0;            // rounds that wait for a partner
  double node_link_bytes = 0;  // leaving one node per execution
};

// Everything a strategy needs to build its exchange for one direction.
struct ExchangeSetup {
  MPI_Comm comm;  // the plan's private communicator (q ranks)
  int q = 1, me = 0;
  const Geometry &geometry;
  MPI_Datatype element;  // committed contiguous type of geometry.elem bytes
  int window = 4;
  int node_size = 0;  // two-level (see petacomm_transpose_options.node_size)
};

// A built strategy: moves this rank's input to its output, collectively.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // Collective. in == out: in place (the buffer holds both extents).
  virtual void execute(const char *in, char *out) = 0;
  virtual double messages() const = 0;  // this rank sends per execution (to other ranks)
  virtual double bytes() const = 0;
  virtual std::size_t memory_bytes() const = 0;
};

struct TransposeStrategy {
  StrategyAbout about;
  // "" when the strategy applies, else why not ("needs a power-of-two number of ranks").
  std::string (*not_applicable)(const ProblemStats &);
  CostEstimate (*cost)(const ProblemStats &, const petacomm_transpose_cost_params &);
  // Collective over setup.comm. Only `partial` reads the geometry's masks (it skips what
  // they exclude); the plan writes the zeros they ask for after any strategy.
  std::unique_ptr<Exchange> (*build)(const ExchangeSetup &);
};

const StrategyRegistry<TransposeStrategy> &registry();

}  // namespace petacomm::transpose
