// directory: keys hashed to home ranks tell every holder who else holds its keys; each
// execution exchanges shared values with the real partners only (all pairs).
#include "directory.hpp"
#include "pairwise.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

enum Term { kExecute, kSetup, kMessages, kBytes, kTerms };

void rank_terms(const RankCost &in, double *out) {
  const double partners = static_cast<double>(in.rank.pair_partners);
  const double values = static_cast<double>(in.rank.pair_values);
  out[kExecute] = exchange_time(in, partners, values) + pairwise_local_time(in, values);
  out[kSetup] = directory_setup_time(in);
  out[kMessages] = partners;
  out[kBytes] = values * in.elem_bytes;
}

petacomm_xchg_prediction predict(const double *m, const GlobalCost &) {
  return {nullptr, m[kExecute], m[kSetup], m[kMessages], m[kBytes], 0, 0};
}

std::unique_ptr<Strategy> build(BuildContext &ctx) {
  return make_pairwise("directory", ctx.comm, ctx.tag(kTagPairs), *ctx.sharing, ctx.transport,
                       ctx.clock, ctx.options.send_window);
}

}  // namespace

extern const XchgStrategy kDirectoryStrategy{
    {"directory",
     "keys hashed to home ranks (NBX) tell each holder who shares its keys; each execution "
     "exchanges shared values with the real partners only, d(d-1) values per key",
     "transport send_window"},
    Discovery::kDirectory,
    all_holder_lists,
    kTerms,
    rank_terms,
    predict,
    always_a_candidate,
    build,
};

}  // namespace petacomm::xchg
