#include "transport.hpp"

namespace petacomm::apps::sweep3d {

extern const TransportEntry kBlockingTransport;     // transport_blocking.cpp
extern const TransportEntry kNonblockingTransport;  // transport_nonblocking.cpp
#ifdef PETACOMM_SWEEP3D_NODE
extern const TransportEntry kNodeTransport;  // transport_node.cpp (the node family)
#endif

const StrategyRegistry<TransportEntry> &transports() {
  static const StrategyRegistry<TransportEntry> registry({
      &kBlockingTransport,
      &kNonblockingTransport,
#ifdef PETACOMM_SWEEP3D_NODE
      &kNodeTransport,
#endif
  });
  return registry;
}

TransportCounters count_messages(const std::vector<SweepStep> &steps, const FaceShape &shape) {
  TransportCounters c;
  const auto x_bytes = static_cast<std::int64_t>(shape.x_doubles * sizeof(double));
  const auto y_bytes = static_cast<std::int64_t>(shape.y_doubles * sizeof(double));
  for (const SweepStep &s : steps) {
    if (s.down_x != MPI_PROC_NULL) {
      ++c.messages_sent;
      c.bytes_sent += x_bytes;
    }
    if (s.down_y != MPI_PROC_NULL) {
      ++c.messages_sent;
      c.bytes_sent += y_bytes;
    }
    if (s.up_x != MPI_PROC_NULL) {
      ++c.messages_received;
      c.bytes_received += x_bytes;
    }
    if (s.up_y != MPI_PROC_NULL) {
      ++c.messages_received;
      c.bytes_received += y_bytes;
    }
  }
  return c;
}

}  // namespace petacomm::apps::sweep3d
