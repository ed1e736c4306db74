#include "layer.hpp"

#include <cstring>
#include <limits>

#include "agreement.hpp"
#include "error.hpp"
#include "options.hpp"

namespace petacomm::node {

namespace {

void put_param(RpcCall &call, int index, std::int64_t value) {
  std::memcpy(call.params + index * 8, &value, sizeof value);
  call.params_bytes = std::max(call.params_bytes, (index + 1) * 8);
}

RpcCall make_call(std::int32_t function) {
  RpcCall call{};
  call.function = function;
  return call;
}

// The bytes [offset, offset + bytes) of a file: offset and bytes >= 0, and the range within
// the largest file offset, 2^63 - 1 (the servant's pwrite and pread failed with EINVAL).
void check_file_range(std::int64_t offset, std::int64_t bytes) {
  if (offset < 0) fail_arg("offset: must be >= 0, got ", offset);
  if (bytes < 0) fail_arg("bytes: must be >= 0, got ", bytes);
  if (bytes > std::numeric_limits<std::int64_t>::max() - offset)
    fail_arg("offset: ", offset, " + ", bytes, " bytes goes beyond the largest file offset, ",
             "2^63 - 1");
}

}  // namespace

Layer::Layer(MPI_Comm comm, const petacomm_node_options *opts, const char *caller_error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized || mpi_finalized())
    fail_state("petacomm_node_create: MPI is not initialised (call MPI_Init first)");
  if (comm == MPI_COMM_NULL) fail_arg("comm: MPI_COMM_NULL");
  int inter = 0;
  PETACOMM_CHECK_MPI(MPI_Comm_test_inter(comm, &inter));
  if (inter) fail_arg("comm: an intercommunicator (the layer needs an intracommunicator)");
  // A binding's own finding comes first: opts may be a placeholder then.
  std::string problem = caller_error != nullptr ? caller_error : "";
  if (problem.empty()) options_ = resolve_options(opts, problem);
  if (problem.empty()) problem = check_options(options_);
  agree_or_fail(comm, problem, fingerprint(options_),
                "opts: the options (or PETACOMM_NODE_SIZE) differ between ranks; they must agree",
                "no layer was created");
  domain_ = std::make_unique<Domain>(comm, options_);
  set_oversubscribed(domain_->oversubscribed());
  engine_ = std::make_unique<Engine>(*domain_, counters_);
  if (domain_->is_leader()) {
    heap_ = std::make_unique<HeapAllocator>(options_.heap_bytes);
    // Half the heap at most holds data passing through; the rest is for petacomm_node_alloc.
    staging_ =
        std::make_unique<StagingPool>(domain_->heap_base(), heap_.get(), options_.heap_bytes / 2);
    // One node: nothing to forward, and no MPI probe in every wait.
    if (domain_->nodes() > 1)
      gateway_ = std::make_unique<Gateway>(*domain_, *engine_, *staging_, counters_, options_);
    rpc_ =
        std::make_unique<RpcServer>(*domain_, *engine_, *heap_, *staging_, functions_, counters_);
    engine_->set_remote_sender(gateway_.get());
    engine_->set_claimer(this);
  }
  collectives_ = std::make_unique<Collectives>(*domain_, *engine_, *this);
}

// Without shutdown (an error, or MPI finalized first) only local memory goes: collective MPI
// calls here could hang, so the window and communicators are left to MPI_Finalize.
Layer::~Layer() {
  collectives_.reset();
  rpc_.reset();
  gateway_.reset();
  engine_.reset();
  staging_.reset();
  heap_.reset();
}

void Layer::shutdown() {
  // 1. No rank may have requests in flight (agreed, progressing while waiting).
  const std::int64_t mine = engine_->outstanding_user();
  int flag = mine > 0 ? domain_->rank() : domain_->size(), first = 0;
  MPI_Request request;
  PETACOMM_CHECK_MPI(MPI_Iallreduce(&flag, &first, 1, MPI_INT, MPI_MIN, domain_->comm(), &request));
  wait_until([&] {
    int done = 0;
    PETACOMM_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    return done != 0;
  });
  if (first != domain_->size()) {
    if (mine > 0)
      fail_state("petacomm_node_free: ", mine, " requests of this rank are not complete (wait ",
                 "for them first); the layer was kept");
    fail_state("petacomm_node_free: rank ", first, " has requests that are not complete; the ",
               "layer was kept");
  }
  // 2. After this barrier no rank of the node sends any more.
  collectives_->barrier(PETACOMM_NODE_SCOPE_NODE);
  // 3. Gateways forward what their node sent, then agree that every MPI message arrived.
  if (domain_->is_leader() && domain_->nodes() > 1) {
    Backoff backoff(0, 1000);
    for (;;) {
      const bool moved = progress();
      if (!moved && gateway_->outbound_done()) break;
      if (moved)
        backoff.reset();
      else
        backoff.idle();
    }
    for (;;) {
      std::int64_t mine_counts[2] = {gateway_->mpi_messages_sent(),
                                     gateway_->mpi_messages_received()};
      std::int64_t sums[2] = {0, 0};
      PETACOMM_CHECK_MPI(MPI_Iallreduce(mine_counts, sums, 2, MPI_INT64_T, MPI_SUM,
                                        domain_->leader_comm(), &request));
      wait_until([&] {
        int done = 0;
        PETACOMM_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
        return done != 0;
      });
      if (sums[0] == sums[1]) break;
    }
  }
  // 4. Every rank waits for its leader; then nothing touches the window any more.
  collectives_->barrier(PETACOMM_NODE_SCOPE_NODE);
  collectives_.reset();
  rpc_.reset();
  gateway_.reset();
  engine_.reset();
  staging_.reset();
  heap_.reset();
  domain_->release();
}

bool Layer::progress() {
  bool moved = engine_->progress();
  if (gateway_) moved |= gateway_->progress();
  return moved;
}

Request *Layer::claim(const Incoming &in) {
  if (in.dest != domain_->rank()) {
    PETACOMM_CHECK_INTERNAL(gateway_ != nullptr, "a message for rank ", in.dest, " of no node");
    return gateway_->claim_forward(in);
  }
  if (in.tag == kTagRpcCall) return rpc_->claim(in);
  return nullptr;
}

// ---- point-to-point -------------------------------------------------------------------

void Layer::check_peer(const char *what, int rank) const {
  if (rank < 0 || rank >= domain_->size())
    fail_arg(what, ": ", rank, " is not a rank of the layer's communicator (size ", domain_->size(),
             ")");
}

Request *Layer::isend(const void *buf, std::int64_t bytes, int dest, int tag) {
  if (bytes < 0) fail_arg("bytes: must be >= 0, got ", bytes);
  if (buf == nullptr && bytes > 0) fail_arg("buf: NULL for a message of ", bytes, " bytes");
  check_peer("dest", dest);
  if (tag < 0) fail_arg("tag: must be >= 0, got ", tag);
  return engine_->post_send(buf, bytes, dest, tag, domain_->rank(), true);
}

Request *Layer::irecv(void *buf, std::int64_t capacity, int source, int tag) {
  if (capacity < 0) fail_arg("capacity: must be >= 0, got ", capacity);
  if (buf == nullptr && capacity > 0) fail_arg("buf: NULL with a capacity of ", capacity);
  if (source < 0 || source >= domain_->size())
    fail_arg("source: ", source, " is not a rank of the layer's communicator (size ",
             domain_->size(), "; there is no wildcard source)");
  if (tag < PETACOMM_NODE_ANY_TAG)
    fail_arg("tag: must be >= 0 or PETACOMM_NODE_ANY_TAG, got ", tag);
  return engine_->post_recv(buf, capacity, source, tag, true);
}

void Layer::send(const void *buf, std::int64_t bytes, int dest, int tag) {
  wait(isend(buf, bytes, dest, tag), nullptr);
  // The gateway hands its own small messages to the network at its next progress: do it now.
  if (gateway_ && domain_->local_of(dest) < 0) progress();
}

Request *Layer::checked(void *handle) const {
  Request *r = static_cast<Request *>(handle);
  if (r == nullptr) fail_arg("request: NULL");
  if (r->magic != kRequestLive || !r->user)
    fail_arg("request: not an active request of this layer (completed already?)");
  return r;
}

void Layer::wait(Request *r, petacomm_node_status *status) {
  wait_until([&] { return r->done; });
  if (status) *status = r->status;
  const petacomm_status error = r->error;
  const std::string message = std::move(r->error_message);
  engine_->release(r);
  if (error != PETACOMM_SUCCESS) throw Error(error, message);
}

bool Layer::test(Request *r, petacomm_node_status *status) {
  if (!r->done) progress();
  if (!r->done) return false;
  wait(r, status);
  return true;
}

void Layer::probe(int source, int tag, petacomm_node_status *status) {
  check_peer("source", source);
  if (tag < PETACOMM_NODE_ANY_TAG)
    fail_arg("tag: must be >= 0 or PETACOMM_NODE_ANY_TAG, got ", tag);
  wait_until([&] { return engine_->probe(source, tag, status); });
}

bool Layer::iprobe(int source, int tag, petacomm_node_status *status) {
  check_peer("source", source);
  if (tag < PETACOMM_NODE_ANY_TAG)
    fail_arg("tag: must be >= 0 or PETACOMM_NODE_ANY_TAG, got ", tag);
  if (engine_->probe(source, tag, status)) return true;
  progress();
  return engine_->probe(source, tag, status);
}

// ---- the servant --------------------------------------------------------------------------

void Layer::wait_internal(Request *r) {
  wait_until([&] { return r->done; });
  const petacomm_status error = r->error;
  const std::string message = r->error_message;
  engine_->release(r);
  if (error != PETACOMM_SUCCESS) fail_internal("rpc transfer: ", message);
}

RpcReply Layer::call_servant(RpcCall &call, const void *bulk, void *result) {
  RpcReply reply{};
  if (rpc_) {
    reply = rpc_->execute(call, static_cast<const char *>(bulk), static_cast<char *>(result));
  } else {
    const int servant = domain_->leader(), me = domain_->rank();
    Request *answer = engine_->post_recv(&reply, sizeof reply, servant, kTagRpcReply, true);
    Request *data = call.result_capacity > 0 ? engine_->post_recv(result, call.result_capacity,
                                                                  servant, kTagRpcResult, true)
                                             : nullptr;
    Request *head = engine_->post_send(&call, sizeof call, servant, kTagRpcCall, me, true);
    Request *args = call.bulk_bytes > 0
                        ? engine_->post_send(bulk, call.bulk_bytes, servant, kTagRpcBulk, me, true)
                        : nullptr;
    wait_internal(head);
    if (args) wait_internal(args);
    wait_internal(answer);
    if (data) wait_internal(data);
  }
  if (reply.status != PETACOMM_SUCCESS) {
    const std::size_t n = std::min<std::size_t>(std::max(reply.message_bytes, 0), kRpcMessageBytes);
    throw Error(static_cast<petacomm_status>(reply.status), std::string(reply.message, n));
  }
  return reply;
}

void *Layer::alloc(std::int64_t bytes) {
  if (bytes < 0) fail_arg("bytes: must be >= 0, got ", bytes);
  RpcCall call = make_call(kRpcAlloc);
  put_param(call, 0, bytes);
  return domain_->heap_base() + call_servant(call, nullptr, nullptr).value;
}

void Layer::dealloc(void *ptr) {
  if (ptr == nullptr) return;
  const std::int64_t offset = domain_->heap_offset_of(ptr, 0);
  if (offset < 0) fail_arg("ptr: ", ptr, " is not memory from petacomm_node_alloc");
  RpcCall call = make_call(kRpcDealloc);
  put_param(call, 0, offset);
  call_servant(call, nullptr, nullptr);
}

int Layer::register_rpc(const char *name, petacomm_node_rpc_fn fn, void *user_data) {
  if (name == nullptr || *name == '\0') fail_arg("name: NULL or empty");
  if (fn == nullptr) fail_arg("fn: NULL");
  for (const UserFunction &f : functions_)
    if (f.name == name) fail_arg("name: '", name, "' is registered already");
  functions_.push_back({name, fn, user_data});
  return kRpcFirstUser + static_cast<int>(functions_.size()) - 1;
}

std::int64_t Layer::rpc_call(int id, const void *args, std::int64_t args_bytes, void *result,
                             std::int64_t capacity) {
  if (id < kRpcFirstUser) fail_arg("id: ", id, " is not an id from petacomm_node_rpc_register");
  if (args_bytes < 0) fail_arg("args_bytes: must be >= 0, got ", args_bytes);
  if (args == nullptr && args_bytes > 0) fail_arg("args: NULL with args_bytes = ", args_bytes);
  if (capacity < 0) fail_arg("capacity: must be >= 0, got ", capacity);
  if (result == nullptr && capacity > 0) fail_arg("result: NULL with capacity = ", capacity);
  RpcCall call = make_call(id);
  call.bulk_bytes = args_bytes;
  call.result_capacity = capacity;
  return call_servant(call, args, result).result_bytes;
}

std::int64_t Layer::file_open(const char *path, int flags) {
  if (path == nullptr || *path == '\0') fail_arg("path: NULL or empty");
  const int known = PETACOMM_NODE_FILE_READ | PETACOMM_NODE_FILE_WRITE | PETACOMM_NODE_FILE_CREATE |
                    PETACOMM_NODE_FILE_TRUNCATE;
  if ((flags & ~known) != 0 || !(flags & (PETACOMM_NODE_FILE_READ | PETACOMM_NODE_FILE_WRITE)))
    fail_arg("flags: ", flags, " (expected PETACOMM_NODE_FILE_READ and/or _WRITE, optionally ",
             "_CREATE, _TRUNCATE)");
  RpcCall call = make_call(kRpcFileOpen);
  put_param(call, 0, flags);
  call.bulk_bytes = static_cast<std::int64_t>(std::strlen(path));
  return call_servant(call, path, nullptr).value;
}

void Layer::file_write(std::int64_t file, std::int64_t offset, const void *buf,
                       std::int64_t bytes) {
  check_file_range(offset, bytes);
  if (buf == nullptr && bytes > 0) fail_arg("buf: NULL with bytes = ", bytes);
  RpcCall call = make_call(kRpcFileWrite);
  put_param(call, 0, file);
  put_param(call, 1, offset);
  call.bulk_bytes = bytes;
  call_servant(call, buf, nullptr);
}

std::int64_t Layer::file_read(std::int64_t file, std::int64_t offset, void *buf,
                              std::int64_t bytes) {
  check_file_range(offset, bytes);
  if (buf == nullptr && bytes > 0) fail_arg("buf: NULL with bytes = ", bytes);
  RpcCall call = make_call(kRpcFileRead);
  put_param(call, 0, file);
  put_param(call, 1, offset);
  put_param(call, 2, bytes);
  call.result_capacity = bytes;
  return call_servant(call, nullptr, buf).value;
}

void Layer::file_close(std::int64_t file) {
  RpcCall call = make_call(kRpcFileClose);
  put_param(call, 0, file);
  call_servant(call, nullptr, nullptr);
}

petacomm_node_memory Layer::memory() const {
  petacomm_node_memory m{};
  m.segment_bytes = domain_->segment_bytes();
  m.private_bytes = static_cast<std::int64_t>(
      sizeof(*this) + sizeof(Domain) + domain_->local_size() * (sizeof(int) + sizeof(char *)));
  m.private_bytes += engine_->private_bytes();
  if (gateway_) m.private_bytes += gateway_->private_bytes();
  if (rpc_) m.private_bytes += rpc_->private_bytes();
  if (heap_) m.private_bytes += heap_->bookkeeping_bytes();
  m.heap_bytes = options_.heap_bytes;
  m.heap_used_bytes = heap_ ? heap_->used_bytes() : 0;
  m.rank_map_bytes = domain_->geometry().runs_bytes();
  return m;
}

}  // namespace petacomm::node
