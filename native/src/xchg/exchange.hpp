// Exchange: one round of sending packed key values to known partners and receiving theirs,
// over one of three transports — persistent point-to-point requests, a neighbourhood
// collective on a distributed graph, or MPI_Alltoallv (the study's choice, O(p) arrays).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "element_op.hpp"
#include "mpi_support.hpp"
#include "send_window.hpp"
#include "sharing.hpp"

namespace petacomm::xchg {

enum class Transport { kP2P, kNeighbor, kAlltoallv };
Transport parse_transport(const char *name);  // NULL or "" -> p2p; throws on unknown
const char *transport_name(Transport t);

class Exchange {
 public:
  // Collective over comm when transport is kNeighbor (creates the graph communicator).
  // Built during plan setup: its MPI waits are timed on `clock` (may be nullptr).
  // send_window (p2p): at most this many sends in flight per round, 0 = all at once.
  Exchange(MPI_Comm comm, PeerList send, PeerList recv, Transport transport, int tag,
           SetupClock *clock, int send_window = 0);
  ~Exchange();
  Exchange(const Exchange &) = delete;
  Exchange &operator=(const Exchange &) = delete;

  // Packs src[send.index[j]] (elements of type.bytes()) and starts the round; src ==
  // nullptr sends the buffers as they are (an execution that is being abandoned).
  void start(const void *src, const ElementType &type);
  void wait();
  bool started() const { return started_; }
  // Packed values received from recv peer j (valid after wait).
  const char *received(std::size_t peer) const;
  const PeerList &sends() const { return send_; }
  const PeerList &recvs() const { return recv_; }

  std::int64_t messages() const;  // sent per round
  std::int64_t entries() const { return send_.entries(); }
  std::size_t schedule_bytes() const;
  std::int64_t buffer_entries() const { return send_.entries() + recv_.entries(); }

 private:
  void prepare(const ElementType &type);
  void post_send(std::uint32_t peer, MPI_Request *request);
#ifdef PETACOMM_SMPI
  void post_nonpersistent();  // the persistent requests' sends and receives, posted anew
#endif
  void free_persistent();

  MPI_Comm comm_;
  PeerList send_, recv_;
  Transport transport_;
  int tag_;
  int size_ = 1;
  std::size_t elem_bytes_ = 0;
  MPI_Datatype prepared_type_ = MPI_DATATYPE_NULL;
  std::vector<char> send_buf_, recv_buf_;
  std::vector<MPI_Request> persistent_;    // p2p: receives then sends (not with a window)
  int send_window_ = 0;                    // p2p: binding (window_binds) or 0
  std::vector<std::uint32_t> send_order_;  // ... the sends' rotated order
  std::unique_ptr<SendWindow> window_;     // ... the round in flight
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool started_ = false;
  MPI_Comm graph_ = MPI_COMM_NULL;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;  // neighbor / alltoallv
};

// The reduction, in place and in rank order, of the keys an exchange receives values for:
// data[u] = e (+) values of the peers below me (+) data[u] (+) values of the peers above me,
// peers in ascending rank order. Only those keys are read and written, so the work grows
// with the shared keys and the values received, not with all of a rank's keys.
class RankOrderFold {
 public:
  RankOrderFold(const PeerList &recv, int me);
  void run(const ElementOp &op, const Exchange &exchange, void *data);
  std::size_t keys() const { return keys_.size(); }
  std::size_t memory_bytes() const;

 private:
  std::vector<std::int32_t> keys_;  // the distinct keys received, ascending
  std::vector<std::int32_t> slot_;  // per received value: its key's position in keys_
  std::size_t below_ = 0;           // receive peers ranked below me
  std::vector<char> acc_;
};

// data[recv.index[j]] = received value j (overwrites).
void copy_received(const Exchange &exchange, std::size_t elem_bytes, void *data);

}  // namespace petacomm::xchg
