// The transpose strategies, in the order the planner lists them (ties go to the earlier).
#include "strategy.hpp"

namespace petacomm::transpose {

extern const TransposeStrategy kAlltoall, kAlltoallv, kAlltoallw, kXor, kPairwise, kPipelined,
    kPartial, kTwoLevel;

const StrategyRegistry<TransposeStrategy> &registry() {
  static const StrategyRegistry<TransposeStrategy> table({&kAlltoall, &kAlltoallv, &kAlltoallw,
                                                          &kXor, &kPairwise, &kPipelined, &kPartial,
                                                          &kTwoLevel});
  return table;
}

}  // namespace petacomm::transpose
