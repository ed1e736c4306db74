#include "node_sharing.hpp"

#include <algorithm>

#include "error.hpp"
#include "mpi_support.hpp"

namespace petacomm::xchg {

bool node_partials_allowed(const NodeTopology &nodes, bool deterministic) {
  if (deterministic) return false;
  for (int n = 0; n < nodes.nodes(); ++n) {
    const std::vector<int> &m = nodes.members(n);
    if (m.back() - m.front() + 1 != static_cast<int>(m.size())) return false;
    if (n > 0 && m.front() < nodes.members(n - 1).back()) return false;
  }
  return true;
}

void holders_of(const Sharing &sharing, std::size_t u, int me, std::vector<int> *out) {
  out->assign(sharing.list_ranks.begin() + sharing.list_begin[u],
              sharing.list_ranks.begin() + sharing.list_begin[u + 1]);
  out->insert(std::upper_bound(out->begin(), out->end(), me), me);
}

void node_statistics(const NodeTopology &nodes, const Sharing &sharing, int me, bool partials,
                     petacomm_xchg_rank_stats &r, SetupClock *clock) {
  const int mine = nodes.node_of(me);
  r.nodes = nodes.nodes();
  r.node_ranks = nodes.node_ranks();
  r.node_leader = nodes.node_rank() == 0 ? 1 : 0;
  // Each shared key is counted on its node by its lowest holder there (which knows all its
  // holders); the leader sums the counts and ORs the partner nodes.
  enum { kUnion, kSend, kRecv, kMembers, kMemberValues, kSums };
  std::int64_t sums[kSums] = {0, 0, 0, 0, 0};
  std::vector<std::uint64_t> partners((static_cast<std::size_t>(nodes.nodes()) + 63) / 64, 0);
  std::vector<int> remote_nodes;
  std::int64_t shared = 0;
  for (const std::int32_t u : sharing.shared) {
    if (!sharing.has_list(static_cast<std::size_t>(u))) continue;
    ++shared;
    // The other holders, read in place (ascending): I am a holder too, on my node.
    const std::int32_t *other = sharing.list_ranks.data() + sharing.list_begin[u];
    const std::int32_t *end = sharing.list_ranks.data() + sharing.list_begin[u + 1];
    const auto holders = static_cast<std::int64_t>(end - other) + 1;
    std::int64_t local = 1;
    bool first_here = true;
    remote_nodes.clear();
    for (; other != end && first_here; ++other) {
      const int n = nodes.node_of(*other);
      if (n == mine) {
        ++local;
        first_here = *other > me;
      } else {
        remote_nodes.push_back(n);
      }
    }
    if (!first_here) continue;
    std::sort(remote_nodes.begin(), remote_nodes.end());
    remote_nodes.erase(std::unique(remote_nodes.begin(), remote_nodes.end()), remote_nodes.end());
    const auto remote = static_cast<std::int64_t>(remote_nodes.size());
    sums[kUnion] += 1;
    sums[kSend] += partials ? remote : local * remote;
    sums[kRecv] += partials ? remote : holders - local;
    for (int n : remote_nodes) partners[static_cast<std::size_t>(n) / 64] |= 1ULL << (n % 64);
  }
  if (nodes.node_rank() != 0 && shared > 0) {
    sums[kMembers] = 1;
    sums[kMemberValues] = shared;
  }
  // One reduction on the node (sums and the partner-node bitmap together): each waits for
  // every rank of the node, so two would cost two synchronisations.
  FusedReduction fused;
  for (std::int64_t v : sums) fused.add(FusedReduction::kSumI, v);
  for (std::uint64_t w : partners) fused.add(FusedReduction::kOrI, static_cast<std::int64_t>(w));
  fused.run(nodes.node(), clock);
  if (nodes.node_rank() != 0) return;
  r.node_union_keys = fused.integer(kUnion);
  r.node_send_values = fused.integer(kSend);
  r.node_recv_values = fused.integer(kRecv);
  r.node_members = fused.integer(kMembers);
  r.node_member_values = fused.integer(kMemberValues);
  for (std::size_t j = 0; j < partners.size(); ++j)
    r.node_partners += __builtin_popcountll(static_cast<std::uint64_t>(fused.integer(kSums + j)));
}

}  // namespace petacomm::xchg
