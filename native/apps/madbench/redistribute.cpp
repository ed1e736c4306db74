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
  int p = 1;
  PETACOMM_APP_MPI(MPI_Comm_size(world, &p));
  int me = 0;
  PETACOMM_APP_MPI(MPI_Comm_rank(world, &me));
  if (transfers.empty()) return {};
  const int nb = transfers.front().from->nb;
  const std::size_t block = static_cast<std::size_t>(nb) * nb;
  std::vector<int> send_counts(p, 0), recv_counts(p, 0);
  for (const auto &t : transfers) {
    for_my_blocks(*t.from, [&](int I, int J, std::size_t) { ++send_counts[owner(*t.to, I, J)]; });
    for_my_blocks(*t.to, [&](int I, int J, std::size_t) { ++recv_counts[owner(*t.from, I, J)]; });
  }
  std::vector<int> send_displs(p), recv_displs(p);
  std::exclusive_scan(send_counts.begin(), send_counts.end(), send_displs.begin(), 0);
  std::exclusive_scan(recv_counts.begin(), recv_counts.end(), recv_displs.begin(), 0);
  std::vector<double> send(block *
                           static_cast<std::size_t>(send_displs.back() + send_counts.back()));
  std::vector<double> recv(block *
                           static_cast<std::size_t>(recv_displs.back() + recv_counts.back()));
  // Pack: blocks for each destination in canonical (transfer, J, I) order.
  std::vector<int> cursor = send_displs;
  for (const auto &t : transfers) {
    const int lld = t.from->lld;
    for_my_blocks(*t.from, [&](int I, int J, std::size_t offset) {
      double *out = &send[block * static_cast<std::size_t>(cursor[owner(*t.to, I, J)]++)];
      for (int jj = 0; jj < nb; ++jj)
        std::memcpy(out + static_cast<std::size_t>(jj) * nb,
                    t.source + offset + static_cast<std::size_t>(jj) * lld, nb * sizeof(double));
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
    const int lld = t.to->lld;
    for_my_blocks(*t.to, [&](int I, int J, std::size_t offset) {
      const double *in = &recv[block * static_cast<std::size_t>(cursor[owner(*t.from, I, J)]++)];
      for (int jj = 0; jj < nb; ++jj)
        std::memcpy(t.target + offset + static_cast<std::size_t>(jj) * lld,
                    in + static_cast<std::size_t>(jj) * nb, nb * sizeof(double));
    });
  }
  RemapCounts counts;
  for (int r = 0; r < p; ++r) {
    counts.blocks_sent += send_counts[r];
    counts.partners += (r != me && send_counts[r] > 0);
  }
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
