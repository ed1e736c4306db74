// 3-D pencil decompositions: three layouts (Z, Y, X: the axis each rank holds whole) on a
// grid[0] x grid[1] process grid and the swaps between adjacent ones, each a Transposer on
// a row or column sub-communicator. Layouts as documented in petacomm/transpose.h.
#pragma once

#include <mpi.h>

#include <array>
#include <memory>
#include <string>

#include "petacomm/transpose.h"
#include "transposer.hpp"

namespace petacomm::transpose {

class PencilPlan {
 public:
  // caller_error: as SlabPlan's.
  PencilPlan(MPI_Comm comm, const std::int64_t n[3], const int grid[2], std::int64_t howmany,
             int dtype, const petacomm_transpose_options *opts, const char *caller_error = nullptr);
  ~PencilPlan();
  PencilPlan(const PencilPlan &) = delete;
  PencilPlan &operator=(const PencilPlan &) = delete;

  void execute(int from, int to, const void *in, void *out);
  void execute_array(int from, int to, const petacomm_transpose_array *in,
                     const petacomm_transpose_array *out);
  void release();

  // Storage shape and global offsets of a layout (ERR_ARG for an unknown layout).
  void local(int layout, std::int64_t shape[3], std::int64_t offset[3]) const;
  const std::string &describe();

 private:
  // The swap between from and to: its transposer and direction, or "" -> problem text.
  std::string swap(int from, int to, Transposer **t, Direction *d);
  std::vector<std::int64_t> array_shape(int layout) const;
  std::size_t layout_bytes(int layout) const;
  void run(const std::string &problem, int from, int to, const void *in, void *out);

  MPI_Comm comm_ = MPI_COMM_NULL, row_comm_ = MPI_COMM_NULL, col_comm_ = MPI_COMM_NULL;
  std::array<std::int64_t, 3> n_{};
  int grid_[2] = {1, 1}, i0_ = 0, i1_ = 0;
  std::int64_t howmany_ = 1;
  int dtype_ = 0;
  std::unique_ptr<Transposer> zy_, yx_;  // on the row and the column communicator
  double setup_seconds_ = 0;
  std::string description_;
};

}  // namespace petacomm::transpose
