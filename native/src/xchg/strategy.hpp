// The interface every strategy implements. A strategy reduces the distinct-key values of
// all ranks: begin() starts from this rank's combined values (own, one element per distinct
// key), end() leaves the reduced value of every distinct key in result. own stays valid
// and unmodified between begin and end.
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
  virtual void begin(const ExecContext &ctx, const void *own) = 0;
  virtual void end(const ExecContext &ctx, const void *own, void *result) = 0;
  virtual Traffic traffic() const = 0;
  virtual std::size_t schedule_bytes() const = 0;   // index and schedule memory
  virtual std::int64_t buffer_entries() const = 0;  // buffers, in elements
};

}  // namespace petacomm::xchg
