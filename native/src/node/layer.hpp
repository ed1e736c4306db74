// One instance of the node layer (a petacomm_node handle): the domain, the engine, and on
// the leader the gateway, the heap and the RPC servant. Every entry point checks its
// arguments (naming them) before touching anything; progress() is the one pass every wait
// loops on.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "domain.hpp"
#include "engine.hpp"
#include "gateway.hpp"
#include "heap.hpp"
#include "progress.hpp"
#include "rpc.hpp"

namespace petacomm::node {

class Layer final : public Progressor, public Claimer {
 public:
  // Collective over comm; fails on every rank together on bad options, or on a binding's
  // caller_error (petacomm_node_create_ext).
  Layer(MPI_Comm comm, const petacomm_node_options *opts, const char *caller_error = nullptr);
  ~Layer() override;
  Layer(const Layer &) = delete;
  Layer &operator=(const Layer &) = delete;

  // Collective: drains the gateways and frees the window. ERR_STATE on every rank (nothing
  // freed) while any rank has incomplete requests.
  void shutdown();

  bool progress() override;
  Request *claim(const Incoming &in) override;

  const Domain &domain() const { return *domain_; }
  Collectives &collectives() { return *collectives_; }

  Request *isend(const void *buf, std::int64_t bytes, int dest, int tag);
  Request *irecv(void *buf, std::int64_t capacity, int source, int tag);
  void send(const void *buf, std::int64_t bytes, int dest, int tag);
  // Completes (and returns to the pool) a request; throws its error after filling status.
  void wait(Request *r, petacomm_node_status *status);
  bool test(Request *r, petacomm_node_status *status);
  Request *checked(void *handle) const;
  void probe(int source, int tag, petacomm_node_status *status);
  bool iprobe(int source, int tag, petacomm_node_status *status);

  void *alloc(std::int64_t bytes);
  void dealloc(void *ptr);

  int register_rpc(const char *name, petacomm_node_rpc_fn fn, void *user_data);
  std::int64_t rpc_call(int id, const void *args, std::int64_t args_bytes, void *result,
                        std::int64_t capacity);
  std::int64_t file_open(const char *path, int flags);
  void file_write(std::int64_t file, std::int64_t offset, const void *buf, std::int64_t bytes);
  std::int64_t file_read(std::int64_t file, std::int64_t offset, void *buf, std::int64_t bytes);
  void file_close(std::int64_t file);

  petacomm_node_counters counters() const { return counters_; }
  petacomm_node_memory memory() const;

 private:
  void check_peer(const char *what, int rank) const;
  // Runs one call on the servant (here if this rank is the servant); throws its error.
  RpcReply call_servant(RpcCall &call, const void *bulk, void *result);
  void wait_internal(Request *r);

  petacomm_node_options options_{};
  std::unique_ptr<Domain> domain_;
  petacomm_node_counters counters_{};
  std::vector<UserFunction> functions_;
  std::unique_ptr<HeapAllocator> heap_;
  std::unique_ptr<StagingPool> staging_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Gateway> gateway_;
  std::unique_ptr<RpcServer> rpc_;
  std::unique_ptr<Collectives> collectives_;
};

}  // namespace petacomm::node
