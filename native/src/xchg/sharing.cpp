#include "sharing.hpp"

#include <algorithm>
#include <utility>

namespace petacomm::xchg {
PeerList group_by_peer(std::vector<std::pair<int, std::int32_t>> pairs, int p) {
  // A counting sort by rank when p <= pairs (memory stays O(pairs)), else a stable sort.
  if (static_cast<std::size_t>(p) <= pairs.size()) {
    std::vector<std::size_t> start(static_cast<std::size_t>(p) + 1, 0);
    for (const auto &pr : pairs) ++start[static_cast<std::size_t>(pr.first) + 1];
    for (std::size_t r = 0; r < static_cast<std::size_t>(p); ++r) start[r + 1] += start[r];
    std::vector<std::pair<int, std::int32_t>> sorted(pairs.size());
    for (const auto &pr : pairs) sorted[start[static_cast<std::size_t>(pr.first)]++] = pr;
    pairs.swap(sorted);
  } else {
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
  }
  PeerList list;
  list.begin.push_back(0);
  list.index.reserve(pairs.size());
  for (std::size_t j = 0; j < pairs.size(); ++j) {
    if (j == 0 || pairs[j].first != pairs[j - 1].first) {
      if (j > 0) list.begin.push_back(static_cast<std::int64_t>(j));
      list.ranks.push_back(pairs[j].first);
    }
    list.index.push_back(pairs[j].second);
  }
  if (!pairs.empty()) list.begin.push_back(static_cast<std::int64_t>(pairs.size()));
  return list;
}

std::size_t Sharing::memory_bytes() const {
  return multiplicity.capacity() * 4 + owner.capacity() * 4 + list_begin.capacity() * 8 +
         list_ranks.capacity() * 4 + hub_index.capacity() * 8 + shared.capacity() * 4;
}

std::size_t PeerList::memory_bytes() const {
  return ranks.capacity() * sizeof(int) + begin.capacity() * 8 + index.capacity() * 4;
}

PeerList pair_peers(const Sharing &sharing, int max_d, int p) {
  std::vector<std::pair<int, std::int32_t>> pairs;
  for (std::int32_t u : sharing.shared) {
    const int d = sharing.multiplicity[u];
    if (d > max_d || !sharing.has_list(u)) continue;
    for (std::int64_t j = sharing.list_begin[u]; j < sharing.list_begin[u + 1]; ++j)
      pairs.emplace_back(sharing.list_ranks[j], static_cast<std::int32_t>(u));
  }
  return group_by_peer(std::move(pairs), p);
}

PeerList owner_send_peers(const Sharing &sharing, int me, int p) {
  std::vector<std::pair<int, std::int32_t>> pairs;
  for (std::int32_t u : sharing.shared)
    if (sharing.owner[u] != me) pairs.emplace_back(sharing.owner[u], u);
  return group_by_peer(std::move(pairs), p);
}

PeerList owner_recv_peers(const Sharing &sharing, int me, int p) {
  std::vector<std::pair<int, std::int32_t>> pairs;
  for (std::int32_t u : sharing.shared) {
    if (sharing.owner[u] != me) continue;
    for (std::int64_t j = sharing.list_begin[u]; j < sharing.list_begin[u + 1]; ++j)
      pairs.emplace_back(sharing.list_ranks[j], u);
  }
  return group_by_peer(std::move(pairs), p);
}

}  // namespace petacomm::xchg
