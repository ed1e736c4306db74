// Exchange: one round of sending packed key values to known partners and receiving theirs,
// over one of three transports — persistent point-to-point requests, a neighbourhood
// collective on a distributed graph, or MPI_Alltoallv (the study's choice, O(p) arrays).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "element_op.hpp"
#include "mpi_support.hpp"
#include "sharing.hpp"

namespace petacomm::xchg {

enum class Transport { kP2P, kNeighbor, kAlltoallv };
Transport parse_transport(const char *name);  // NULL or "" -> p2p; throws on unknown
const char *transport_name(Transport t);

class Exchange {
 public:
  // Collective over comm when transport is kNeighbor (creates the graph communicator).
  Exchange(MPI_Comm comm, PeerList send, PeerList recv, Transport transport, int tag);
  ~Exchange();
  Exchange(const Exchange &) = delete;
  Exchange &operator=(const Exchange &) = delete;

  // Packs src[send.index[j]] (elements of type.bytes()) and starts the round.
  void start(const void *src, const ElementType &type);
  void wait();
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
  void free_persistent();

  MPI_Comm comm_;
  PeerList send_, recv_;
  Transport transport_;
  int tag_;
  int size_ = 1;
  std::size_t elem_bytes_ = 0;
  MPI_Datatype prepared_type_ = MPI_DATATYPE_NULL;
  std::vector<char> send_buf_, recv_buf_;
  std::vector<MPI_Request> persistent_;  // p2p: receives then sends
  MPI_Request request_ = MPI_REQUEST_NULL;
  MPI_Comm graph_ = MPI_COMM_NULL;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;  // neighbor / alltoallv
};

// result[u] = identity (+) contributions of the holders of u in ascending rank order: peers
// below me, then own[u], then peers above me (own has `keys` elements).
void fold_in_rank_order(const ElementOp &op, int me, const Exchange &exchange, const void *own,
                        void *result, std::size_t keys);
// result[recv.index[j]] = received value j (overwrites).
void copy_received(const Exchange &exchange, std::size_t elem_bytes, void *result);

}  // namespace petacomm::xchg
