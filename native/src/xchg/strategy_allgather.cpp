// allgather: the 2011 study's algorithm, kept as the reference the directory is measured
// against: every rank receives every key list (buffered MPI_Allgather) and the execution is
// one MPI_Alltoallv of the shared values.
#include <cmath>

#include "pairwise.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

enum Term { kExecute, kMessages, kBytes, kTerms };

void rank_terms(const RankCost &in, double *out) {
  const double values = static_cast<double>(in.rank.pair_values);
  RankCost on_alltoallv = in;  // whatever the plan's transport: the study's MPI_Alltoallv
  on_alltoallv.alltoallv = true;
  out[kExecute] = exchange_time(on_alltoallv, static_cast<double>(in.rank.pair_partners), values) +
                  pairwise_local_time(in, values);
  out[kMessages] = static_cast<double>(in.rank.pair_partners);
  out[kBytes] = values * in.elem_bytes;
}

petacomm_xchg_prediction predict(const double *m, const GlobalCost &in) {
  const petacomm_xchg_global_stats &g = in.global;
  const petacomm_xchg_cost_params &c = in.cost.params();
  const std::int64_t p = g.ranks;
  // R rounds of n_b keys per rank: ceil(log2 p) alpha + (p-1) n_b 8 beta, and every received
  // key looked up (4 passes over the bytes).
  const double nb = static_cast<double>(std::max<std::int64_t>(
      1, std::min(g.allgather_keys, std::max<std::int64_t>(g.max_unique, 1))));
  const double rounds = g.max_unique > 0 ? std::ceil(static_cast<double>(g.max_unique) / nb) : 0;
  const double setup =
      rounds * (log2_steps(p) * c.allgather_alpha +
                static_cast<double>(p - 1) * nb * 8.0 * (c.allgather_beta + 4.0 * c.local_beta));
  return {nullptr, m[kExecute], setup, m[kMessages], m[kBytes], 0, 0};
}

const char *not_a_candidate(const petacomm_xchg_prediction &) {
  return "the study's algorithm, kept as the reference: its discovery grows with p";
}

std::unique_ptr<Strategy> build(BuildContext &ctx) {
  return make_pairwise("allgather", ctx.comm, ctx.tag(kTagPairs), *ctx.sharing,
                       Transport::kAlltoallv, ctx.clock, 0);
}

}  // namespace

extern const XchgStrategy kAllgatherStrategy{
    {"allgather",
     "the 2011 study's algorithm: a buffered MPI_Allgather of every key list, then one "
     "MPI_Alltoallv of the shared values per execution (O(p) setup; the reference)",
     "allgather_keys"},
    Discovery::kAllgather,
    all_holder_lists,
    kTerms,
    rank_terms,
    predict,
    not_a_candidate,
    build,
};

}  // namespace petacomm::xchg
