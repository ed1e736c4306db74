// How a rank's sweep gets its upstream faces and passes its downstream faces on. The
// solver only talks to this interface, so flat MPI (blocking, non-blocking) and a
// node-aware layer are interchangeable strategies. A transport owns the face buffers: the
// kernel reads incoming faces where the transport received them and writes outgoing faces
// where the transport will send them from (a shared-memory transport can hand out window
// memory and so move each face with a single copy).
//
// Per sweep (one source iteration) the solver calls, for steps s = 0, 1, ... in order:
//   begin_sweep(); { in = receive(s); out = outgoing(s); kernel(in, out); send(s); } end_sweep()
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "schedule.hpp"
#include "strategy_registry.hpp"

namespace petacomm::apps::sweep3d {

struct FaceShape {
  std::size_t x_doubles = 0;  // mk * ny * mmi
  std::size_t y_doubles = 0;  // mk * nx * mmi
};

struct IncomingFaces {
  const double *x, *y;  // zeros where the step's upstream is the domain boundary
};
struct OutgoingFaces {
  double *x, *y;
};

// Messages and payload this rank sent (and received) per sweep; the same for every sweep.
struct TransportCounters {
  std::int64_t messages_sent = 0, bytes_sent = 0;
  std::int64_t messages_received = 0, bytes_received = 0;
  std::int64_t messages_in_node = -1;  // sent to ranks of this rank's node; -1: not known
};

struct TransportOptions {
  int node_size = 0;  // node-aware transports: ranks per virtual node (0: the layer's default)
};

class SweepTransport {
 public:
  virtual ~SweepTransport() = default;
  // Once, before the first sweep: the schedule every sweep follows and the face sizes.
  virtual void plan(const std::vector<SweepStep> &steps, const FaceShape &shape) = 0;
  virtual void begin_sweep() = 0;
  // The incoming faces of step s; valid until the next receive.
  virtual IncomingFaces receive(std::size_t s) = 0;
  // Where the kernel writes the outgoing faces of step s.
  virtual OutgoingFaces outgoing(std::size_t s) = 0;
  // Passes the faces written into outgoing(s) downstream.
  virtual void send(std::size_t s) = 0;
  // Completes every message of the sweep (the buffers may then be reused or freed).
  virtual void end_sweep() = 0;
  virtual TransportCounters counters() const = 0;
};

struct TransportEntry {
  StrategyAbout about;
  bool uses_node_size;  // runs once per --node-size
  std::unique_ptr<SweepTransport> (*make)(MPI_Comm comm, const TransportOptions &options);
};

const StrategyRegistry<TransportEntry> &transports();

// Counts of one plan, shared by the transports: what the schedule sends and receives.
TransportCounters count_messages(const std::vector<SweepStep> &steps, const FaceShape &shape);

}  // namespace petacomm::apps::sweep3d
