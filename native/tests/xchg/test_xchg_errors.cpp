// Error handling: bad arguments return PETACOMM_ERR_ARG (or _STATE) with a message naming
// the argument and value, on every rank together for collective creation, and leave the
// values untouched. Also describe() and stats() on a valid plan.
#include <mpi.h>

#include <climits>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "petacomm/xchg.h"

namespace {
int failures = 0, me = 0, nranks = 1;

#define CHECK(cond)                                                                             \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "rank %d: %s:%d: CHECK failed: %s (last error: %s)\n", me, __FILE__, \
                   __LINE__, #cond, petacomm_last_error());                                     \
      ++failures;                                                                               \
    }                                                                                           \
  } while (0)

bool says(const char *text) { return std::strstr(petacomm_last_error(), text) != nullptr; }

petacomm_status create(const std::vector<std::int64_t> &keys, const char *strategy,
                       petacomm_xchg_plan *plan) {
  petacomm_xchg_options opts;
  petacomm_xchg_options_default(&opts);
  opts.strategy = strategy;
  return petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(),
                                   static_cast<std::int64_t>(keys.size()), &opts, plan);
}
}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  std::vector<std::int64_t> keys = {5, 3, 5, 1000 + me, 7};
  petacomm_xchg_plan plan = nullptr;

  // Creation errors fail on every rank together.
  CHECK(create(keys, "fastest", &plan) == PETACOMM_ERR_ARG && plan == nullptr);
  CHECK(says("strategy") && says("fastest"));
  std::vector<std::int64_t> bad = keys;
  if (me == 0) bad[2] = -42;
  CHECK(create(bad, "directory", &plan) == PETACOMM_ERR_ARG && plan == nullptr);
  CHECK(me == 0 ? (says("keys[2]") && says("-42")) : says("rank 0"));
  CHECK(petacomm_xchg_plan_create(MPI_COMM_WORLD, nullptr, -1, nullptr, &plan) == PETACOMM_ERR_ARG);
  CHECK(says("n:"));
  CHECK(petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), 5, nullptr, nullptr) ==
        PETACOMM_ERR_ARG);
  CHECK(petacomm_xchg_plan_create(MPI_COMM_NULL, keys.data(), 5, nullptr, &plan) ==
        PETACOMM_ERR_ARG);
  CHECK(says("comm"));
  if (nranks > 1) {
    CHECK(create(keys, me == 0 ? "owner" : "directory", &plan) == PETACOMM_ERR_ARG);
    CHECK(says("differ"));
  }
  petacomm_xchg_options opts;
  petacomm_xchg_options_default(&opts);
  opts.chunk_keys = 0;
  CHECK(petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), 5, &opts, &plan) ==
        PETACOMM_ERR_ARG);
  CHECK(says("chunk_keys"));
  // The planner's element options are named as the options spell them.
  petacomm_xchg_options_default(&opts);
  opts.plan_k = 0;
  CHECK(petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), 5, &opts, &plan) ==
        PETACOMM_ERR_ARG);
  CHECK(says("plan_k: must be at least 1"));
  petacomm_xchg_options_default(&opts);
  opts.plan_dtype = static_cast<petacomm_xchg_dtype>(17);
  CHECK(petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), 5, &opts, &plan) ==
        PETACOMM_ERR_ARG);
  CHECK(says("plan_dtype: unknown dtype 17"));
  petacomm_xchg_options_default(&opts);
  opts.transport = "carrier-pigeon";
  CHECK(petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), 5, &opts, &plan) ==
        PETACOMM_ERR_ARG);
  CHECK(says("transport") && says("carrier-pigeon"));
  // autotune is bounded by PETACOMM_MAX_REPS executions per candidate (INT_MAX was taken and
  // ran for ever), on every rank together: the last rank's bad value fails every rank, that
  // rank naming the bound, the others that rank (they said the autotune values differ).
  {
    const int last = nranks - 1;
    const std::string at_fault = "invalid arguments on rank " + std::to_string(last);
    auto refused = [&](const char *message) {
      return petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), 5, &opts, &plan) ==
                 PETACOMM_ERR_ARG &&
             plan == nullptr && (me == last ? says(message) : says(at_fault.c_str()));
    };
    petacomm_xchg_options_default(&opts);
    opts.autotune = me == last ? INT_MAX : 0;
    CHECK(refused("autotune: must be in [0, 1000000], got 2147483647"));
    opts.autotune = me == last ? PETACOMM_MAX_REPS + 1 : 1;
    CHECK(refused("autotune: must be in [0, 1000000], got 1000001"));
    opts.autotune = me == last ? -1 : 0;
    CHECK(refused("autotune: must be in [0, 1000000], got -1"));
    opts.autotune = 2;  // within the bound: a plan, timed
    CHECK(petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), 5, &opts, &plan) ==
          PETACOMM_SUCCESS);
    CHECK(petacomm_xchg_plan_free(&plan) == PETACOMM_SUCCESS);
  }

  // Execution errors leave the values untouched.
  CHECK(create(keys, "directory", &plan) == PETACOMM_SUCCESS);
  std::vector<double> values = {1, 2, 3, 4, 5};
  const std::vector<double> before = values;
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), 4, 1, PETACOMM_XCHG_FLOAT64,
                              PETACOMM_XCHG_SUM) == PETACOMM_ERR_ARG);
  CHECK(says("n:") && says("5") && says("4"));
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), 5, 1,
                              static_cast<petacomm_xchg_dtype>(99),
                              PETACOMM_XCHG_SUM) == PETACOMM_ERR_ARG);
  CHECK(says("dtype") && says("99"));
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), 5, 0, PETACOMM_XCHG_FLOAT64,
                              PETACOMM_XCHG_SUM) == PETACOMM_ERR_ARG);
  CHECK(says("k:"));
  // k whose element exceeds an MPI count: named as k (it was "element bytes: ... use a
  // smaller chunk or fewer keys per rank").
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), 5, INT_MAX,
                              PETACOMM_XCHG_FLOAT64, PETACOMM_XCHG_SUM) == PETACOMM_ERR_ARG);
  CHECK(says("k: 2147483647 components of float64"));
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), 5, 1, PETACOMM_XCHG_COMPLEX128,
                              PETACOMM_XCHG_MIN) == PETACOMM_ERR_ARG);
  CHECK(says("min") && says("complex128"));
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), 5, 1, PETACOMM_XCHG_FLOAT64,
                              PETACOMM_XCHG_USER) == PETACOMM_ERR_ARG);
  CHECK(petacomm_xchg_execute_user(plan, MPI_COMM_WORLD, values.data(), 5, 1, PETACOMM_XCHG_FLOAT64,
                                   nullptr) == PETACOMM_ERR_ARG);
  CHECK(says("user"));
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_NULL, values.data(), 5, 1, PETACOMM_XCHG_FLOAT64,
                              PETACOMM_XCHG_SUM) == PETACOMM_ERR_ARG);
  if (nranks > 1) {
    CHECK(petacomm_xchg_execute(plan, MPI_COMM_SELF, values.data(), 5, 1, PETACOMM_XCHG_FLOAT64,
                                PETACOMM_XCHG_SUM) == PETACOMM_ERR_ARG);
    CHECK(says("comm") && says("different ranks"));
  }
  CHECK(values == before);
  CHECK(petacomm_xchg_execute_end(plan) == PETACOMM_ERR_STATE);
  CHECK(says("no execution in progress"));
  CHECK(petacomm_xchg_execute_begin(plan, MPI_COMM_WORLD, values.data(), 5, 1,
                                    PETACOMM_XCHG_FLOAT64, PETACOMM_XCHG_SUM,
                                    nullptr) == PETACOMM_SUCCESS);
  CHECK(petacomm_xchg_execute_begin(plan, MPI_COMM_WORLD, values.data(), 5, 1,
                                    PETACOMM_XCHG_FLOAT64, PETACOMM_XCHG_SUM,
                                    nullptr) == PETACOMM_ERR_STATE);
  CHECK(petacomm_xchg_execute_end(plan) == PETACOMM_SUCCESS);
  // Keys 3 and 7 are on every rank, 5 twice per rank (combined once), 1000+me on one rank.
  CHECK(values[0] == 4.0 * nranks && values[2] == 4.0 * nranks && values[1] == 2.0 * nranks &&
        values[3] == 4.0 && values[4] == 5.0 * nranks);

  // One rank's execution arguments bad (the last rank's): every rank fails before anything
  // is sent, names that rank, leaves the values alone; the next good execution is right.
  if (nranks > 1) {
    const int bad = nranks - 1;
    std::vector<double> mine = {1, 2, 3, 4, 5};
    std::vector<float> narrow = {1, 2, 3, 4, 5};
    const std::string at_fault = "rank " + std::to_string(bad);
    for (int variant = 0; variant < 4; ++variant) {
      const std::vector<double> kept = mine;
      void *data = mine.data();
      std::int64_t n = 5;
      int k = 1;
      petacomm_xchg_dtype dtype = PETACOMM_XCHG_FLOAT64;
      petacomm_xchg_op op = PETACOMM_XCHG_SUM;
      if (me == bad) {
        if (variant == 0) data = narrow.data(), dtype = PETACOMM_XCHG_FLOAT32;  // other element
        if (variant == 1) n = 4;                                                // other length
        if (variant == 2) op = PETACOMM_XCHG_MAX;                               // other operator
        if (variant == 3) k = 0;                                                // invalid k
      }
      CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, data, n, k, dtype, op) == PETACOMM_ERR_ARG);
      CHECK(says(at_fault.c_str()) || (me == bad && variant == 3));  // k: its own message
      if (variant == 0) CHECK(says("dtype"));
      if (variant == 1) CHECK(me == bad ? says("n:") : says("invalid arguments"));
      if (variant == 2) CHECK(says("op"));
      if (variant == 3) CHECK(me == bad ? says("k:") : says("invalid arguments"));
      CHECK(mine == kept && narrow[0] == 1.0f);
    }
    CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, mine.data(), 5, 1, PETACOMM_XCHG_FLOAT64,
                                PETACOMM_XCHG_SUM) == PETACOMM_SUCCESS);
    CHECK(mine[1] == 2.0 * nranks && mine[3] == 4.0 && mine[4] == 5.0 * nranks);
  }

  // describe and stats.
  std::size_t needed = 0;
  CHECK(petacomm_xchg_plan_describe(plan, nullptr, 0, &needed) == PETACOMM_SUCCESS && needed > 10);
  std::string text(needed, '\0');
  CHECK(petacomm_xchg_plan_describe(plan, text.data(), needed, nullptr) == PETACOMM_SUCCESS);
  CHECK(text.find("\"strategy\":\"directory\"") != std::string::npos);
  CHECK(text.find("\"setup_seconds\"") != std::string::npos);
  char tiny[8];
  CHECK(petacomm_xchg_plan_describe(plan, tiny, sizeof tiny, nullptr) == PETACOMM_SUCCESS &&
        std::strlen(tiny) == 7);
  petacomm_xchg_stats stats;
  CHECK(petacomm_xchg_plan_stats(plan, PETACOMM_XCHG_FLOAT64, 3, &stats) == PETACOMM_SUCCESS);
  CHECK(stats.messages.max == (nranks > 1 ? nranks - 1 : 0));
  CHECK(stats.bytes.max == (nranks > 1 ? 3 * 24.0 * (nranks - 1) : 0));
  CHECK(stats.memory_bytes.min > 0 && stats.setup_seconds > 0);
  // stats is collective: one rank's bad dtype, k or NULL output fails every rank together
  // (the other ranks waited in the reduction for ever).
  {
    const int last = nranks - 1;
    const std::string at_fault = "rank " + std::to_string(last);
    CHECK(petacomm_xchg_plan_stats(
              plan, me == last ? static_cast<petacomm_xchg_dtype>(99) : PETACOMM_XCHG_FLOAT64, 3,
              &stats) == PETACOMM_ERR_ARG);
    CHECK(me == last ? says("dtype") && says("99") : says(at_fault.c_str()));
    CHECK(petacomm_xchg_plan_stats(plan, PETACOMM_XCHG_FLOAT64, me == last ? 0 : 3, &stats) ==
          PETACOMM_ERR_ARG);
    CHECK(me == last ? says("k:") : says(at_fault.c_str()));
    CHECK(petacomm_xchg_plan_stats(plan, PETACOMM_XCHG_FLOAT64, 3, me == last ? nullptr : &stats) ==
          PETACOMM_ERR_ARG);
    CHECK(me == last ? says("stats") : says(at_fault.c_str()));
    if (nranks > 1) {
      CHECK(petacomm_xchg_plan_stats(plan, PETACOMM_XCHG_FLOAT64, me == last ? 2 : 3, &stats) ==
            PETACOMM_ERR_ARG);
      CHECK(says("differ") && says("k"));
    }
    CHECK(petacomm_xchg_plan_stats(plan, PETACOMM_XCHG_FLOAT64, 3, &stats) == PETACOMM_SUCCESS);
  }
  const char *name = nullptr;
  CHECK(petacomm_xchg_plan_strategy(plan, &name) == PETACOMM_SUCCESS &&
        std::strcmp(name, "directory") == 0);
  std::int64_t n = 0;
  CHECK(petacomm_xchg_plan_size(plan, &n) == PETACOMM_SUCCESS && n == 5);
  CHECK(petacomm_xchg_plan_free(&plan) == PETACOMM_SUCCESS && plan == nullptr);
  CHECK(petacomm_xchg_plan_free(&plan) == PETACOMM_SUCCESS);
  CHECK(petacomm_xchg_execute(nullptr, MPI_COMM_WORLD, values.data(), 5, 1, PETACOMM_XCHG_FLOAT64,
                              PETACOMM_XCHG_SUM) == PETACOMM_ERR_ARG);
  CHECK(says("plan"));

  // Offline model.
  int count = 0;
  CHECK(petacomm_xchg_strategy_count(&count) == PETACOMM_SUCCESS && count >= 5);
  std::vector<petacomm_xchg_prediction> out(static_cast<std::size_t>(count));
  petacomm_xchg_global_stats global{};
  CHECK(petacomm_xchg_model_predict(nullptr, 0, &global, nullptr, 8, nullptr, out.data()) ==
        PETACOMM_ERR_ARG);
  CHECK(says("nranks"));
  {
    // Statistics of two ranks without keys, then one bad field or argument at a time: every
    // count must be >= 0 (negative ones were taken, giving negative predicted costs), the
    // global figures must agree with each other, and pointers with their lengths. The
    // failure names the field and leaves out and decision untouched.
    const petacomm_xchg_rank_stats none{};
    std::vector<petacomm_xchg_rank_stats> table(2, none);
    petacomm_xchg_global_stats g{};
    g.ranks = 2;
    g.key_min = g.key_max = -1;
    g.chunk_keys = g.allgather_keys = 65536;
    const petacomm_xchg_global_stats good = g;
    char decision[256];
    std::size_t needed = 0;
    auto decide = [&](const petacomm_xchg_rank_stats *ranks, const petacomm_xchg_global_stats *gs,
                      petacomm_xchg_prediction *predictions, int capacity, char *text,
                      std::size_t text_len) {
      std::strcpy(decision, "untouched");
      for (petacomm_xchg_prediction &p : out) p.strategy = "untouched";
      return petacomm_xchg_model_decide(ranks, 2, gs, nullptr, nullptr, 8, nullptr, predictions,
                                        capacity, text, text_len, &needed);
    };
    auto refused = [&](const char *field, const char *value) {
      const bool ok = decide(table.data(), &g, out.data(), count, decision, sizeof decision) ==
                          PETACOMM_ERR_ARG &&
                      says(field) && says(value) && std::strcmp(decision, "untouched") == 0 &&
                      std::strcmp(out[0].strategy, "untouched") == 0;
      table.assign(2, none);
      g = good;
      return ok;
    };
    CHECK(decide(table.data(), &g, out.data(), count, decision, sizeof decision) ==
              PETACOMM_SUCCESS &&
          std::strstr(decision, "\"choice\"") != nullptr);
    table[1].n_local = -5;
    CHECK(refused("ranks[1].n_local: must be >= 0", "-5"));
    table[0].pair_values = -1;
    CHECK(refused("ranks[0].pair_values", "-1"));
    table[1].owner_recv_values = INT64_MIN;
    CHECK(refused("ranks[1].owner_recv_values", "-9223372036854775808"));
    table[0].hub_keys[3] = -7;
    CHECK(refused("ranks[0].hub_keys[3]", "-7"));
    table[1].hub_pair_partners[PETACOMM_XCHG_HUB_LEVELS - 1] = -2;
    CHECK(refused("ranks[1].hub_pair_partners[31]", "-2"));
    table[1].directory_reply_ints = -3;
    CHECK(refused("ranks[1].directory_reply_ints", "-3"));
    table[0].node_recv_values = -4;  // the last field
    CHECK(refused("ranks[0].node_recv_values", "-4"));
    g.distinct_keys = -1;
    CHECK(refused("global.distinct_keys", "-1"));
    g.dense_chunks = -6;
    CHECK(refused("global.dense_chunks", "-6"));
    g.max_unique = -8;
    CHECK(refused("global.max_unique", "-8"));
    g.chunk_keys = 0;
    CHECK(refused("global.chunk_keys: must be >= 1", "0"));
    g.allgather_keys = -1;
    CHECK(refused("global.allgather_keys: must be >= 1", "-1"));
    g.multiplicity[2] = -9;
    CHECK(refused("global.multiplicity[2]", "-9"));
    g.multiplicity[0] = 4;  // 4 keys on one rank each, but distinct_keys = 0
    CHECK(refused("global.distinct_keys", "sum to 4"));
    g.key_min = 9;
    g.key_max = 3;
    CHECK(refused("global.key_min", "9"));
    g.key_min = -5;
    CHECK(refused("global.key_min", "-5"));
    g.ranks = 3;
    CHECK(refused("global: ranks = 3 but nranks = 2", "3"));
    CHECK(decide(nullptr, &g, out.data(), count, decision, sizeof decision) == PETACOMM_ERR_ARG &&
          says("ranks: NULL"));
    CHECK(decide(table.data(), nullptr, out.data(), count, decision, sizeof decision) ==
              PETACOMM_ERR_ARG &&
          says("global: NULL"));
    CHECK(decide(table.data(), &g, nullptr, count, decision, sizeof decision) == PETACOMM_ERR_ARG &&
          says("out: NULL"));
    CHECK(decide(table.data(), &g, out.data(), count - 1, decision, sizeof decision) ==
              PETACOMM_ERR_ARG &&
          says("capacity"));
    CHECK(decide(table.data(), &g, out.data(), count, nullptr, 64) == PETACOMM_ERR_ARG &&
          says("decision: NULL with decision_len = 64"));
    // The length alone (a NULL decision, length 0) is the documented way to ask for it.
    CHECK(decide(table.data(), &g, out.data(), count, nullptr, 0) == PETACOMM_SUCCESS &&
          needed > 10);
  }

  // A plan used after MPI_Finalize: ERR_STATE, no MPI call (MPI_Comm_compare aborted the
  // job); freeing it still works.
  CHECK(create(keys, "directory", &plan) == PETACOMM_SUCCESS);

  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const int before_finalize = failures;
  MPI_Finalize();
  CHECK(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), 5, 1, PETACOMM_XCHG_FLOAT64,
                              PETACOMM_XCHG_SUM) == PETACOMM_ERR_STATE &&
        says("finalised"));
  CHECK(petacomm_xchg_plan_stats(plan, PETACOMM_XCHG_FLOAT64, 1, &stats) == PETACOMM_ERR_STATE &&
        says("finalised"));
  CHECK(petacomm_xchg_plan_free(&plan) == PETACOMM_SUCCESS && plan == nullptr);
  all += failures - before_finalize;  // this rank's checks after MPI_Finalize
  if (me == 0)
    std::printf("test_xchg_errors: %s on %d ranks (%d failures)\n", all ? "FAILED" : "passed",
                nranks, all);
  return all ? 1 : 0;
}
