#include "exchange.hpp"

namespace petacomm::apps::halo {

extern const ExchangeEntry kSendrecv, kNonblocking, kNeighborCart, kNeighborGraph, kPersistent;
#ifdef PETACOMM_HALO_NODE
extern const ExchangeEntry kNode;  // exchange_node.cpp (the node family)
#endif

const StrategyRegistry<ExchangeEntry> &exchanges() {
  static const StrategyRegistry<ExchangeEntry> registry({
      &kSendrecv,
      &kNonblocking,
      &kNeighborCart,
      &kNeighborGraph,
      &kPersistent,
#ifdef PETACOMM_HALO_NODE
      &kNode,
#endif
  });
  return registry;
}

}  // namespace petacomm::apps::halo
