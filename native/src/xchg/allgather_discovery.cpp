#include "allgather_discovery.hpp"

#include <algorithm>

#include "error.hpp"
#include "mpi_support.hpp"

namespace petacomm::xchg {

Sharing allgather_discover(MPI_Comm comm, const std::vector<std::int64_t> &keys,
                           std::int64_t buffer_keys, SetupTraffic &traffic, SetupClock *clock) {
  int me = 0, p = 1;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  const std::int64_t mine = static_cast<std::int64_t>(keys.size());
  std::int64_t longest = 0;
  {
    MpiWait wait(clock);
    check_mpi(MPI_Allreduce(&mine, &longest, 1, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  }
  const std::int64_t nb = std::max<std::int64_t>(1, std::min(buffer_keys, longest));
  const std::int64_t rounds = longest == 0 ? 0 : (longest + nb - 1) / nb;
  const std::size_t block = static_cast<std::size_t>(nb);
  std::vector<std::int64_t> send(block), all(block * static_cast<std::size_t>(p));
  to_int_count(block, "allgather_keys");

  std::vector<std::pair<std::int32_t, std::int32_t>> found;  // (my key index, other rank)
  for (std::int64_t round = 0; round < rounds; ++round) {
    const std::int64_t lo = round * nb;
    std::fill(send.begin(), send.end(), std::int64_t{-1});
    for (std::int64_t j = lo; j < std::min(mine, lo + nb); ++j) send[j - lo] = keys[j];
    {
      MpiWait wait(clock);
      check_mpi(MPI_Allgather(send.data(), static_cast<int>(block), MPI_INT64_T, all.data(),
                              static_cast<int>(block), MPI_INT64_T, comm),
                "MPI_Allgather");
    }
    traffic.messages += ceil_log2(p);
    traffic.bytes += static_cast<std::int64_t>((p - 1) * block * 8);
    if (keys.empty()) continue;
    for (int q = 0; q < p; ++q) {
      if (q == me) continue;
      const std::int64_t *theirs = all.data() + static_cast<std::size_t>(q) * block;
      auto from = keys.begin();
      for (std::size_t j = 0; j < block && theirs[j] >= 0; ++j) {
        from = std::lower_bound(from, keys.end(), theirs[j]);  // both lists ascending
        if (from == keys.end()) break;
        if (*from == theirs[j])
          found.emplace_back(static_cast<std::int32_t>(from - keys.begin()), q);
      }
    }
  }
  std::sort(found.begin(), found.end());
  Sharing sharing;
  const std::size_t u_count = keys.size();
  sharing.multiplicity.assign(u_count, 1);
  sharing.owner.assign(u_count, me);
  sharing.list_begin.assign(u_count + 1, 0);
  sharing.list_ranks.reserve(found.size());
  for (const auto &[u, q] : found) {
    sharing.multiplicity[u] += 1;
    sharing.owner[u] = std::min(sharing.owner[u], q);  // lowest holder (not used for exchange)
    sharing.list_ranks.push_back(q);
  }
  for (std::size_t u = 0; u < u_count; ++u) {
    sharing.list_begin[u + 1] = sharing.list_begin[u] + sharing.multiplicity[u] - 1;
    if (sharing.multiplicity[u] >= 2) sharing.shared.push_back(static_cast<std::int32_t>(u));
  }
  return sharing;
}

}  // namespace petacomm::xchg
