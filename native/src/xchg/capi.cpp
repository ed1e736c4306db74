// The C API of xchg: argument checks that need no MPI, then the Plan object; every entry
// point runs through petacomm::guard so no exception crosses into C.
#include <cstring>
#include <memory>

#include "cost_model.hpp"
#include "error.hpp"
#include "exchange.hpp"
#include "petacomm/xchg.h"
#include "plan.hpp"

using petacomm::fail_arg;
using petacomm::guard;
using petacomm::xchg::Plan;

struct petacomm_xchg_plan_s {
  std::unique_ptr<Plan> impl;
};

namespace {

Plan &checked(petacomm_xchg_plan plan) {
  if (plan == nullptr || !plan->impl)
    fail_arg("plan: NULL (create it with petacomm_xchg_plan_create)");
  return *plan->impl;
}

}  // namespace

extern "C" {

petacomm_status petacomm_xchg_options_default(petacomm_xchg_options *opts) {
  return guard([&] {
    if (opts == nullptr) fail_arg("opts: NULL");
    *opts = petacomm::xchg::default_options();
  });
}

petacomm_status petacomm_xchg_plan_create(MPI_Comm comm, const int64_t *keys, int64_t n,
                                          const petacomm_xchg_options *opts,
                                          petacomm_xchg_plan *plan) {
  return guard([&] {
    if (plan == nullptr) fail_arg("plan: NULL output pointer");
    *plan = nullptr;
    auto handle = std::make_unique<petacomm_xchg_plan_s>();
    handle->impl = std::make_unique<Plan>(comm, keys, n, opts);
    *plan = handle.release();
  });
}

petacomm_status petacomm_xchg_plan_create_f(MPI_Fint comm, const int64_t *keys, int64_t n,
                                            const petacomm_xchg_options *opts,
                                            petacomm_xchg_plan *plan) {
  return petacomm_xchg_plan_create(MPI_Comm_f2c(comm), keys, n, opts, plan);
}

petacomm_status petacomm_xchg_plan_free(petacomm_xchg_plan *plan) {
  return guard([&] {
    if (plan == nullptr) fail_arg("plan: NULL pointer to a plan handle");
    if (*plan == nullptr) return;
    std::unique_ptr<petacomm_xchg_plan_s> owned(*plan);
    *plan = nullptr;
    if (owned->impl) owned->impl->release();
  });
}

petacomm_status petacomm_xchg_execute_begin(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                            int64_t n, int k, petacomm_xchg_dtype dtype,
                                            petacomm_xchg_op op,
                                            const petacomm_xchg_user_op *user) {
  return guard([&] { checked(plan).begin(comm, values, n, k, dtype, op, user); });
}

petacomm_status petacomm_xchg_execute_begin_f(petacomm_xchg_plan plan, MPI_Fint comm, void *values,
                                              int64_t n, int k, petacomm_xchg_dtype dtype,
                                              petacomm_xchg_op op) {
  if (op == PETACOMM_XCHG_USER)
    return guard([&] { fail_arg("op: user operators need petacomm_xchg_execute_begin"); });
  return petacomm_xchg_execute_begin(plan, MPI_Comm_f2c(comm), values, n, k, dtype, op, nullptr);
}

petacomm_status petacomm_xchg_execute_end(petacomm_xchg_plan plan) {
  return guard([&] { checked(plan).end(); });
}

petacomm_status petacomm_xchg_execute(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                      int64_t n, int k, petacomm_xchg_dtype dtype,
                                      petacomm_xchg_op op) {
  if (op == PETACOMM_XCHG_USER)
    return guard([&] { fail_arg("op: user operators need petacomm_xchg_execute_user"); });
  return guard([&] {
    Plan &p = checked(plan);
    p.begin(comm, values, n, k, dtype, op, nullptr);
    p.end();
  });
}

petacomm_status petacomm_xchg_execute_user(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                           int64_t n, int k, petacomm_xchg_dtype dtype,
                                           const petacomm_xchg_user_op *user) {
  return guard([&] {
    Plan &p = checked(plan);
    p.begin(comm, values, n, k, dtype, PETACOMM_XCHG_USER, user);
    p.end();
  });
}

petacomm_status petacomm_xchg_plan_strategy(petacomm_xchg_plan plan, const char **name) {
  return guard([&] {
    if (name == nullptr) fail_arg("name: NULL output pointer");
    *name = checked(plan).strategy_name();
  });
}

petacomm_status petacomm_xchg_plan_size(petacomm_xchg_plan plan, int64_t *n) {
  return guard([&] {
    if (n == nullptr) fail_arg("n: NULL output pointer");
    *n = checked(plan).positions();
  });
}

petacomm_status petacomm_xchg_plan_describe(petacomm_xchg_plan plan, char *buf, size_t buflen,
                                            size_t *needed) {
  return guard([&] {
    const std::string &text = checked(plan).description();
    if (needed != nullptr) *needed = text.size() + 1;
    if (buf == nullptr || buflen == 0) {
      if (needed == nullptr) fail_arg("buf: NULL (or buflen 0) and needed NULL: nothing to do");
      return;
    }
    const size_t copied = std::min(buflen - 1, text.size());
    std::memcpy(buf, text.data(), copied);
    buf[copied] = '\0';
  });
}

petacomm_status petacomm_xchg_plan_stats(petacomm_xchg_plan plan, petacomm_xchg_dtype dtype, int k,
                                         petacomm_xchg_stats *stats) {
  return guard([&] {
    if (stats == nullptr) fail_arg("stats: NULL output pointer");
    *stats = checked(plan).stats(dtype, k);
  });
}

petacomm_status petacomm_xchg_model_predict(const petacomm_xchg_rank_stats *ranks, int64_t nranks,
                                            const petacomm_xchg_global_stats *global,
                                            const petacomm_xchg_cost_params *cost,
                                            int64_t elem_bytes, const char *transport,
                                            petacomm_xchg_prediction *out) {
  return guard([&] {
    if (nranks < 1) fail_arg("nranks: must be >= 1, got ", nranks);
    if (ranks == nullptr) fail_arg("ranks: NULL");
    if (global == nullptr) fail_arg("global: NULL");
    if (out == nullptr) fail_arg("out: NULL");
    if (elem_bytes < 1) fail_arg("elem_bytes: must be >= 1, got ", elem_bytes);
    if (global->ranks != nranks)
      fail_arg("global: ranks = ", global->ranks, " but nranks = ", nranks);
    const bool a2a =
        petacomm::xchg::parse_transport(transport) == petacomm::xchg::Transport::kAlltoallv;
    const petacomm_xchg_cost_params params = cost ? *cost : petacomm::xchg::default_cost_params();
    std::vector<double> worst;
    for (int64_t r = 0; r < nranks; ++r) {
      std::vector<double> v = petacomm::xchg::cost_components(ranks[r], *global, params,
                                                              static_cast<double>(elem_bytes), a2a);
      if (worst.empty()) {
        worst = std::move(v);
      } else {
        for (size_t i = 0; i < v.size(); ++i) worst[i] = std::max(worst[i], v[i]);
      }
    }
    petacomm::xchg::combine_predictions(worst, *global, params, static_cast<double>(elem_bytes), 0,
                                        out);
  });
}

}  // extern "C"
