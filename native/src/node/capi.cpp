// The C API of the node layer: handle checks, then the Layer; every entry point runs through
// petacomm::guard so no exception crosses into C.
#include <memory>

#include "error.hpp"
#include "layer.hpp"
#include "options.hpp"
#include "petacomm/node.h"

using petacomm::fail_arg;
using petacomm::guard;
using petacomm::node::Layer;
using petacomm::node::Request;

struct petacomm_node_s {
  std::unique_ptr<Layer> impl;
};

namespace {

Layer &checked(petacomm_node node) {
  if (node == nullptr || !node->impl) fail_arg("node: NULL (create it with petacomm_node_create)");
  // MPI_Finalize unmapped the node's window: any use of the layer would fault.
  if (petacomm::node::mpi_finalized())
    petacomm::fail_state("node: MPI is finalised (only petacomm_node_free may be called now)");
  return *node->impl;
}

// Takes the request out of the caller's handle first: whatever happens, it is consumed.
Request *take(Layer &layer, petacomm_node_request *request) {
  if (request == nullptr) fail_arg("request: NULL pointer to a request handle");
  Request *r = layer.checked(*request);
  return r;
}

}  // namespace

extern "C" {

petacomm_status petacomm_node_options_default(petacomm_node_options *opts) {
  return guard([&] {
    if (opts == nullptr) fail_arg("opts: NULL");
    *opts = petacomm::node::default_options();
  });
}

petacomm_status petacomm_node_create_ext(MPI_Comm comm, const petacomm_node_options *opts,
                                         const char *caller_error, petacomm_node *node) {
  return guard([&] {
    if (node == nullptr) fail_arg("node: NULL output pointer");
    *node = nullptr;
    auto handle = std::make_unique<petacomm_node_s>();
    handle->impl = std::make_unique<Layer>(comm, opts, caller_error);
    *node = handle.release();
  });
}

petacomm_status petacomm_node_create_ext_f(MPI_Fint comm, const petacomm_node_options *opts,
                                           const char *caller_error, petacomm_node *node) {
  return petacomm_node_create_ext(MPI_Comm_f2c(comm), opts, caller_error, node);
}

petacomm_status petacomm_node_create(MPI_Comm comm, const petacomm_node_options *opts,
                                     petacomm_node *node) {
  return petacomm_node_create_ext(comm, opts, nullptr, node);
}

petacomm_status petacomm_node_create_f(MPI_Fint comm, const petacomm_node_options *opts,
                                       petacomm_node *node) {
  return petacomm_node_create(MPI_Comm_f2c(comm), opts, node);
}

petacomm_status petacomm_node_free(petacomm_node *node) {
  return guard([&] {
    if (node == nullptr) fail_arg("node: NULL pointer to a layer handle");
    if (*node == nullptr) return;
    if ((*node)->impl && !petacomm::node::mpi_finalized()) (*node)->impl->shutdown();
    std::unique_ptr<petacomm_node_s> owned(*node);
    *node = nullptr;
  });
}

petacomm_status petacomm_node_get_layout(petacomm_node node, petacomm_node_layout *layout) {
  return guard([&] {
    const Layer &l = checked(node);
    if (layout == nullptr) fail_arg("layout: NULL output pointer");
    const auto &d = l.domain();
    *layout = {d.rank(),       d.size(),       d.node(),   d.nodes(),
               d.local_rank(), d.local_size(), d.leader(), d.node_size_setting(),
               d.domains()};
  });
}

petacomm_status petacomm_node_locate(petacomm_node node, int rank, int *node_index,
                                     int *local_rank) {
  return guard([&] {
    const auto &d = checked(node).domain();
    if (rank < 0 || rank >= d.size())
      fail_arg("rank: ", rank, " is not a rank of the layer's communicator (size ", d.size(), ")");
    const petacomm::node::Location where = d.locate(rank);
    if (node_index) *node_index = where.node;
    if (local_rank) *local_rank = where.local;
  });
}

petacomm_status petacomm_node_leader_of(petacomm_node node, int node_index, int *rank) {
  return guard([&] {
    const auto &d = checked(node).domain();
    if (node_index < 0 || node_index >= d.nodes())
      fail_arg("node_index: ", node_index, " is not a node (", d.nodes(), " nodes)");
    if (rank == nullptr) fail_arg("rank: NULL output pointer");
    *rank = d.leader_of(node_index);
  });
}

petacomm_status petacomm_node_comms(petacomm_node node, MPI_Comm *node_comm,
                                    MPI_Comm *leader_comm) {
  return guard([&] {
    const auto &d = checked(node).domain();
    if (node_comm) *node_comm = d.node_comm();
    if (leader_comm) *leader_comm = d.leader_comm();
  });
}

petacomm_status petacomm_node_comms_f(petacomm_node node, MPI_Fint *node_comm,
                                      MPI_Fint *leader_comm) {
  return guard([&] {
    const auto &d = checked(node).domain();
    if (node_comm) *node_comm = MPI_Comm_c2f(d.node_comm());
    if (leader_comm) *leader_comm = MPI_Comm_c2f(d.leader_comm());
  });
}

petacomm_status petacomm_node_alloc(petacomm_node node, int64_t bytes, void **ptr) {
  return guard([&] {
    Layer &l = checked(node);
    if (ptr == nullptr) fail_arg("ptr: NULL output pointer");
    *ptr = l.alloc(bytes);
  });
}

petacomm_status petacomm_node_dealloc(petacomm_node node, void *ptr) {
  return guard([&] { checked(node).dealloc(ptr); });
}

petacomm_status petacomm_node_heap_offset(petacomm_node node, const void *ptr, int64_t *offset) {
  return guard([&] {
    const auto &d = checked(node).domain();
    if (offset == nullptr) fail_arg("offset: NULL output pointer");
    const int64_t at = d.heap_offset_of(ptr, 0);
    if (ptr == nullptr || at < 0) fail_arg("ptr: ", ptr, " is not in the node heap");
    *offset = at;
  });
}

petacomm_status petacomm_node_heap_pointer(petacomm_node node, int64_t offset, void **ptr) {
  return guard([&] {
    const auto &d = checked(node).domain();
    if (ptr == nullptr) fail_arg("ptr: NULL output pointer");
    if (offset < 0 || offset > d.heap_bytes())
      fail_arg("offset: ", offset, " is outside the node heap (", d.heap_bytes(), " bytes)");
    *ptr = d.heap_base() + offset;
  });
}

petacomm_status petacomm_node_memory_space_of(petacomm_node node, const void *ptr, int64_t bytes,
                                              petacomm_node_memory_space *space) {
  return guard([&] {
    const auto &d = checked(node).domain();
    if (space == nullptr) fail_arg("space: NULL output pointer");
    if (bytes < 0) fail_arg("bytes: must be >= 0, got ", bytes);
    *space = static_cast<petacomm_node_memory_space>(petacomm::node::classify(d, ptr, bytes).space);
  });
}

petacomm_status petacomm_node_send(petacomm_node node, const void *buf, int64_t bytes, int dest,
                                   int tag) {
  return guard([&] { checked(node).send(buf, bytes, dest, tag); });
}

petacomm_status petacomm_node_recv(petacomm_node node, void *buf, int64_t capacity, int source,
                                   int tag, petacomm_node_status *status) {
  return guard([&] {
    Layer &l = checked(node);
    l.wait(l.irecv(buf, capacity, source, tag), status);
  });
}

petacomm_status petacomm_node_isend(petacomm_node node, const void *buf, int64_t bytes, int dest,
                                    int tag, petacomm_node_request *request) {
  return guard([&] {
    Layer &l = checked(node);
    if (request == nullptr) fail_arg("request: NULL output pointer");
    *request = reinterpret_cast<petacomm_node_request>(l.isend(buf, bytes, dest, tag));
  });
}

petacomm_status petacomm_node_irecv(petacomm_node node, void *buf, int64_t capacity, int source,
                                    int tag, petacomm_node_request *request) {
  return guard([&] {
    Layer &l = checked(node);
    if (request == nullptr) fail_arg("request: NULL output pointer");
    *request = reinterpret_cast<petacomm_node_request>(l.irecv(buf, capacity, source, tag));
  });
}

petacomm_status petacomm_node_wait(petacomm_node node, petacomm_node_request *request,
                                   petacomm_node_status *status) {
  return guard([&] {
    Layer &l = checked(node);
    Request *r = take(l, request);
    *request = nullptr;
    l.wait(r, status);
  });
}

petacomm_status petacomm_node_test(petacomm_node node, petacomm_node_request *request, int *done,
                                   petacomm_node_status *status) {
  return guard([&] {
    Layer &l = checked(node);
    if (done == nullptr) fail_arg("done: NULL output pointer");
    *done = 0;
    Request *r = take(l, request);
    if (!r->done) l.progress();
    if (!r->done) return;
    *done = 1;
    *request = nullptr;
    l.wait(r, status);
  });
}

petacomm_status petacomm_node_waitall(petacomm_node node, int n, petacomm_node_request *requests,
                                      petacomm_node_status *statuses) {
  return guard([&] {
    Layer &l = checked(node);
    if (n < 0) fail_arg("n: must be >= 0, got ", n);
    if (requests == nullptr && n > 0) fail_arg("requests: NULL with n = ", n);
    for (int i = 0; i < n; ++i) take(l, &requests[i]);  // every handle valid before waiting
    petacomm::Error first(PETACOMM_SUCCESS, "");
    for (int i = 0; i < n; ++i) {
      Request *r = static_cast<Request *>(static_cast<void *>(requests[i]));
      requests[i] = nullptr;
      try {
        l.wait(r, statuses ? &statuses[i] : nullptr);
      } catch (const petacomm::Error &e) {
        if (first.status() == PETACOMM_SUCCESS) first = e;
      }
    }
    if (first.status() != PETACOMM_SUCCESS) throw first;
  });
}

petacomm_status petacomm_node_probe(petacomm_node node, int source, int tag,
                                    petacomm_node_status *status) {
  return guard([&] { checked(node).probe(source, tag, status); });
}

petacomm_status petacomm_node_iprobe(petacomm_node node, int source, int tag, int *found,
                                     petacomm_node_status *status) {
  return guard([&] {
    Layer &l = checked(node);
    if (found == nullptr) fail_arg("found: NULL output pointer");
    *found = l.iprobe(source, tag, status) ? 1 : 0;
  });
}

petacomm_status petacomm_node_progress(petacomm_node node) {
  return guard([&] { checked(node).progress(); });
}

petacomm_status petacomm_node_barrier(petacomm_node node, petacomm_node_scope scope) {
  return guard([&] {
    Layer &l = checked(node);
    l.collectives().barrier(scope);
  });
}

petacomm_status petacomm_node_bcast(petacomm_node node, void *buf, int64_t count,
                                    petacomm_node_dtype dtype, int root,
                                    petacomm_node_scope scope) {
  return guard([&] {
    Layer &l = checked(node);
    l.collectives().bcast(buf, count, dtype, root, scope);
  });
}

petacomm_status petacomm_node_reduce(petacomm_node node, const void *send, void *recv,
                                     int64_t count, petacomm_node_dtype dtype, petacomm_node_op op,
                                     int root, petacomm_node_scope scope) {
  return guard([&] {
    Layer &l = checked(node);
    l.collectives().reduce(send, recv, count, dtype, op, root, scope, false);
  });
}

petacomm_status petacomm_node_allreduce(petacomm_node node, const void *send, void *recv,
                                        int64_t count, petacomm_node_dtype dtype,
                                        petacomm_node_op op, petacomm_node_scope scope) {
  return guard([&] {
    Layer &l = checked(node);
    l.collectives().reduce(send, recv, count, dtype, op, 0, scope, true);
  });
}

petacomm_status petacomm_node_gather(petacomm_node node, const void *send, int64_t count,
                                     petacomm_node_dtype dtype, void *recv, int root,
                                     petacomm_node_scope scope) {
  return guard([&] {
    Layer &l = checked(node);
    l.collectives().gather(send, count, dtype, recv, root, scope);
  });
}

petacomm_status petacomm_node_rpc_register(petacomm_node node, const char *name,
                                           petacomm_node_rpc_fn fn, void *user_data, int *id) {
  return guard([&] {
    Layer &l = checked(node);
    if (id == nullptr) fail_arg("id: NULL output pointer");
    *id = l.register_rpc(name, fn, user_data);
  });
}

petacomm_status petacomm_node_rpc_call(petacomm_node node, int id, const void *args,
                                       int64_t args_bytes, void *result, int64_t capacity,
                                       int64_t *result_bytes) {
  return guard([&] {
    const int64_t produced = checked(node).rpc_call(id, args, args_bytes, result, capacity);
    if (result_bytes) *result_bytes = produced;
  });
}

void petacomm_node_rpc_fail(const char *message) {
  petacomm::node::rpc_failure_message() = message ? message : "";
}

petacomm_status petacomm_node_file_open(petacomm_node node, const char *path, int flags,
                                        petacomm_node_file *file) {
  return guard([&] {
    Layer &l = checked(node);
    if (file == nullptr) fail_arg("file: NULL output pointer");
    *file = l.file_open(path, flags);
  });
}

petacomm_status petacomm_node_file_write_at(petacomm_node node, petacomm_node_file file,
                                            int64_t offset, const void *buf, int64_t bytes) {
  return guard([&] { checked(node).file_write(file, offset, buf, bytes); });
}

petacomm_status petacomm_node_file_read_at(petacomm_node node, petacomm_node_file file,
                                           int64_t offset, void *buf, int64_t bytes,
                                           int64_t *bytes_read) {
  return guard([&] {
    const int64_t n = checked(node).file_read(file, offset, buf, bytes);
    if (bytes_read) *bytes_read = n;
  });
}

petacomm_status petacomm_node_file_close(petacomm_node node, petacomm_node_file file) {
  return guard([&] { checked(node).file_close(file); });
}

petacomm_status petacomm_node_get_counters(petacomm_node node, petacomm_node_counters *counters) {
  return guard([&] {
    const Layer &l = checked(node);
    if (counters == nullptr) fail_arg("counters: NULL output pointer");
    *counters = l.counters();
  });
}

petacomm_status petacomm_node_get_memory(petacomm_node node, petacomm_node_memory *memory) {
  return guard([&] {
    const Layer &l = checked(node);
    if (memory == nullptr) fail_arg("memory: NULL output pointer");
    *memory = l.memory();
  });
}

}  // extern "C"
