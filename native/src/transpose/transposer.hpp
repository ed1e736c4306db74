// One distributed transpose and its inverse on one communicator, with the strategy the
// planner chose: the engine behind slab plans, pencil swaps and the Fourier filter.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "layout.hpp"
#include "mpi_resources.hpp"
#include "options.hpp"
#include "planner.hpp"
#include "strategy.hpp"

namespace petacomm::transpose {

enum class Direction { kForward = 0, kBackward = 1 };

class Transposer {
 public:
  // Collective over comm, which the caller owns and keeps alive (and must not use for
  // other traffic during executions). backward must be forward's inverse geometry.
  Transposer(MPI_Comm comm, Geometry forward, Geometry backward, const TransposeOptions &o);

  // Collective; arguments already checked on every rank. in == out: in place.
  void execute(Direction d, const char *in, char *out);

  const Geometry &geometry(Direction d) const {
    return d == Direction::kForward ? forward_ : backward_;
  }
  int ranks() const { return q_; }
  int rank() const { return me_; }
  // Local rows of the direction's input and output.
  std::int64_t input_rows(Direction d) const { return geometry(d).rows(q_).count(me_); }
  std::int64_t output_rows(Direction d) const { return geometry(d).cols(q_).count(me_); }
  // Bytes the direction's input (output) spans on this rank.
  std::size_t input_bytes(Direction d) const;
  std::size_t output_bytes(Direction d) const;

  // "measure-pending" until a measuring plan's first execution.
  const char *strategy_name() const;
  // This rank, per execution of a direction.
  double messages(Direction d = Direction::kForward) const;
  double bytes(Direction d = Direction::kForward) const;
  std::size_t memory_bytes() const;
  // {"strategy", "ranks", "ranks_per_node", "nodes", "decision": {...}}
  std::string describe_json() const;

 private:
  ExchangeSetup setup(Direction d) const;
  void measure(Direction d, const char *in, char *out);
  void build_chosen();

  MPI_Comm comm_;
  int q_ = 1, me_ = 0;
  Geometry forward_, backward_;
  TransposeOptions options_;
  Datatype element_;
  int ranks_per_node_ = 1, nodes_ = 1;
  Planned planned_;
  bool pending_measure_ = false;
  const TransposeStrategy *chosen_ = nullptr;
  std::unique_ptr<Exchange> exchange_[2];
};

}  // namespace petacomm::transpose
