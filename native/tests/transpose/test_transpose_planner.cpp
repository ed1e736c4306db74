// The planner without MPI: each strategy's predicted cost against hand-worked figures, the
// applicability rules, the schedules' matching property, and the choices the cost model
// makes in regimes where the answer is known (latency-bound across nodes -> two-level, a
// sparse mask -> partial, a fast datatype engine -> alltoallw, measured times win).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "cost_model.hpp"
#include "error.hpp"
#include "options.hpp"
#include "planner.hpp"
#include "scheduled_exchange.hpp"

namespace tp = petacomm::transpose;

static int failures = 0;
#define CHECK(cond, ...)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                   \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

namespace {

bool close(double a, double b) { return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::fabs(b)); }

const petacomm::CandidateCost &candidate(const tp::Planned &p, const char *name) {
  for (const auto &c : p.decision.candidates)
    if (c.name == name) return c;
  static petacomm::CandidateCost none;
  return none;
}
const tp::CostEstimate &estimate(const tp::Planned &p, const char *name) {
  for (std::size_t i = 0; i < p.decision.candidates.size(); ++i)
    if (p.decision.candidates[i].name == name) return p.estimates[i];
  static tp::CostEstimate none;
  return none;
}

tp::ProblemStats square(int q, std::int64_t n, int per_node) {
  tp::ProblemStats s;
  s.q = q;
  s.n_rows = s.n_cols = n;
  s.batch = 1;
  s.elem = 16;
  s.ranks_per_node = per_node;
  return s;
}

void hand_worked_figures() {
  // 1024 x 1024 complex128 on 4 ranks of one node: 256 rows each, blocks of 256 x 256.
  const petacomm_transpose_cost_params c = tp::default_options().cost;
  const tp::Planned p = tp::decide(square(4, 1024, 4), c);
  const double MiB = 1 << 20;
  const double local = 4 * MiB * c.transpose_beta + 3 * MiB * c.copy_beta;
  CHECK(close(candidate(p, "alltoall").predicted_seconds,
              3 * c.alltoall_alpha + 3 * MiB * c.alltoall_beta + local),
        "alltoall %g", candidate(p, "alltoall").predicted_seconds);
  CHECK(estimate(p, "alltoall").messages == 3 && estimate(p, "alltoall").bytes == 3 * MiB, "a2a");
  // xor: 3 rounds of one 1 MiB block, all on the node; blocks land without unpacking.
  CHECK(close(candidate(p, "xor").predicted_seconds,
              3 * (c.p2p_alpha + MiB * c.p2p_beta) + 4 * MiB * c.transpose_beta),
        "xor %g", candidate(p, "xor").predicted_seconds);
  // alltoallw: the own block by the blocked transpose, rows out contiguous, in by elements.
  CHECK(close(candidate(p, "alltoallw").predicted_seconds,
              3 * c.alltoall_alpha + 3 * MiB * c.alltoall_beta + MiB * c.transpose_beta +
                  3 * MiB * c.copy_beta + 3 * MiB * c.datatype_beta),
        "alltoallw %g", candidate(p, "alltoallw").predicted_seconds);
  CHECK(estimate(p, "alltoall").node_link_bytes == 0, "one node: nothing crosses a node link");
  // Uneven: 10 x 10 on 4 ranks: rows 3,3,2,2; alltoall pads every block to 3 x 3.
  tp::ProblemStats uneven = square(4, 10, 1);
  const tp::Planned u = tp::decide(uneven, c);
  CHECK(estimate(u, "alltoall").bytes == 3 * 9 * 16, "padded bytes %g",
        estimate(u, "alltoall").bytes);
  CHECK(estimate(u, "alltoallv").bytes == 3 * (10 - 3) * 16, "exact bytes %g",
        estimate(u, "alltoallv").bytes);
  // Two nodes of 2: half of rank 0's remote partners are off the node; the node sends
  // 2 ranks x remote bytes x 2/3.
  tp::ProblemStats two = square(4, 1024, 2);
  const tp::Planned t = tp::decide(two, c);
  CHECK(close(estimate(t, "alltoallv").node_link_bytes, 2 * 3 * MiB * 2.0 / 3.0), "link %g",
        estimate(t, "alltoallv").node_link_bytes);
}

void applicability() {
  const petacomm_transpose_cost_params c = tp::default_options().cost;
  const tp::Planned p = tp::decide(square(6, 64, 6), c);
  CHECK(!candidate(p, "xor").applicable &&
            candidate(p, "xor").not_applicable_because.find("power-of-two") != std::string::npos,
        "xor at 6 ranks");
  CHECK(!candidate(p, "partial").applicable, "partial without a mask");
  CHECK(candidate(p, "pairwise").applicable && estimate(p, "pairwise").steps == 5, "pairwise 6");
  CHECK(estimate(tp::decide(square(7, 64, 7), c), "pairwise").steps == 7, "pairwise 7 rounds");
  bool threw = false;
  try {
    tp::decide(square(6, 64, 6), c, "xor");
  } catch (const petacomm::Error &e) {
    threw = e.status() == PETACOMM_ERR_ARG && std::strstr(e.what(), "strategy: xor needs");
  }
  CHECK(threw, "forcing xor at 6 ranks must fail naming the strategy");
  const tp::Planned forced = tp::decide(square(4, 64, 4), c, "pipelined");
  CHECK(forced.decision.choice == "pipelined", "forced choice");
}

void schedules() {
  for (int q = 1; q <= 12; ++q)
    for (int kind = 0; kind < 2; ++kind) {
      if (kind == 0 && (q & (q - 1)) != 0) continue;
      std::vector<std::vector<int>> all;
      for (int r = 0; r < q; ++r)
        all.push_back(kind == 0 ? tp::xor_schedule(q, r) : tp::round_robin_schedule(q, r));
      const std::size_t rounds = all[0].size();
      CHECK(rounds == static_cast<std::size_t>(q < 2 ? 0 : (q % 2 ? q : q - 1)),
            "q %d kind %d: %zu rounds", q, kind, rounds);
      for (int r = 0; r < q; ++r) {
        std::set<int> met;
        CHECK(all[r].size() == rounds, "q %d: rank %d has %zu rounds", q, r, all[r].size());
        for (std::size_t k = 0; k < rounds; ++k) {
          const int p = all[r][k];
          if (p < 0) continue;
          CHECK(p != r && p < q && all[p][k] == r, "q %d round %zu: %d -> %d not mutual", q, k, r,
                p);
          met.insert(p);
        }
        CHECK(met.size() == static_cast<std::size_t>(q - 1), "q %d: rank %d meets %zu ranks", q, r,
              met.size());
      }
    }
}

void regimes() {
  petacomm_transpose_cost_params c = tp::default_options().cost;
  // 64 ranks in nodes of 16, tiny blocks, expensive messages between nodes: two-level.
  c.net_alpha = 1e-3;
  const tp::Planned lat = tp::decide(square(64, 256, 16), c);
  CHECK(lat.decision.choice == "two-level", "latency-bound: chose %s (%s)",
        lat.decision.choice.c_str(), lat.decision.reason.c_str());
  // A mask keeping 8 of 1024 columns: partial.
  c = tp::default_options().cost;
  tp::ProblemStats masked = square(8, 1024, 8);
  masked.col_kept.assign(1024, 0);
  for (int j = 0; j < 8; ++j) masked.col_kept[j] = 1;
  const tp::Planned m = tp::decide(masked, c);
  CHECK(m.decision.choice == "partial", "sparse mask: chose %s", m.decision.choice.c_str());
  CHECK(estimate(m, "partial").messages == 0 && estimate(m, "partial").bytes == 0,
        "the 8 kept columns all belong to rank 0: rank 0 sends nothing (%g messages)",
        estimate(m, "partial").messages);
  // A datatype engine as fast as copies and slow blocked transposes: alltoallw.
  c.datatype_beta = c.copy_beta / 4;
  c.transpose_beta = c.copy_beta * 8;
  CHECK(tp::decide(square(4, 1024, 4), c).decision.choice == "alltoallw", "fast datatypes");
  // Measured times replace predictions (the planner "measure" path).
  tp::Planned p = tp::decide(square(4, 1024, 4), tp::default_options().cost);
  for (auto &cand : p.decision.candidates)
    if (cand.applicable) cand.measured_seconds = cand.name == "pipelined" ? 1e-3 : 2e-3;
  const petacomm::Decision d = petacomm::decide_cheapest(p.decision.candidates);
  CHECK(d.choice == "pipelined" && d.measured, "measured: chose %s", d.choice.c_str());
}

void offline_json() {
  std::vector<unsigned char> mask(64, 0);
  mask[3] = 1;
  petacomm_transpose_problem problem{8, 64, 64, 2, 16, 4, mask.data(), 64};
  size_t needed = 0;
  CHECK(petacomm_transpose_model_decide(&problem, nullptr, nullptr, 0, &needed) == PETACOMM_SUCCESS,
        "%s", petacomm_last_error());
  std::string text(needed, '\0');
  petacomm_transpose_model_decide(&problem, nullptr, text.data(), needed, nullptr);
  CHECK(text.find("\"choice\":\"partial\"") != std::string::npos, "%s", text.c_str());
  CHECK(text.find("\"name\":\"two-level\"") != std::string::npos, "%s", text.c_str());
}

}  // namespace

int main() {
  hand_worked_figures();
  applicability();
  schedules();
  regimes();
  offline_json();
  std::printf("transpose planner: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
