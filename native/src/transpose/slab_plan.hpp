// The 2-D slab transpose plan behind petacomm_transpose_plan: checks the arguments on every
// rank, duplicates the communicator, lays out the slabs and owns the Transposer.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "petacomm/transpose.h"
#include "transposer.hpp"

namespace petacomm::transpose {

class SlabPlan {
 public:
  // caller_error: a binding's argument error on this rank (see petacomm_transpose_plan_create_ext).
  SlabPlan(MPI_Comm comm, std::int64_t n0, std::int64_t n1, std::int64_t howmany, int dtype,
           const petacomm_transpose_options *opts, const char *caller_error = nullptr);
  ~SlabPlan();
  SlabPlan(const SlabPlan &) = delete;
  SlabPlan &operator=(const SlabPlan &) = delete;

  // Collective. direction: the caller's petacomm_transpose_direction, checked with the other
  // arguments on every rank (an unknown one on one rank fails every rank together).
  void execute(int direction, const void *in, void *out);
  void execute_array(int direction, const petacomm_transpose_array *in,
                     const petacomm_transpose_array *out);
  // Collective: frees the communicator (no-op after MPI_Finalize).
  void release();

  petacomm_transpose_local local() const;
  const char *strategy() const { return transposer_->strategy_name(); }
  const std::string &describe();
  // Collective: out NULL on any rank fails every rank together.
  void stats(petacomm_transpose_stats *out);

 private:
  std::vector<std::int64_t> shape(bool input, Direction d) const;
  void run(int direction, const std::string &problem, const void *in, void *out);

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::int64_t n0_, n1_, howmany_;
  int dtype_;
  std::unique_ptr<Transposer> transposer_;
  double setup_seconds_ = 0;
  std::string description_;
};

// Collective (two reductions): min, mean and max over the ranks of comm of each value.
std::vector<petacomm_transpose_minavgmax> spread(MPI_Comm comm, const std::vector<double> &values);

}  // namespace petacomm::transpose
