// Shared terms of the strategies' cost functions (alpha-beta with a node-link contention
// term and local memory work). All figures are for the busiest rank: rank 0 holds the most
// rows and columns of the block distributions. docs/transpose.md lists every formula.
#pragma once

#include "petacomm/transpose.h"
#include "strategy.hpp"

namespace petacomm::transpose {

struct Volumes {
  int q = 1, c = 1, nodes = 1;  // ranks, ranks per node, nodes
  double in_bytes = 0;          // rank 0's input
  double out_bytes = 0;         // rank 0's output
  double self_bytes = 0;        // block (0 -> 0)
  double remote_bytes = 0;      // rank 0 sends to other ranks (whole blocks)
  double max_block_bytes = 0;   // the largest block (alltoall pads every block to it)
  double on_node_partners = 0;  // of rank 0's q - 1 partners
  double off_node_partners = 0;
  double message_alpha = 0;  // mean alpha over rank 0's partners
  double byte_beta = 0;      // mean beta over rank 0's partners
};

Volumes volumes(const ProblemStats &s, const petacomm_transpose_cost_params &c);

// Seconds the bytes leaving one node take through its link when each of its ranks sends
// remote_bytes spread evenly over the other ranks; *node_bytes receives those bytes.
double link_seconds(const Volumes &v, double remote_bytes, const petacomm_transpose_cost_params &c,
                    double *node_bytes);

// Pack every block by blocked transposes (the own block straight to the output), unpack
// the received ones by row copies.
double pack_unpack_seconds(const Volumes &v, const petacomm_transpose_cost_params &c);

// Per message and per byte inside MPI_Alltoall(v,w): the library's own figures, never
// below the point-to-point figures of the partners involved.
inline double collective_alpha(const Volumes &v, const petacomm_transpose_cost_params &c) {
  return c.alltoall_alpha > v.message_alpha ? c.alltoall_alpha : v.message_alpha;
}
inline double collective_beta(const Volumes &v, const petacomm_transpose_cost_params &c) {
  return c.alltoall_beta > v.byte_beta ? c.alltoall_beta : v.byte_beta;
}

// Partner on the same node in step k of a schedule where rank 0's partner is rank k.
inline bool on_node(const Volumes &v, int partner) { return partner < v.c; }

}  // namespace petacomm::transpose
