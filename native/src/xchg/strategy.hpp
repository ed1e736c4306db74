// The interface every strategy implements. A strategy reduces the distinct-key values of
// all ranks in place: `data` holds this rank's combined value of each distinct key (one
// element per key) when an execution starts and the reduced value of each key when it
// ends. Keys no other rank holds are left as they are (e (+) c == c).
//
// An execution is start() (the communication that does not depend on the operator, which
// the plan begins while the collective argument check is still in flight), begin() (after
// the check passed), end(). When the check fails every rank calls abandon() instead of
// begin()/end(): it completes what start() began and reduces nothing. A rank that took no
// part in start() while others did (its own arguments were bad) calls start() with data ==
// nullptr — it sends whatever its buffers hold, sized by the plan's element — and then
// abandon(), so that no rank waits for it. data stays valid between start() and end(); the
// strategy writes it only in end().
#pragma once

#include <cstddef>
#include <cstdint>

#include "element_op.hpp"
#include "mpi_support.hpp"

namespace petacomm::xchg {

struct ExecContext {
  const ElementOp &op;
  const ElementType &type;  // contiguous datatype of one element (op.elem_bytes() bytes)
  bool deterministic;
};

struct Traffic {
  double messages = 0;              // sent per execution by this rank
  double entries = 0;               // key values (elements) sent per execution by this rank
  double inter_node_messages = -1;  // of `messages`, to other nodes (-1: nodes not known)
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual const char *name() const = 0;
  // Operator-independent communication (point-to-point exchanges of packed values).
  virtual void start(const ExecContext &ctx, const void *data) = 0;
  // The rest of the execution's start, once every rank's arguments are known to agree.
  virtual void begin(const ExecContext &ctx, void *data) = 0;
  virtual void end(const ExecContext &ctx, void *data) = 0;
  virtual void abandon() = 0;
  virtual Traffic traffic() const = 0;
  virtual std::size_t schedule_bytes() const = 0;   // index and schedule memory
  virtual std::int64_t buffer_entries() const = 0;  // buffers, in elements
};

}  // namespace petacomm::xchg
