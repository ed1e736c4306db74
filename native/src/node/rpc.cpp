#include "rpc.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"

namespace petacomm::node {

std::string &rpc_failure_message() {
  thread_local std::string message;
  return message;
}

namespace {

std::int64_t param(const RpcCall &call, int index) {
  PETACOMM_CHECK_INTERNAL((index + 1) * 8 <= call.params_bytes, "RPC ", call.function,
                          " has no parameter ", index);
  std::int64_t v;
  std::memcpy(&v, call.params + index * 8, sizeof v);
  return v;
}

}  // namespace

RpcServer::OpenFile::~OpenFile() {
  if (fd >= 0) close(fd);
}

RpcServer::RpcServer(const Domain &domain, Engine &engine, HeapAllocator &heap,
                     StagingPool &staging, const std::vector<UserFunction> &functions,
                     petacomm_node_counters &counters)
    : domain_(domain),
      engine_(engine),
      heap_(heap),
      staging_(staging),
      functions_(functions),
      counters_(counters) {}

RpcServer::~RpcServer() = default;

Request *RpcServer::claim(const Incoming &in) {
  PETACOMM_CHECK_INTERNAL(in.bytes == static_cast<std::int64_t>(sizeof(RpcCall)), "RPC header of ",
                          in.bytes, " bytes from rank ", in.source);
  auto call = std::make_shared<RpcCall>();
  const int caller = in.source;
  return engine_.post_claimed(call.get(), sizeof(RpcCall), [this, caller, call](Request &) {
    if (call->bulk_bytes <= 0) {
      run(caller, call, nullptr);
      return;
    }
    std::shared_ptr<char> bulk = staging_.get(call->bulk_bytes);
    engine_.post_recv(bulk.get(), call->bulk_bytes, caller, kTagRpcBulk, false,
                      [this, caller, call, bulk](Request &) { run(caller, call, bulk); });
  });
}

void RpcServer::run(int caller, std::shared_ptr<RpcCall> call, std::shared_ptr<char> bulk) {
  std::shared_ptr<char> result;
  auto reply = std::make_shared<RpcReply>();
  try {
    if (call->result_capacity > 0) result = staging_.get(call->result_capacity);
    *reply = execute(*call, bulk.get(), result.get());
  } catch (const std::bad_alloc &) {
    *reply = RpcReply{};
    reply->status = PETACOMM_ERR_NOMEM;
    const char text[] = "the servant could not allocate the result buffer";
    std::memcpy(reply->message, text, sizeof text);
    reply->message_bytes = static_cast<std::int32_t>(sizeof text - 1);
  }
  const int me = domain_.rank();
  engine_.post_send(reply.get(), sizeof(RpcReply), caller, kTagRpcReply, me, false,
                    [reply](Request &) {});
  if (call->result_capacity > 0) {
    engine_.post_send(result.get(), reply->result_bytes, caller, kTagRpcResult, me, false,
                      [result](Request &) {});
  }
  ++counters_.rpc_served;
}

RpcReply RpcServer::execute(const RpcCall &call, const char *bulk, char *result) {
  RpcReply reply{};
  try {
    std::int64_t result_bytes = 0;
    reply.value = dispatch(call, bulk, result, &result_bytes);
    reply.result_bytes = result_bytes;
    reply.status = PETACOMM_SUCCESS;
  } catch (const Error &e) {
    reply.status = e.status();
    const std::size_t n = std::min<std::size_t>(std::strlen(e.what()), kRpcMessageBytes - 1);
    std::memcpy(reply.message, e.what(), n);
    reply.message[n] = '\0';
    reply.message_bytes = static_cast<std::int32_t>(n);
  }
  return reply;
}

std::int64_t RpcServer::dispatch(const RpcCall &call, const char *bulk, char *result,
                                 std::int64_t *result_bytes) {
  switch (call.function) {
    case kRpcAlloc: {
      const std::int64_t bytes = param(call, 0);
      const std::int64_t offset = heap_.allocate(bytes);
      if (offset < 0)
        throw Error(PETACOMM_ERR_NOMEM,
                    concat("bytes: the node heap has no free block of ", bytes,
                           " bytes (largest free block ", heap_.largest_free(), " of ",
                           heap_.capacity(), "; raise petacomm_node_options.heap_bytes)"));
      return offset;
    }
    case kRpcDealloc:
      heap_.release(param(call, 0));
      return 0;
    case kRpcFileOpen:
      return open_file(static_cast<int>(param(call, 0)),
                       std::string(bulk, static_cast<std::size_t>(call.bulk_bytes)));
    case kRpcFileWrite: {
      const std::int64_t handle = param(call, 0), offset = param(call, 1);
      const OpenFile &f = file(handle, PETACOMM_NODE_FILE_WRITE);
      std::int64_t done = 0;
      while (done < call.bulk_bytes) {
        const ssize_t n =
            pwrite(f.fd, bulk + done, static_cast<std::size_t>(call.bulk_bytes - done),
                   static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EFBIG)  // the caller's range, beyond what the file may hold
          fail_arg("offset: writing ", call.bulk_bytes, " bytes at offset ", offset,
                   " goes beyond the largest file allowed here (", std::strerror(errno), "; ", done,
                   " bytes written)");
        if (n <= 0)
          fail_state("file: writing ", call.bulk_bytes, " bytes at offset ", offset,
                     " failed after ", done, ": ", std::strerror(errno));
        done += n;
      }
      return done;
    }
    case kRpcFileRead: {
      const std::int64_t handle = param(call, 0), offset = param(call, 1), want = param(call, 2);
      const OpenFile &f = file(handle, PETACOMM_NODE_FILE_READ);
      PETACOMM_CHECK_INTERNAL(want <= call.result_capacity, "read of ", want, " into ",
                              call.result_capacity);
      std::int64_t done = 0;
      while (done < want) {
        const ssize_t n = pread(f.fd, result + done, static_cast<std::size_t>(want - done),
                                static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
          fail_state("file: reading ", want, " bytes at offset ", offset,
                     " failed: ", std::strerror(errno));
        if (n == 0) break;  // end of file
        done += n;
      }
      *result_bytes = done;
      return done;
    }
    case kRpcFileClose: {
      const std::int64_t handle = param(call, 0);
      if (handles_.erase(handle) == 0)
        fail_arg("file: ", handle, " is not an open file of this node");
      return 0;
    }
    default:
      break;
  }
  const std::int64_t index = call.function - kRpcFirstUser;
  if (index < 0 || index >= static_cast<std::int64_t>(functions_.size()))
    fail_arg("id: ", call.function, " is not an RPC function registered on the servant (rank ",
             domain_.rank(), " has ", functions_.size(), ")");
  const UserFunction &f = functions_[static_cast<std::size_t>(index)];
  rpc_failure_message().clear();
  std::int64_t produced = 0;
  const petacomm_status status =
      f.fn(bulk, call.bulk_bytes, result, call.result_capacity, &produced, f.user_data);
  if (status != PETACOMM_SUCCESS) {
    const std::string &why = rpc_failure_message();
    throw Error(status, concat("rpc '", f.name, "' failed on the servant: ",
                               why.empty() ? std::string("no message") : why));
  }
  if (produced < 0 || produced > call.result_capacity)
    fail_arg("rpc '", f.name, "' reported ", produced, " result bytes for a capacity of ",
             call.result_capacity);
  *result_bytes = produced;
  return produced;
}

std::int64_t RpcServer::open_file(int flags, const std::string &path) {
  const bool rd = flags & PETACOMM_NODE_FILE_READ, wr = flags & PETACOMM_NODE_FILE_WRITE;
  int oflags = rd && wr ? O_RDWR : wr ? O_WRONLY : O_RDONLY;
  if (flags & PETACOMM_NODE_FILE_CREATE) oflags |= O_CREAT;
  const int fd = open(path.c_str(), oflags | O_CLOEXEC, 0644);
  if (fd < 0) fail_arg("path: cannot open '", path, "': ", std::strerror(errno));
  auto f = std::make_shared<OpenFile>();
  f->fd = fd;
  f->flags = flags;
  struct stat st;
  if (fstat(fd, &st) != 0) fail_arg("path: cannot stat '", path, "': ", std::strerror(errno));
  f->id = {st.st_dev, st.st_ino};
  const auto it = by_id_.find(f->id);
  std::shared_ptr<OpenFile> open = it == by_id_.end() ? nullptr : it->second.lock();
  const int access = PETACOMM_NODE_FILE_READ | PETACOMM_NODE_FILE_WRITE;
  if (open && (open->flags & access & flags) == (flags & access)) {
    f = open;  // shared: the new descriptor closes here, the first one stays
  } else {
    if (!open && (flags & PETACOMM_NODE_FILE_TRUNCATE) && ftruncate(fd, 0) != 0)
      fail_arg("path: cannot truncate '", path, "': ", std::strerror(errno));
    by_id_[f->id] = f;
  }
  const std::int64_t handle = next_handle_++;
  handles_[handle] = Handle{f, flags};
  return handle;
}

RpcServer::OpenFile &RpcServer::file(std::int64_t handle, int need) {
  const auto it = handles_.find(handle);
  if (it == handles_.end()) fail_arg("file: ", handle, " is not an open file of this node");
  if (!(it->second.flags & need))
    fail_arg(
        "file: ", handle, " was opened without ",
        need == PETACOMM_NODE_FILE_WRITE ? "PETACOMM_NODE_FILE_WRITE" : "PETACOMM_NODE_FILE_READ");
  return *it->second.file;
}

std::int64_t RpcServer::private_bytes() const {
  return static_cast<std::int64_t>(
      sizeof(*this) + handles_.size() * (sizeof(OpenFile) + sizeof(Handle) + 4 * sizeof(void *)) +
      by_id_.size() * 6 * sizeof(void *));
}

}  // namespace petacomm::node
