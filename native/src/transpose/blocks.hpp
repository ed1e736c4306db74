// The blocks of one rank's transpose: block (r -> s) is rank r's rows x rank s's columns
// over all batches. A block travels packed as [batch][column of s][row of r], already
// transposed, so the receiver copies contiguous runs of rows into its output. Every
// strategy moves its data with these functions.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "layout.hpp"

namespace petacomm::transpose {

class Blocks {
 public:
  // honour_mask: blocks hold only kept rows and columns (the partial strategy); otherwise
  // whole blocks move and the caller zeroes the excluded part afterwards.
  Blocks(const Geometry &g, int q, int me, bool honour_mask);

  int ranks() const { return q_; }
  int me() const { return me_; }
  std::size_t elem() const { return g_.elem; }
  // Elements in block (src -> dst), and in a block of the largest row and column counts.
  std::int64_t elements(int src, int dst) const {
    return kept_rows_[src] * kept_cols_[dst] * g_.batch;
  }
  std::size_t bytes(int src, int dst) const {
    return static_cast<std::size_t>(elements(src, dst)) * g_.elem;
  }
  std::size_t max_block_bytes() const;
  // Bytes of all blocks this rank sends (receives), itself included.
  std::size_t send_bytes() const;
  std::size_t recv_bytes() const;

  // Block (me -> dst) from the input into buf (bytes(me, dst) bytes).
  void pack(const char *in, int dst, char *buf) const;
  // Block (src -> me) from buf into the output.
  void unpack(const char *buf, int src, char *out) const;
  // Block (me -> me) straight from the input to the output (not in place).
  void transpose_self(const char *in, char *out) const;
  // A committed datatype (count 1, relative to the output's start) placing block
  // (src -> me), as it travels, where unpack() would put it: a receive straight into the
  // output, without the unpacking copy. Whole blocks only (honour_mask false).
  MPI_Datatype landing_type(int src, MPI_Datatype element) const;

 private:
  const Geometry &g_;
  int q_, me_;
  BlockDistribution rows_, cols_;
  std::vector<std::vector<Run>> row_runs_, col_runs_;  // per rank, relative to its block
  std::vector<std::int64_t> kept_rows_, kept_cols_;    // per rank
};

// Writes zeros where the geometry's masks exclude rows or columns of this rank's output.
void zero_excluded(const Geometry &g, int q, int me, char *out);

}  // namespace petacomm::transpose
