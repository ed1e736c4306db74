#include "exchange.hpp"

namespace petacomm::apps::halo {

extern const ExchangeEntry kSendrecv, kNonblocking, kNeighborCart, kNeighborGraph, kPersistent;

const StrategyRegistry<ExchangeEntry> &exchanges() {
  static const StrategyRegistry<ExchangeEntry> registry(
      {&kSendrecv, &kNonblocking, &kNeighborCart, &kNeighborGraph, &kPersistent});
  return registry;
}

}  // namespace petacomm::apps::halo
