// The intra-node half of the two-level transpose: moving each rank's bytes to its node's
// leader and back. Today by MPI_Gatherv/MPI_Scatterv on the node communicator; the
// node-aware shared-memory layer will provide another NodeStage (the leader reading and
// writing its members' buffers in a shared window) and make_node_stage will return it —
// the two-level strategy does not change.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace petacomm::transpose {

class NodeStage {
 public:
  virtual ~NodeStage() = default;
  // Collective over the node. The leader (node rank 0) receives member m's `bytes[m]` bytes
  // at gathered + (sum of bytes[0 .. m)); `gathered` and `bytes` are read on the leader only.
  virtual void gather(const char *mine, std::size_t my_bytes, char *gathered,
                      const std::vector<std::size_t> &bytes) = 0;
  // The reverse: member m receives bytes[m] bytes from scattered + (sum of bytes[0 .. m)).
  virtual void scatter(const char *scattered, const std::vector<std::size_t> &bytes, char *mine,
                       std::size_t my_bytes) = 0;
};

// node: the node's communicator (leader = rank 0); element: the contiguous type of elem
// bytes in which every size is counted.
std::unique_ptr<NodeStage> make_node_stage(MPI_Comm node, MPI_Datatype element, std::size_t elem);

}  // namespace petacomm::transpose
