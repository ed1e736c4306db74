// SparseReducePlan: the object behind the C handle. Creation agrees on the arguments over
// all ranks, duplicates the communicator, indexes the keys, runs the discovery the strategy
// needs, computes the statistics, asks the planner (or is told) which strategy to build,
// optionally autotunes, and records what it did for describe(). Execution checks its
// arguments collectively (the exchange goes ahead meanwhile when that is safe), combines
// repeated keys (or works in the caller's array when the keys are distinct and sorted),
// runs the strategy and scatters the results back.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cost_model.hpp"
#include "element_op.hpp"
#include "key_index.hpp"
#include "mpi_support.hpp"
#include "petacomm/xchg.h"
#include "planner.hpp"
#include "private_comm.hpp"
#include "strategy.hpp"

namespace petacomm::xchg {

petacomm_xchg_options default_options();

struct XchgStrategy;
struct BuildContext;
class Directory;

class Plan {
 public:
  // caller_error: a binding's argument error on this rank (NULL or "": none); see xchg.h.
  Plan(MPI_Comm comm, const std::int64_t *keys, std::int64_t n,
       const petacomm_xchg_options *options, const petacomm_xchg_p2p_curve *p2p,
       const char *caller_error);
  ~Plan();
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;

  void begin(MPI_Comm comm, void *values, std::int64_t n, int k, petacomm_xchg_dtype dtype,
             petacomm_xchg_op op, const petacomm_xchg_user_op *user, const char *caller_error);
  void end();
  // Collective: completes an active execution and frees the communicators.
  void release();

  const char *strategy_name() const { return strategy_->name(); }
  std::int64_t positions() const { return index_.positions(); }
  // describe()'s JSON, written on the first call from what creation kept (most plans are
  // never described, and writing it costs as much as a small plan's discovery).
  const std::string &description() const;
  // Collective: fails on every rank together when any rank's dtype, k or out is bad.
  void stats(petacomm_xchg_dtype dtype, int k, petacomm_xchg_stats *out);

 private:
  struct Discovered;
  struct Choice;
  struct Described;
  // directory: the directory after its first step (keys sent home), which every plan runs.
  void build(const petacomm_xchg_options &o, const CostModel &cost,
             std::unique_ptr<Directory> directory);
  Discovered discover(const XchgStrategy *requested, const petacomm_xchg_options &o,
                      std::unique_ptr<Directory> directory);
  void plan_statistics_of(Discovered &found, const petacomm_xchg_options &o, const CostModel &cost,
                          Choice &choice);
  std::unique_ptr<Strategy> build_one(const XchgStrategy &entry, BuildContext &ctx, Choice &choice);
  void autotune(const petacomm_xchg_options &o, BuildContext &ctx, Choice &choice);
  double measure(Strategy &strategy, int reps);
  const ElementType &element_type(std::size_t bytes);
  ExecContext context(const ElementOp &op);
  // The distinct-key values an execution works on: the caller's array itself when every
  // position holds a distinct key in ascending order, else own_ with repeats combined.
  void *distinct_values(const ElementOp &op, void *values);
  std::string check_execution(MPI_Comm comm, const void *values, std::int64_t n, int k,
                              petacomm_xchg_dtype dtype, petacomm_xchg_op op,
                              const petacomm_xchg_user_op *user,
                              std::unique_ptr<ElementOp> *element) const;
  std::string describe(const Described &d) const;

  PrivateComm private_;            // the plan's communicator and tags
  MPI_Comm comm_ = MPI_COMM_NULL;  // private_.get()
  int rank_ = 0, size_ = 1;
  KeyIndex index_;
  std::unique_ptr<Strategy> strategy_;
  bool deterministic_ = false;
  petacomm_xchg_dtype plan_dtype_ = PETACOMM_XCHG_FLOAT64;
  int plan_k_ = 1;
  std::map<std::size_t, ElementType> types_;
  std::unique_ptr<ElementOp> plan_element_;  // the element every rank agreed on at creation
  std::vector<char> own_;
  ArgumentCheck check_;
  // Active execution.
  bool active_ = false;
  void *values_ = nullptr, *data_ = nullptr;
  std::unique_ptr<ElementOp> op_;
  mutable std::unique_ptr<Described> described_;  // until description() is first called
  mutable std::string description_;
  SetupClock setup_;  // this rank's plan creation
};

}  // namespace petacomm::xchg
