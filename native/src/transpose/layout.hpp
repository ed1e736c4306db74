// The data layout of one distributed transpose: which rows and columns each rank holds,
// and how a rank's local arrays are laid out in memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace petacomm::transpose {

// n indices split over p ranks in contiguous blocks; the first n mod p ranks hold one more.
struct BlockDistribution {
  std::int64_t n = 0;
  int p = 1;
  std::int64_t count(int r) const { return n / p + (r < n % p ? 1 : 0); }
  std::int64_t offset(int r) const { return r * (n / p) + std::min<std::int64_t>(r, n % p); }
  std::int64_t max_count() const { return n / p + (n % p ? 1 : 0); }
};

// A global n_rows x n_cols array (elements of elem bytes), repeated over `batch` local
// batches, distributed by rows over q ranks in the input and by columns in the output.
// Input element (local row i, column j, batch b) is at in_row i + j + in_batch b elements
// from the input's start; output element (local column j, row i, batch b) at
// out_row j + i + out_batch b. Rows and columns outside the kept lists (empty = all kept)
// are zero: the input's are never read, the output's are written as zeros.
struct Geometry {
  std::int64_t n_rows = 0, n_cols = 0, batch = 1;
  std::size_t elem = 0;
  std::int64_t in_row = 0, in_batch = 0;
  std::int64_t out_row = 0, out_batch = 0;
  std::vector<unsigned char> row_kept, col_kept;
  // false: the excluded part of the output is left as it was instead of zeroed (for an
  // internal caller that never reads it: the Fourier filter's skipped mode lines).
  bool zero_output_outside_mask = true;

  BlockDistribution rows(int q) const { return {n_rows, q}; }
  BlockDistribution cols(int q) const { return {n_cols, q}; }
  bool masked() const { return !row_kept.empty() || !col_kept.empty(); }
  // Elements the rank's input (output) spans from its start: what a buffer must hold.
  std::int64_t in_extent(std::int64_t local_rows) const {
    if (local_rows == 0 || n_cols == 0 || batch == 0) return 0;
    return (batch - 1) * in_batch + (local_rows - 1) * in_row + n_cols;
  }
  std::int64_t out_extent(std::int64_t local_cols) const {
    if (local_cols == 0 || n_rows == 0 || batch == 0) return 0;
    return (batch - 1) * out_batch + (local_cols - 1) * out_row + n_rows;
  }
};

// Runs of consecutive kept indices inside [offset, offset + count), relative to offset.
struct Run {
  std::int64_t start, length;
};
std::vector<Run> kept_runs(const std::vector<unsigned char> &kept, std::int64_t offset,
                           std::int64_t count);

}  // namespace petacomm::transpose
