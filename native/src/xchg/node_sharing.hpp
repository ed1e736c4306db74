// Sharing seen by nodes, for the node-aware strategy: which nodes hold each shared key, and
// the statistics the planner prices that strategy with. A node is a set of ranks sharing
// memory (NodeTopology: the machine's ranks, or virtual nodes of PETACOMM_NODE_SIZE ranks);
// its leader is its lowest rank.
#pragma once

#include <cstdint>
#include <vector>

#include "mpi_support.hpp"
#include "node_topology.hpp"
#include "petacomm/xchg.h"
#include "sharing.hpp"

namespace petacomm::xchg {

// Whether a node may send one partial per key to another node (the fold of its holders'
// values in rank order) instead of every holder's value: when its ranks are consecutive rank
// ranges (then node order is rank order, and an associative operator's result is the
// rank-order one) and the plan does not promise floats bitwise identical to the rank-order
// fold (`deterministic`). Machine nodes of a round-robin placement are not consecutive.
bool node_partials_allowed(const NodeTopology &nodes, bool deterministic);

// The holders of my distinct key u (d >= 2, holder list known), me included, ascending.
void holders_of(const Sharing &sharing, std::size_t u, int me, std::vector<int> *out);

// Collective over nodes.node(): fills the node fields of r (nodes, node_ranks, node_leader
// on every rank; the leader's figures on the leader). Counts what the node-aware strategy
// sends with or without partials. Only keys whose holder list is known count.
void node_statistics(const NodeTopology &nodes, const Sharing &sharing, int me, bool partials,
                     petacomm_xchg_rank_stats &r, SetupClock *clock);

}  // namespace petacomm::xchg
