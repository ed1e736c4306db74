#include "cost_model.hpp"

#include <algorithm>

namespace petacomm::transpose {

Volumes volumes(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  Volumes v;
  v.q = s.q;
  v.c = std::clamp(s.ranks_per_node, 1, s.q);
  v.nodes = (s.q + v.c - 1) / v.c;
  const BlockDistribution rows{s.n_rows, s.q}, cols{s.n_cols, s.q};
  const double unit = static_cast<double>(s.batch) * s.elem;
  v.in_bytes = static_cast<double>(rows.count(0)) * static_cast<double>(s.n_cols) * unit;
  v.out_bytes = static_cast<double>(cols.count(0)) * static_cast<double>(s.n_rows) * unit;
  v.self_bytes = static_cast<double>(rows.count(0)) * static_cast<double>(cols.count(0)) * unit;
  v.remote_bytes = v.in_bytes - v.self_bytes;
  v.max_block_bytes =
      static_cast<double>(rows.max_count()) * static_cast<double>(cols.max_count()) * unit;
  v.on_node_partners = v.c - 1;
  v.off_node_partners = s.q - v.c;
  const double partners = std::max(1, s.q - 1);
  v.message_alpha =
      (v.on_node_partners * c.p2p_alpha + v.off_node_partners * c.net_alpha) / partners;
  v.byte_beta = (v.on_node_partners * c.p2p_beta + v.off_node_partners * c.net_beta) / partners;
  return v;
}

double link_seconds(const Volumes &v, double remote_bytes, const petacomm_transpose_cost_params &c,
                    double *node_bytes) {
  const double off = v.q > 1 ? v.off_node_partners / (v.q - 1) : 0.0;
  const double bytes = v.c * remote_bytes * off;
  if (node_bytes != nullptr) *node_bytes = bytes;
  return bytes * c.node_link_beta;
}

double pack_unpack_seconds(const Volumes &v, const petacomm_transpose_cost_params &c) {
  return v.in_bytes * c.transpose_beta + (v.out_bytes - v.self_bytes) * c.copy_beta;
}

}  // namespace petacomm::transpose
