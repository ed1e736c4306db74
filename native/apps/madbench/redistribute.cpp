#include "redistribute.hpp"

#include <cstring>
#include <numeric>

#include "app_support.hpp"

namespace petacomm::apps::madbench {
namespace {

// Visits this process's blocks of layout `layout` (it must be in its grid) in canonical
// order: block column J ascending, then block row I ascending; f(I, J, local offset).
template <typename F>
void for_my_blocks(const BlockCyclic &layout, F &&f) {
  const Grid &g = *layout.grid;
  if (!g.contains_me()) return;
  const int nblk = layout.n / layout.nb;
  for (int J = g.my_col, lj = 0; J < nblk; J += g.cols, lj += layout.nb)
    for (int I = g.my_row, li = 0; I < nblk; I += g.rows, li += layout.nb)
      f(I, J, static_cast<std::size_t>(li) + static_cast<std::size_t>(lj) * layout.lld);
}

int owner(const BlockCyclic &layout, int I, int J) {
  const Grid &g = *layout.grid;
  return g.rank_at(I % g.rows, J % g.cols);
}

}  // namespace

RemapCounts remap_blocks(const std::vector<Transfer> &transfers, MPI_Comm world) {
  int p = 1, me = 0;
  PETACOMM_APP_MPI(MPI_Comm_size(world, &p));
  PETACOMM_APP_MPI(MPI_Comm_rank(world, &me));
  if (transfers.empty()) return {};
  const int nb = transfers.front().from->nb;
  const std::size_t block = static_cast<std::size_t>(nb) * nb;
  const auto copy_block = [nb](const double *from, int from_lld, double *to, int to_lld) {
    for (int jj = 0; jj < nb; ++jj)
      std::memcpy(to + static_cast<std::size_t>(jj) * to_lld,
                  from + static_cast<std::size_t>(jj) * from_lld, nb * sizeof(double));
  };
  // Blocks that stay on this process are copied directly, never packed.
  std::vector<int> send_counts(p, 0), recv_counts(p, 0);
  for (const auto &t : transfers) {
    for_my_blocks(*t.from, [&](int I, int J, std::size_t) {
      const int to = owner(*t.to, I, J);
      if (to != me) ++send_counts[to];
    });
    for_my_blocks(*t.to, [&](int I, int J, std::size_t) {
      const int from = owner(*t.from, I, J);
      if (from != me) ++recv_counts[from];
    });
  }
  std::vector<int> send_displs(p), recv_displs(p);
  std::exclusive_scan(send_counts.begin(), send_counts.end(), send_displs.begin(), 0);
  std::exclusive_scan(recv_counts.begin(), recv_counts.end(), recv_displs.begin(), 0);
  // Buffers kept between calls: a fresh one would be zeroed and page-faulted every time.
  static std::vector<double> send, recv;
  send.resize(block * static_cast<std::size_t>(send_displs.back() + send_counts.back()));
  recv.resize(block * static_cast<std::size_t>(recv_displs.back() + recv_counts.back()));
  // Pack: blocks for each destination in canonical (transfer, J, I) order.
  std::vector<int> cursor = send_displs;
  for (const auto &t : transfers) {
    for_my_blocks(*t.from, [&](int I, int J, std::size_t offset) {
      const int to = owner(*t.to, I, J);
      if (to == me) {
        const BlockCyclic &d = *t.to;
        const std::size_t target = static_cast<std::size_t>((I / d.grid->rows) * nb) +
                                   static_cast<std::size_t>((J / d.grid->cols) * nb) * d.lld;
        copy_block(t.source + offset, t.from->lld, t.target + target, d.lld);
      } else {
        copy_block(t.source + offset, t.from->lld,
                   &send[block * static_cast<std::size_t>(cursor[to]++)], nb);
      }
    });
  }
  MPI_Datatype block_type;
  PETACOMM_APP_MPI(MPI_Type_contiguous(static_cast<int>(block), MPI_DOUBLE, &block_type));
  PETACOMM_APP_MPI(MPI_Type_commit(&block_type));
  PETACOMM_APP_MPI(MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), block_type,
                                 recv.data(), recv_counts.data(), recv_displs.data(), block_type,
                                 world));
  PETACOMM_APP_MPI(MPI_Type_free(&block_type));
  // Unpack in the same canonical order, per source.
  cursor = recv_displs;
  for (const auto &t : transfers) {
    for_my_blocks(*t.to, [&](int I, int J, std::size_t offset) {
      const int from = owner(*t.from, I, J);
      if (from != me)
        copy_block(&recv[block * static_cast<std::size_t>(cursor[from]++)], nb, t.target + offset,
                   t.to->lld);
    });
  }
  RemapCounts counts;
  for (const auto &t : transfers)
    for_my_blocks(*t.from, [&](int, int, std::size_t) { ++counts.blocks_sent; });
  for (int r = 0; r < p; ++r) counts.partners += send_counts[r] > 0;
  return counts;
}

void pdgemr2d_transfers(const std::vector<Transfer> &transfers, int context) {
  const int one = 1;
  static double dummy = 0;  // pdgemr2d reads no data on processes outside a grid
  for (const auto &t : transfers) {
    const int n = t.from->n;
    pdgemr2d_(&n, &n, t.source ? t.source : &dummy, &one, &one, t.from->desc,
              t.target ? t.target : &dummy, &one, &one, t.to->desc, &context);
  }
}

}  // namespace petacomm::apps::madbench
