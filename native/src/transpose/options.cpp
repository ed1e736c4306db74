#include "options.hpp"

#include <climits>
#include <cmath>
#include <cstring>
#include <utility>

#include "strategy.hpp"

namespace petacomm::transpose {

petacomm_transpose_options default_options() {
  petacomm_transpose_options o{};
  o.strategy = "auto";
  o.planner = "estimate";
  o.mask = nullptr;
  o.mask_length = 0;
  o.window = 4;
  o.measure_reps = 3;
  o.node_size = 0;
  o.cost.p2p_alpha = 0.5e-6;
  o.cost.p2p_beta = 1.0 / 8e9;
  o.cost.net_alpha = 1.5e-6;
  o.cost.net_beta = 1.0 / 10e9;
  o.cost.node_link_beta = 1.0 / 12.5e9;
  o.cost.alltoall_alpha = 1.5e-6;
  o.cost.alltoall_beta = 1.0 / 8e9;
  o.cost.copy_beta = 1.0 / 10e9;
  o.cost.transpose_beta = 1.0 / 5e9;
  o.cost.datatype_beta = 1.0 / 1.5e9;
  return o;
}

TransposeOptions validate_options(const petacomm_transpose_options *opts, std::int64_t n1,
                                  bool mask_allowed, std::string *problem) {
  const petacomm_transpose_options o = opts ? *opts : default_options();
  TransposeOptions v;
  const char *strategy = o.strategy && *o.strategy ? o.strategy : "auto";
  if (std::strcmp(strategy, "auto") != 0 && registry().find(strategy) == nullptr) {
    *problem = concat("strategy: unknown strategy '", strategy, "' (expected ",
                      registry().names("auto"), ")");
    return v;
  }
  v.strategy = strategy;
  const char *planner = o.planner && *o.planner ? o.planner : "estimate";
  if (std::strcmp(planner, "estimate") != 0 && std::strcmp(planner, "measure") != 0) {
    *problem = concat("planner: unknown planner '", planner, "' (expected estimate or measure)");
    return v;
  }
  v.measure = std::strcmp(planner, "measure") == 0;
  if (v.measure && v.strategy != "auto") {
    *problem = concat("planner: 'measure' chooses the strategy, so strategy must be 'auto', got '",
                      v.strategy, "'");
    return v;
  }
  if (o.window < 1) {
    *problem = concat("window: must be >= 1, got ", o.window);
    return v;
  }
  if (o.measure_reps < 1 || o.measure_reps > PETACOMM_MAX_REPS) {
    *problem =
        concat("measure_reps: must be in [1, ", PETACOMM_MAX_REPS, "], got ", o.measure_reps);
    return v;
  }
  if (o.node_size < 0) {
    *problem = concat("node_size: must be >= 0, got ", o.node_size);
    return v;
  }
  v.window = o.window;
  v.measure_reps = o.measure_reps;
  v.node_size = o.node_size;
  if (o.mask != nullptr || o.mask_length != 0) {
    if (!mask_allowed) {
      *problem = "mask: not accepted here (only 2-D transpose plans take a mask)";
      return v;
    }
    if (o.mask == nullptr) {
      *problem = concat("mask: NULL with mask_length ", o.mask_length);
      return v;
    }
    if (o.mask_length != n1) {
      *problem = concat("mask: length ", o.mask_length, " does not match the plan's n1 = ", n1,
                        " (one flag per column of the forward input)");
      return v;
    }
    v.mask.resize(static_cast<std::size_t>(n1));
    for (std::int64_t j = 0; j < n1; ++j) v.mask[j] = o.mask[j] != 0;
  }
  *problem = cost_problem(o.cost);
  if (!problem->empty()) return v;
  v.cost = o.cost;
  return v;
}

std::string cost_problem(const petacomm_transpose_cost_params &cost) {
  const std::pair<const char *, double> params[] = {
      {"p2p_alpha", cost.p2p_alpha},           {"p2p_beta", cost.p2p_beta},
      {"net_alpha", cost.net_alpha},           {"net_beta", cost.net_beta},
      {"node_link_beta", cost.node_link_beta}, {"alltoall_alpha", cost.alltoall_alpha},
      {"alltoall_beta", cost.alltoall_beta},   {"copy_beta", cost.copy_beta},
      {"transpose_beta", cost.transpose_beta}, {"datatype_beta", cost.datatype_beta},
  };
  for (const auto &[name, value] : params)
    if (!(value >= 0) || !std::isfinite(value))
      return concat("cost.", name, ": must be finite and >= 0, got ", value);
  return {};
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fingerprint(const TransposeOptions &o, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (char c : o.strategy) h = mix(h, static_cast<unsigned char>(c));
  h = mix(h, o.measure);
  h = mix(h, static_cast<std::uint64_t>(o.window));
  h = mix(h, static_cast<std::uint64_t>(o.measure_reps));
  h = mix(h, static_cast<std::uint64_t>(o.node_size));
  h = mix(h, o.mask.size());
  for (unsigned char m : o.mask) h = mix(h, m);
  // The planner reads the cost parameters: equal choices need equal parameters.
  const double params[] = {o.cost.p2p_alpha,     o.cost.p2p_beta,       o.cost.net_alpha,
                           o.cost.net_beta,      o.cost.node_link_beta, o.cost.alltoall_alpha,
                           o.cost.alltoall_beta, o.cost.copy_beta,      o.cost.transpose_beta,
                           o.cost.datatype_beta};
  for (double p : params) {
    std::uint64_t bits;
    std::memcpy(&bits, &p, sizeof bits);
    h = mix(h, bits);
  }
  return h;
}

std::size_t dtype_bytes(int dtype) {
  switch (dtype) {
    case PETACOMM_TRANSPOSE_FLOAT32:
      return 4;
    case PETACOMM_TRANSPOSE_FLOAT64:
    case PETACOMM_TRANSPOSE_COMPLEX64:
      return 8;
    case PETACOMM_TRANSPOSE_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

std::string size_problem(const char *names, std::initializer_list<std::int64_t> extents,
                         std::int64_t howmany, int dtype) {
  const auto value = static_cast<std::int64_t>(dtype_bytes(dtype));
  if (howmany > INT_MAX / value)
    return concat("howmany: ", howmany, " values of ", dtype_name(dtype),
                  " per element exceed the limit of ", INT_MAX / value, " (", INT_MAX,
                  " bytes, an MPI count)");
  double bytes = static_cast<double>(howmany * value);
  std::string shown;
  for (const std::int64_t e : extents) {
    bytes *= static_cast<double>(e);
    shown += concat(shown.empty() ? "" : " x ", e);
  }
  if (bytes > 9.0e18)
    return concat(names, ": ", shown, " elements of ", howmany * value,
                  " bytes is too large (more than 9e18 bytes)");
  return {};
}

const char *dtype_name(int dtype) {
  switch (dtype) {
    case PETACOMM_TRANSPOSE_FLOAT32:
      return "float32";
    case PETACOMM_TRANSPOSE_FLOAT64:
      return "float64";
    case PETACOMM_TRANSPOSE_COMPLEX64:
      return "complex64";
    case PETACOMM_TRANSPOSE_COMPLEX128:
      return "complex128";
    default:
      return "unknown";
  }
}

}  // namespace petacomm::transpose
