// Two-level collectives: shared memory inside the node, MPI between the node leaders.
//
// Inside a node every collective is a sequence of rounds on the ranks' collective areas
// (CollControl + coll_bytes in each segment); round s:
//   1. every non-leader writes its contribution (if any) into its area, then arrive = s
//      (release) with its status word;
//   2. the leader waits until every arrive >= s (acquire), works (reduces the areas in local
//      rank order, or copies them, or fills its own area), then release = s (release) with
//      the status of the whole scope;
//   3. the non-leaders wait until the leader's release >= s (acquire) and read the leader's
//      area (if the round has a result).
// A non-leader writes its area again only in a later round, after it has seen the release
// of this one (the leader is done reading it); the leader writes its area only after every
// non-leader has arrived at the round (they are done reading the last result). Messages
// larger than coll_bytes take one round per chunk.
//
// Argument errors are agreed in the first round (and among leaders by one small MPI
// reduction before any data moves between nodes), so a collective fails on every rank
// together and writes no output on error. Roots that are not leaders exchange their data
// with their leader through the point-to-point engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine.hpp"
#include "progress.hpp"

namespace petacomm::node {

// Bytes of one element (0 for an invalid dtype).
std::int64_t dtype_bytes(petacomm_node_dtype dtype);
// Reduces n elements: acc[i] = acc[i] op in[i] (integers wrap).
void combine(void *acc, const void *in, std::int64_t n, petacomm_node_dtype dtype,
             petacomm_node_op op);

class Collectives {
 public:
  Collectives(const Domain &domain, Engine &engine, Progressor &progress);

  void barrier(petacomm_node_scope scope);
  void bcast(void *buf, std::int64_t count, petacomm_node_dtype dtype, int root,
             petacomm_node_scope scope);
  // recv: every rank (allreduce) or the root (reduce).
  void reduce(const void *send, void *recv, std::int64_t count, petacomm_node_dtype dtype,
              petacomm_node_op op, int root, petacomm_node_scope scope, bool all);
  void gather(const void *send, std::int64_t count, petacomm_node_dtype dtype, void *recv, int root,
              petacomm_node_scope scope);

 private:
  struct Root {
    int rank;   // the root's rank
    int node;   // its node
    int local;  // its local rank in that node
    bool in_my_node;
  };
  // scope when it is known; else SCOPE_ALL, the round every rank can take part in, with
  // *problem set (when empty).
  static petacomm_node_scope checked_scope(const char *call, petacomm_node_scope scope,
                                           std::string *problem);
  // The root of a rooted collective; an invalid one sets *problem (when empty) and gives
  // this node's leader, so the rounds that agree on the problem can still run.
  Root resolve_root(const char *call, int root, petacomm_node_scope scope,
                    std::string *problem) const;
  bool across_nodes(petacomm_node_scope scope) const;

  std::uint64_t next_step() { return ++step_; }
  void arrive(std::uint64_t s, std::int32_t status);
  std::int32_t await_release(std::uint64_t s);
  std::int32_t await_arrivals(std::uint64_t s);
  void release(std::uint64_t s, std::int32_t status);
  std::int32_t leaders_agree(std::int32_t status);
  // One round with no data: the status of the scope.
  std::int32_t agree(std::int32_t status, petacomm_node_scope scope);
  void report(std::int32_t status, const std::string &problem, const char *call) const;
  void wait_mpi(MPI_Request *request);
  void wait_request(Request *r);
  // Point-to-point between a root and its leader (tag kTagCollective).
  void send_to(int rank, const void *data, std::int64_t bytes);
  void recv_from(int rank, void *data, std::int64_t bytes);

  const Domain &domain_;
  Engine &engine_;
  Progressor &progress_;
  std::uint64_t step_ = 0;
  // Fingerprint of the current call's arguments (the call, count, dtype, op, root, scope),
  // compared in its first round: ranks passing different ones fail together.
  std::uint64_t args_ = 0;
};

}  // namespace petacomm::node
