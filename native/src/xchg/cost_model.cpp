#include "cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "error.hpp"
#include "mpi_support.hpp"

namespace petacomm::xchg {

petacomm_xchg_cost_params default_cost_params() {
  petacomm_xchg_cost_params c;
  c.p2p_alpha = 2e-6;
  c.p2p_beta = 1.0 / 5e9;
  c.allreduce_alpha = 3e-6;
  c.allreduce_beta = 1.0 / 2e9;
  c.allgather_alpha = 3e-6;
  c.allgather_beta = 1.0 / 3e9;
  c.alltoallv_alpha = 1e-6;
  c.alltoallv_beta = 1.0 / 4e9;
  c.local_beta = 1.0 / 10e9;
  return c;
}

const char *cost_param_name(int i) {
  static const char *names[kCostParams] = {"p2p_alpha",       "p2p_beta",        "allreduce_alpha",
                                           "allreduce_beta",  "allgather_alpha", "allgather_beta",
                                           "alltoallv_alpha", "alltoallv_beta",  "local_beta"};
  PETACOMM_CHECK_INTERNAL(i >= 0 && i < kCostParams, "cost parameter ", i);
  return names[i];
}

double cost_param(const petacomm_xchg_cost_params &c, int i) {
  const double values[kCostParams] = {c.p2p_alpha,       c.p2p_beta,        c.allreduce_alpha,
                                      c.allreduce_beta,  c.allgather_alpha, c.allgather_beta,
                                      c.alltoallv_alpha, c.alltoallv_beta,  c.local_beta};
  PETACOMM_CHECK_INTERNAL(i >= 0 && i < kCostParams, "cost parameter ", i);
  return values[i];
}

std::string validate_cost(const petacomm_xchg_cost_params &cost,
                          const petacomm_xchg_p2p_curve *curve) {
  for (int i = 0; i < kCostParams; ++i) {
    const double v = cost_param(cost, i);
    if (!(v >= 0) || !std::isfinite(v))
      return concat("cost.", cost_param_name(i), ": must be finite and >= 0, got ", v);
  }
  if (curve == nullptr) return {};
  if (curve->pieces < 0 || curve->pieces > PETACOMM_XCHG_P2P_PIECES)
    return concat("p2p.pieces: must be in [0, ", PETACOMM_XCHG_P2P_PIECES, "], got ",
                  curve->pieces);
  for (int i = 0; i < curve->pieces; ++i) {
    for (const auto &[name, v] :
         {std::pair{"from_bytes", curve->from_bytes[i]}, std::pair{"alpha", curve->alpha[i]},
          std::pair{"beta", curve->beta[i]}})
      if (!(v >= 0) || !std::isfinite(v))
        return concat("p2p.", name, "[", i, "]: must be finite and >= 0, got ", v);
    if (i > 0 && !(curve->from_bytes[i] > curve->from_bytes[i - 1]))
      return concat("p2p.from_bytes[", i, "]: must be above from_bytes[", i - 1,
                    "] = ", curve->from_bytes[i - 1], ", got ", curve->from_bytes[i]);
  }
  return {};
}

CostModel::CostModel(const petacomm_xchg_cost_params &params, const petacomm_xchg_p2p_curve *curve)
    : params_(params) {
  if (curve != nullptr) curve_ = *curve;
}

int CostModel::piece(double bytes) const {
  int chosen = 0;
  for (int i = 0; i < curve_.pieces; ++i)
    if (bytes >= curve_.from_bytes[i]) chosen = i;
  return chosen;
}

double CostModel::p2p_alpha(double bytes) const {
  return curve_.pieces > 0 ? curve_.alpha[piece(bytes)] : params_.p2p_alpha;
}

double CostModel::p2p_beta(double bytes) const {
  return curve_.pieces > 0 ? curve_.beta[piece(bytes)] : params_.p2p_beta;
}

double CostModel::p2p(double messages, double bytes) const {
  if (messages <= 0) return 0;
  const double size = bytes / messages;
  return messages * p2p_alpha(size) + bytes * p2p_beta(size);
}

double log2_steps(std::int64_t p) {
  return static_cast<double>(ceil_log2(std::max<std::int64_t>(p, 1)));
}

double combine_scatter_time(const RankCost &in) {
  return 2.0 * static_cast<double>(in.rank.n_local + in.rank.n_unique) * in.elem_bytes *
         in.cost.params().local_beta;
}

double agreement_time(std::int64_t p, const CostModel &cost) {
  return p > 1 ? 2.0 * log2_steps(p) * cost.params().allreduce_alpha : 0.0;
}

double dense_time(double keys, double chunks, std::int64_t p, const CostModel &cost, double eb) {
  if (keys <= 0) return 0;
  const petacomm_xchg_cost_params &c = cost.params();
  double t = 3.0 * keys * eb * c.local_beta;  // fill, place, copy out
  if (p > 1)
    t +=
        dense_messages(chunks, p) * c.allreduce_alpha + dense_bytes(keys, p, eb) * c.allreduce_beta;
  return t;
}

double dense_messages(double chunks, std::int64_t p) {
  return p > 1 ? chunks * 2.0 * log2_steps(p) : 0.0;
}

double dense_bytes(double keys, std::int64_t p, double eb) {
  return p > 1 ? 2.0 * static_cast<double>(p - 1) / static_cast<double>(p) * keys * eb : 0.0;
}

double exchange_time(const RankCost &in, double partners, double values) {
  const double bytes = values * in.elem_bytes;
  if (in.alltoallv) {
    const petacomm_xchg_cost_params &c = in.cost.params();
    return static_cast<double>(in.ranks - 1) * c.alltoallv_alpha + bytes * c.alltoallv_beta;
  }
  return in.cost.p2p(partners, bytes);
}

double pairwise_local_time(const RankCost &in, double values) {
  const double u = static_cast<double>(in.rank.n_unique);
  return (3.0 * u + 4.0 * values) * in.elem_bytes * in.cost.params().local_beta;
}

double directory_setup_time(const RankCost &in) {
  const petacomm_xchg_rank_stats &r = in.rank;
  const double gamma = in.cost.params().local_beta;
  const double u = static_cast<double>(r.n_unique);
  const double bytes = static_cast<double>(r.directory_send_keys) * 8.0 +
                       static_cast<double>(r.directory_reply_ints) * 4.0;
  // Keys to their homes and the replies (2 messages per link), the NBX barrier, packing and
  // decoding (4 passes over the bytes) and sorting the keys.
  return in.cost.p2p(2.0 * static_cast<double>(r.directory_send_msgs), bytes) +
         in.cost.p2p(2.0 * log2_steps(in.ranks), 0.0) + bytes * 4.0 * gamma +
         u * 8.0 * std::log2(std::max(2.0, u)) * gamma;
}

}  // namespace petacomm::xchg
