#include "blocks.hpp"

#include <algorithm>

#include "error.hpp"
#include "kernels.hpp"
#include "mpi_resources.hpp"

namespace petacomm::transpose {

Blocks::Blocks(const Geometry &g, int q, int me, bool honour_mask)
    : g_(g), q_(q), me_(me), rows_(g.rows(q)), cols_(g.cols(q)) {
  static const std::vector<unsigned char> kAll;
  const auto &row_kept = honour_mask ? g.row_kept : kAll;
  const auto &col_kept = honour_mask ? g.col_kept : kAll;
  row_runs_.resize(q);
  col_runs_.resize(q);
  kept_rows_.assign(q, 0);
  kept_cols_.assign(q, 0);
  for (int r = 0; r < q; ++r) {
    row_runs_[r] = kept_runs(row_kept, rows_.offset(r), rows_.count(r));
    col_runs_[r] = kept_runs(col_kept, cols_.offset(r), cols_.count(r));
    for (const Run &run : row_runs_[r]) kept_rows_[r] += run.length;
    for (const Run &run : col_runs_[r]) kept_cols_[r] += run.length;
  }
}

std::size_t Blocks::max_block_bytes() const {
  const std::int64_t rows = *std::max_element(kept_rows_.begin(), kept_rows_.end());
  const std::int64_t cols = *std::max_element(kept_cols_.begin(), kept_cols_.end());
  return static_cast<std::size_t>(rows * cols * g_.batch) * g_.elem;
}

std::size_t Blocks::send_bytes() const {
  std::size_t total = 0;
  for (int s = 0; s < q_; ++s) total += bytes(me_, s);
  return total;
}

std::size_t Blocks::recv_bytes() const {
  std::size_t total = 0;
  for (int r = 0; r < q_; ++r) total += bytes(r, me_);
  return total;
}

void Blocks::pack(const char *in, int dst, char *buf) const {
  const std::size_t E = g_.elem;
  const std::int64_t kr = kept_rows_[me_], kc = kept_cols_[dst];
  const std::int64_t col0 = cols_.offset(dst);
  for (std::int64_t b = 0; b < g_.batch; ++b) {
    std::int64_t j = 0;
    for (const Run &c : col_runs_[dst]) {
      std::int64_t i = 0;
      for (const Run &r : row_runs_[me_]) {
        const char *src = in + (b * g_.in_batch + r.start * g_.in_row + col0 + c.start) * E;
        char *dst_ptr = buf + ((b * kc + j) * kr + i) * E;
        transpose_tile(src, g_.in_row * E, dst_ptr, kr * E, r.length, c.length, E);
        i += r.length;
      }
      j += c.length;
    }
  }
}

void Blocks::unpack(const char *buf, int src, char *out) const {
  const std::size_t E = g_.elem;
  const std::int64_t kr = kept_rows_[src], kc = kept_cols_[me_];
  const std::int64_t row0 = rows_.offset(src);
  for (std::int64_t b = 0; b < g_.batch; ++b) {
    std::int64_t j = 0;
    for (const Run &c : col_runs_[me_]) {
      std::int64_t i = 0;
      for (const Run &r : row_runs_[src]) {
        // c.length output rows, each receiving r.length contiguous elements.
        copy_rows(buf + ((b * kc + j) * kr + i) * E, kr * E,
                  out + (b * g_.out_batch + c.start * g_.out_row + row0 + r.start) * E,
                  g_.out_row * E, c.length, r.length * E);
        i += r.length;
      }
      j += c.length;
    }
  }
}

void Blocks::transpose_self(const char *in, char *out) const {
  const std::size_t E = g_.elem;
  const std::int64_t row0 = rows_.offset(me_), col0 = cols_.offset(me_);
  for (std::int64_t b = 0; b < g_.batch; ++b)
    for (const Run &c : col_runs_[me_])
      for (const Run &r : row_runs_[me_])
        transpose_tile(in + (b * g_.in_batch + r.start * g_.in_row + col0 + c.start) * E,
                       g_.in_row * E,
                       out + (b * g_.out_batch + c.start * g_.out_row + row0 + r.start) * E,
                       g_.out_row * E, r.length, c.length, E);
}

MPI_Datatype Blocks::landing_type(int src, MPI_Datatype element) const {
  PETACOMM_CHECK_INTERNAL(row_runs_[src].size() <= 1 && col_runs_[me_].size() <= 1,
                          "landing_type needs whole blocks");
  const MPI_Aint E = static_cast<MPI_Aint>(g_.elem);
  // kept_cols_[me] output rows of kept_rows_[src] contiguous elements, out_row apart, per
  // batch; shifted to the source's first row.
  MPI_Datatype run, rows, batches, shifted;
  PETACOMM_CHECK_MPI(MPI_Type_contiguous(int_count(kept_rows_[src], "block rows"), element, &run));
  PETACOMM_CHECK_MPI(MPI_Type_create_hvector(int_count(kept_cols_[me_], "block columns"), 1,
                                             g_.out_row * E, run, &rows));
  PETACOMM_CHECK_MPI(
      MPI_Type_create_hvector(int_count(g_.batch, "batch"), 1, g_.out_batch * E, rows, &batches));
  const MPI_Aint offset = rows_.offset(src) * E;
  PETACOMM_CHECK_MPI(MPI_Type_create_hindexed_block(1, 1, &offset, batches, &shifted));
  PETACOMM_CHECK_MPI(MPI_Type_commit(&shifted));
  for (MPI_Datatype *t : {&run, &rows, &batches}) PETACOMM_CHECK_MPI(MPI_Type_free(t));
  return shifted;
}

void zero_excluded(const Geometry &g, int q, int me, char *out) {
  if (!g.masked()) return;
  const std::size_t E = g.elem;
  const BlockDistribution cols = g.cols(q);
  // Runs of excluded rows over the whole row range.
  std::vector<Run> gaps;
  if (!g.row_kept.empty()) {
    std::vector<unsigned char> excluded(g.row_kept.size());
    for (std::size_t i = 0; i < excluded.size(); ++i) excluded[i] = !g.row_kept[i];
    gaps = kept_runs(excluded, 0, g.n_rows);
  }
  for (std::int64_t b = 0; b < g.batch; ++b)
    for (std::int64_t c = 0; c < cols.count(me); ++c) {
      char *row = out + (b * g.out_batch + c * g.out_row) * E;
      if (!g.col_kept.empty() && !g.col_kept[cols.offset(me) + c]) {
        zero_rows(row, 0, 1, g.n_rows * E);
        continue;
      }
      for (const Run &gap : gaps) zero_rows(row + gap.start * E, 0, 1, gap.length * E);
    }
}

}  // namespace petacomm::transpose
