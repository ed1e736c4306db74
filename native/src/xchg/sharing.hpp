// Sharing: what discovery learns about each of a rank's distinct keys — how many ranks hold
// it (d), which rank owns it, which other ranks hold it — and the peer lists the exchange
// strategies are built from.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace petacomm::xchg {

struct Sharing {
  std::vector<std::int32_t> multiplicity;  // d per distinct key (>= 1)
  std::vector<std::int32_t> owner;         // owner rank per key (one of its holders)
  std::vector<std::int64_t> list_begin;    // CSR offsets (size keys + 1) into list_ranks
  std::vector<std::int32_t> list_ranks;    // other holders, ascending; empty when not known
  std::vector<std::int64_t> hub_index;     // hub-split: dense index of hub keys, else -1
  std::vector<std::int32_t> shared;        // the keys with d >= 2, ascending

  std::size_t keys() const { return multiplicity.size(); }
  bool has_list(std::size_t u) const {
    return list_begin[u + 1] - list_begin[u] == multiplicity[u] - 1;
  }
  std::size_t memory_bytes() const;
};

// Peers in ascending rank order, each with the distinct-key indices exchanged with it in
// ascending key order (so both sides of a pair agree on the order without talking).
struct PeerList {
  std::vector<int> ranks;
  std::vector<std::int64_t> begin;  // size ranks + 1
  std::vector<std::int32_t> index;

  std::size_t peers() const { return ranks.size(); }
  std::int64_t entries() const { return begin.empty() ? 0 : begin.back(); }
  std::size_t memory_bytes() const;
};

// p: the communicator size (ranks are < p). Keys with 2 <= d <= max_d whose holder list is known:
// one entry per other holder.
// (peer rank in [0, p), value index) pairs -> a PeerList grouped by peer, ascending, keeping
// the pairs' order within each peer.
PeerList group_by_peer(std::vector<std::pair<int, std::int32_t>> pairs, int p);

PeerList pair_peers(const Sharing &sharing, int max_d, int p);
// Owner strategy, first round: my shared keys owned by someone else, grouped by owner.
PeerList owner_send_peers(const Sharing &sharing, int me, int p);
// Owner strategy, first round: for the shared keys I own, their other holders.
PeerList owner_recv_peers(const Sharing &sharing, int me, int p);

}  // namespace petacomm::xchg
