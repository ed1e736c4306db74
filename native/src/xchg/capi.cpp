// The C API of xchg: argument checks that need no MPI, then the Plan object; every entry
// point runs through petacomm::guard so no exception crosses into C.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>

#include "cost_model.hpp"
#include "error.hpp"
#include "exchange.hpp"
#include "petacomm/xchg.h"
#include "plan.hpp"
#include "planner.hpp"
#include "registry.hpp"

using petacomm::guard;
using petacomm::xchg::Plan;

struct petacomm_xchg_plan_s {
  std::unique_ptr<Plan> impl;
};

namespace {

Plan &checked(petacomm_xchg_plan plan) {
  PETACOMM_CHECK_ARG(plan != nullptr && plan->impl,
                     "plan: NULL (create it with petacomm_xchg_plan_create)");
  return *plan->impl;
}

// Copies text like snprintf (at most buflen bytes including the NUL) and reports its size.
void copy_text(const std::string &text, char *buf, size_t buflen, size_t *needed) {
  if (needed != nullptr) *needed = text.size() + 1;
  if (buf == nullptr || buflen == 0) return;
  const size_t copied = std::min(buflen - 1, text.size());
  std::memcpy(buf, text.data(), copied);
  buf[copied] = '\0';
}

// The counts of petacomm_xchg_rank_stats, as the header spells them, for the offline model's
// check: every one must be >= 0 (negative ones gave negative or NaN predicted costs).
struct RankCount {
  const char *name;
  std::int64_t petacomm_xchg_rank_stats::*field;
};
struct RankLevels {
  const char *name;
  std::int64_t (petacomm_xchg_rank_stats::*field)[PETACOMM_XCHG_HUB_LEVELS];
};
using Stats = petacomm_xchg_rank_stats;
constexpr RankCount kRankCounts[] = {
    {"n_local", &Stats::n_local},
    {"n_unique", &Stats::n_unique},
    {"n_shared", &Stats::n_shared},
    {"pair_partners", &Stats::pair_partners},
    {"pair_values", &Stats::pair_values},
    {"owner_sends", &Stats::owner_sends},
    {"owner_send_values", &Stats::owner_send_values},
    {"owner_recvs", &Stats::owner_recvs},
    {"owner_recv_values", &Stats::owner_recv_values},
    {"owned_keys", &Stats::owned_keys},
    {"dense_chunks", &Stats::dense_chunks},
    {"directory_send_msgs", &Stats::directory_send_msgs},
    {"directory_send_keys", &Stats::directory_send_keys},
    {"directory_reply_ints", &Stats::directory_reply_ints},
    {"nodes", &Stats::nodes},
    {"node_ranks", &Stats::node_ranks},
    {"node_leader", &Stats::node_leader},
    {"node_members", &Stats::node_members},
    {"node_member_values", &Stats::node_member_values},
    {"node_union_keys", &Stats::node_union_keys},
    {"node_partners", &Stats::node_partners},
    {"node_send_values", &Stats::node_send_values},
    {"node_recv_values", &Stats::node_recv_values},
};
constexpr RankLevels kRankLevels[] = {
    {"hub_pair_partners", &Stats::hub_pair_partners},
    {"hub_pair_values", &Stats::hub_pair_values},
    {"hub_keys", &Stats::hub_keys},
};
// A field added to the struct must be added above too.
static_assert(sizeof(Stats) ==
                  sizeof(std::int64_t) *
                      (std::size(kRankCounts) + PETACOMM_XCHG_HUB_LEVELS * std::size(kRankLevels)),
              "every field of petacomm_xchg_rank_stats is listed in kRankCounts or kRankLevels");

// ERR_ARG naming the first negative count of ranks[r], as "ranks[3].pair_values: ...".
void check_rank_stats(const Stats &s, std::int64_t r) {
  for (const RankCount &c : kRankCounts)
    PETACOMM_CHECK_ARG(s.*c.field >= 0, "ranks[", r, "].", c.name, ": must be >= 0, got ",
                       s.*c.field);
  for (const RankLevels &c : kRankLevels)
    for (int b = 0; b < PETACOMM_XCHG_HUB_LEVELS; ++b)
      PETACOMM_CHECK_ARG((s.*c.field)[b] >= 0, "ranks[", r, "].", c.name, "[", b,
                         "]: must be >= 0, got ", (s.*c.field)[b]);
}

// ERR_ARG naming the first field of global that is negative or disagrees with the others
// (or with nranks), as "global.distinct_keys: ...".
void check_global_stats(const petacomm_xchg_global_stats &g, std::int64_t nranks) {
  PETACOMM_CHECK_ARG(g.ranks == nranks, "global: ranks = ", g.ranks, " but nranks = ", nranks);
  for (const auto &[name, value] :
       {std::pair{"distinct_keys", g.distinct_keys}, std::pair{"dense_chunks", g.dense_chunks},
        std::pair{"max_unique", g.max_unique}})
    PETACOMM_CHECK_ARG(value >= 0, "global.", name, ": must be >= 0, got ", value);
  PETACOMM_CHECK_ARG(g.chunk_keys >= 1, "global.chunk_keys: must be >= 1, got ", g.chunk_keys);
  PETACOMM_CHECK_ARG(g.allgather_keys >= 1, "global.allgather_keys: must be >= 1, got ",
                     g.allgather_keys);
  PETACOMM_CHECK_ARG(
      (g.key_min == -1 && g.key_max == -1) || (g.key_min >= 0 && g.key_min <= g.key_max),
      "global.key_min, key_max: ", g.key_min, ", ", g.key_max,
      " (expected 0 <= key_min <= key_max, or both -1 when no rank has keys)");
  std::int64_t sum = 0;  // saturates at INT64_MAX
  for (int b = 0; b <= PETACOMM_XCHG_HUB_LEVELS; ++b) {
    const std::int64_t keys = g.multiplicity[b];
    PETACOMM_CHECK_ARG(keys >= 0, "global.multiplicity[", b, "]: must be >= 0, got ", keys);
    sum = keys > INT64_MAX - sum ? INT64_MAX : sum + keys;
  }
  PETACOMM_CHECK_ARG(sum == g.distinct_keys, "global.distinct_keys: ", g.distinct_keys,
                     " but the multiplicity buckets sum to ", sum);
}

}  // namespace

extern "C" {

petacomm_status petacomm_xchg_options_default(petacomm_xchg_options *opts) {
  return guard([&] {
    PETACOMM_CHECK_ARG(opts != nullptr, "opts: NULL");
    *opts = petacomm::xchg::default_options();
  });
}

petacomm_status petacomm_xchg_strategy_count(int *count) {
  return guard([&] {
    PETACOMM_CHECK_ARG(count != nullptr, "count: NULL output pointer");
    *count = static_cast<int>(petacomm::xchg::registry().size());
  });
}

petacomm_status petacomm_xchg_strategy_info(int index, petacomm_strategy_info *info) {
  return guard([&] { petacomm::xchg::registry().info(index, info); });
}

petacomm_status petacomm_xchg_plan_create_ext(MPI_Comm comm, const int64_t *keys, int64_t n,
                                              const petacomm_xchg_options *opts,
                                              const petacomm_xchg_p2p_curve *p2p,
                                              const char *caller_error, petacomm_xchg_plan *plan) {
  return guard([&] {
    PETACOMM_CHECK_ARG(plan != nullptr, "plan: NULL output pointer");
    *plan = nullptr;
    auto handle = std::make_unique<petacomm_xchg_plan_s>();
    handle->impl = std::make_unique<Plan>(comm, keys, n, opts, p2p, caller_error);
    *plan = handle.release();
  });
}

petacomm_status petacomm_xchg_plan_create_ext_f(MPI_Fint comm, const int64_t *keys, int64_t n,
                                                const petacomm_xchg_options *opts,
                                                const petacomm_xchg_p2p_curve *p2p,
                                                const char *caller_error,
                                                petacomm_xchg_plan *plan) {
  return petacomm_xchg_plan_create_ext(MPI_Comm_f2c(comm), keys, n, opts, p2p, caller_error, plan);
}

petacomm_status petacomm_xchg_plan_create(MPI_Comm comm, const int64_t *keys, int64_t n,
                                          const petacomm_xchg_options *opts,
                                          petacomm_xchg_plan *plan) {
  return petacomm_xchg_plan_create_ext(comm, keys, n, opts, nullptr, nullptr, plan);
}

petacomm_status petacomm_xchg_plan_create_f(MPI_Fint comm, const int64_t *keys, int64_t n,
                                            const petacomm_xchg_options *opts,
                                            petacomm_xchg_plan *plan) {
  return petacomm_xchg_plan_create_ext(MPI_Comm_f2c(comm), keys, n, opts, nullptr, nullptr, plan);
}

petacomm_status petacomm_xchg_plan_free(petacomm_xchg_plan *plan) {
  return guard([&] {
    PETACOMM_CHECK_ARG(plan != nullptr, "plan: NULL pointer to a plan handle");
    if (*plan == nullptr) return;
    std::unique_ptr<petacomm_xchg_plan_s> owned(*plan);
    *plan = nullptr;
    if (owned->impl) owned->impl->release();
  });
}

petacomm_status petacomm_xchg_execute_begin_ext(petacomm_xchg_plan plan, MPI_Comm comm,
                                                void *values, int64_t n, int k,
                                                petacomm_xchg_dtype dtype, petacomm_xchg_op op,
                                                const petacomm_xchg_user_op *user,
                                                const char *caller_error) {
  return guard([&] { checked(plan).begin(comm, values, n, k, dtype, op, user, caller_error); });
}

petacomm_status petacomm_xchg_execute_begin_ext_f(petacomm_xchg_plan plan, MPI_Fint comm,
                                                  void *values, int64_t n, int k,
                                                  petacomm_xchg_dtype dtype, petacomm_xchg_op op,
                                                  const char *caller_error) {
  const bool user = op == PETACOMM_XCHG_USER && (caller_error == nullptr || !*caller_error);
  return petacomm_xchg_execute_begin_ext(
      plan, MPI_Comm_f2c(comm), values, n, k, dtype, op, nullptr,
      user ? "op: user operators need petacomm_xchg_execute_begin_ext" : caller_error);
}

petacomm_status petacomm_xchg_execute_begin(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                            int64_t n, int k, petacomm_xchg_dtype dtype,
                                            petacomm_xchg_op op,
                                            const petacomm_xchg_user_op *user) {
  return petacomm_xchg_execute_begin_ext(plan, comm, values, n, k, dtype, op, user, nullptr);
}

petacomm_status petacomm_xchg_execute_begin_f(petacomm_xchg_plan plan, MPI_Fint comm, void *values,
                                              int64_t n, int k, petacomm_xchg_dtype dtype,
                                              petacomm_xchg_op op) {
  return petacomm_xchg_execute_begin_ext_f(plan, comm, values, n, k, dtype, op, nullptr);
}

petacomm_status petacomm_xchg_execute_end(petacomm_xchg_plan plan) {
  return guard([&] { checked(plan).end(); });
}

petacomm_status petacomm_xchg_execute(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                      int64_t n, int k, petacomm_xchg_dtype dtype,
                                      petacomm_xchg_op op) {
  return guard([&] {
    Plan &p = checked(plan);
    p.begin(
        comm, values, n, k, dtype, op, nullptr,
        op == PETACOMM_XCHG_USER ? "op: user operators need petacomm_xchg_execute_user" : nullptr);
    p.end();
  });
}

petacomm_status petacomm_xchg_execute_user(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                           int64_t n, int k, petacomm_xchg_dtype dtype,
                                           const petacomm_xchg_user_op *user) {
  return guard([&] {
    Plan &p = checked(plan);
    p.begin(comm, values, n, k, dtype, PETACOMM_XCHG_USER, user, nullptr);
    p.end();
  });
}

petacomm_status petacomm_xchg_plan_strategy(petacomm_xchg_plan plan, const char **name) {
  return guard([&] {
    PETACOMM_CHECK_ARG(name != nullptr, "name: NULL output pointer");
    *name = checked(plan).strategy_name();
  });
}

petacomm_status petacomm_xchg_plan_size(petacomm_xchg_plan plan, int64_t *n) {
  return guard([&] {
    PETACOMM_CHECK_ARG(n != nullptr, "n: NULL output pointer");
    *n = checked(plan).positions();
  });
}

petacomm_status petacomm_xchg_plan_describe(petacomm_xchg_plan plan, char *buf, size_t buflen,
                                            size_t *needed) {
  return guard([&] {
    const std::string &text = checked(plan).description();
    PETACOMM_CHECK_ARG((buf != nullptr && buflen > 0) || needed != nullptr,
                       "buf: NULL (or buflen 0) and needed NULL: nothing to do");
    copy_text(text, buf, buflen, needed);
  });
}

petacomm_status petacomm_xchg_plan_stats(petacomm_xchg_plan plan, petacomm_xchg_dtype dtype, int k,
                                         petacomm_xchg_stats *stats) {
  return guard([&] { checked(plan).stats(dtype, k, stats); });
}

petacomm_status petacomm_xchg_model_decide(const petacomm_xchg_rank_stats *ranks, int64_t nranks,
                                           const petacomm_xchg_global_stats *global,
                                           const petacomm_xchg_cost_params *cost,
                                           const petacomm_xchg_p2p_curve *p2p, int64_t elem_bytes,
                                           const char *transport, petacomm_xchg_prediction *out,
                                           int capacity, char *decision, size_t decision_len,
                                           size_t *needed) {
  namespace x = petacomm::xchg;
  return guard([&] {
    PETACOMM_CHECK_ARG(nranks >= 1, "nranks: must be >= 1, got ", nranks);
    PETACOMM_CHECK_ARG(ranks != nullptr, "ranks: NULL");
    PETACOMM_CHECK_ARG(global != nullptr, "global: NULL");
    PETACOMM_CHECK_ARG(out != nullptr, "out: NULL");
    const int count = static_cast<int>(x::registry().size());
    PETACOMM_CHECK_ARG(capacity >= count, "capacity: out has room for ", capacity,
                       " predictions, the registry has ", count, " strategies");
    PETACOMM_CHECK_ARG(elem_bytes >= 1, "elem_bytes: must be >= 1, got ", elem_bytes);
    PETACOMM_CHECK_ARG(decision != nullptr || decision_len == 0,
                       "decision: NULL with decision_len = ", decision_len);
    check_global_stats(*global, nranks);
    for (int64_t r = 0; r < nranks; ++r) check_rank_stats(ranks[r], r);
    const bool a2a = x::parse_transport(transport) == x::Transport::kAlltoallv;
    const petacomm_xchg_cost_params params = cost ? *cost : x::default_cost_params();
    const std::string problem = x::validate_cost(params, p2p);
    PETACOMM_CHECK_ARG(problem.empty(), problem);
    const x::CostModel model(params, p2p);
    const double eb = static_cast<double>(elem_bytes);
    // What a plan's fused reduction computes: every rank's terms, maximum over ranks.
    std::vector<double> worst;
    for (int64_t r = 0; r < nranks; ++r) {
      const std::vector<double> terms =
          x::rank_cost_terms(x::RankCost{ranks[r], nranks, model, eb, a2a});
      if (worst.empty()) {
        worst = terms;
      } else {
        for (size_t i = 0; i < terms.size(); ++i) worst[i] = std::max(worst[i], terms[i]);
      }
    }
    const x::Planned planned = x::decide(worst, x::GlobalCost{*global, model, eb, 0});
    std::copy(planned.predicted.begin(), planned.predicted.end(), out);
    if (decision != nullptr || needed != nullptr)
      copy_text(x::decision_json(planned.decision), decision, decision_len, needed);
  });
}

petacomm_status petacomm_xchg_model_predict(const petacomm_xchg_rank_stats *ranks, int64_t nranks,
                                            const petacomm_xchg_global_stats *global,
                                            const petacomm_xchg_cost_params *cost,
                                            int64_t elem_bytes, const char *transport,
                                            petacomm_xchg_prediction *out) {
  int count = 0;
  petacomm_xchg_strategy_count(&count);
  return petacomm_xchg_model_decide(ranks, nranks, global, cost, nullptr, elem_bytes, transport,
                                    out, count, nullptr, 0, nullptr);
}

}  // extern "C"
