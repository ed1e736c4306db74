#include "registry.hpp"

#include <climits>

namespace petacomm::xchg {

// The strategies in registry order (the order describe() and the C API list them and the
// planner breaks ties in). Each entry is defined in its own strategy_*.cpp; adding a
// strategy adds its file and one line here.
#define PETACOMM_XCHG_STRATEGIES(X)                      \
  X(kDenseAllreduceStrategy) /* dense-allreduce */       \
  X(kAllgatherStrategy)      /* allgather (the study) */ \
  X(kDirectoryStrategy)      /* directory */             \
  X(kOwnerStrategy)          /* owner */                 \
  X(kHubSplitStrategy)       /* hub-split */             \
  X(kNodeAwareStrategy)      /* node-aware */            \
  X(kRangeStrategy)          /* range */                 \
  X(kButterflyStrategy)      /* butterfly */

#define PETACOMM_XCHG_DECLARE(entry) extern const XchgStrategy entry;
PETACOMM_XCHG_STRATEGIES(PETACOMM_XCHG_DECLARE)
#undef PETACOMM_XCHG_DECLARE

const StrategyRegistry<XchgStrategy> &registry() {
#define PETACOMM_XCHG_ENTRY(entry) &entry,
  static const StrategyRegistry<XchgStrategy> table(
      {PETACOMM_XCHG_STRATEGIES(PETACOMM_XCHG_ENTRY)});
#undef PETACOMM_XCHG_ENTRY
  return table;
}

int all_holder_lists(const petacomm_xchg_options &) { return INT_MAX; }

const char *always_a_candidate(const petacomm_xchg_prediction &) { return ""; }

}  // namespace petacomm::xchg
