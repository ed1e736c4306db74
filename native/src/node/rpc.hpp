// RPC to the node's servant (the leader rank): a rank sends a call header (and its bulk
// arguments as a second message), the servant runs the function while it progresses and
// answers with a reply header (and the bulk result as a second message, straight into the
// caller's result buffer). Built-in functions allocate node heap memory and do positional
// file I/O on files the servant holds open for the whole node; user functions are
// registered on every rank in the same order (ids are given in order).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "heap.hpp"

namespace petacomm::node {

enum RpcFunction : std::int32_t {
  kRpcAlloc = 0,      // params {bytes} -> value offset
  kRpcDealloc = 1,    // params {offset}
  kRpcFileOpen = 2,   // params {flags}, bulk path -> value handle
  kRpcFileWrite = 3,  // params {handle, offset}, bulk data -> value bytes written
  kRpcFileRead = 4,   // params {handle, offset, bytes} -> result data, value bytes read
  kRpcFileClose = 5,  // params {handle}
  kRpcFirstUser = 16,
};

constexpr int kRpcParamBytes = 224;
constexpr int kRpcMessageBytes = 224;

struct RpcCall {
  std::int32_t function;
  std::int32_t params_bytes;
  std::int64_t bulk_bytes;       // a second message (kTagRpcBulk) carries them
  std::int64_t result_capacity;  // > 0: the caller waits for a result message (kTagRpcResult)
  std::int64_t unused;
  char params[kRpcParamBytes];
};
struct RpcReply {
  std::int32_t status;
  std::int32_t message_bytes;
  std::int64_t result_bytes;
  std::int64_t value;
  std::int64_t unused;
  char message[kRpcMessageBytes];
};
static_assert(sizeof(RpcCall) == 256 && sizeof(RpcReply) == 256, "RPC header layout");

struct UserFunction {
  std::string name;
  petacomm_node_rpc_fn fn;
  void *user_data;
};

class RpcServer {
 public:
  RpcServer(const Domain &domain, Engine &engine, HeapAllocator &heap, StagingPool &staging,
            const std::vector<UserFunction> &functions, petacomm_node_counters &counters);
  ~RpcServer();
  RpcServer(const RpcServer &) = delete;
  RpcServer &operator=(const RpcServer &) = delete;

  // An arriving call header: receive it, then its bulk arguments, then run and answer.
  Request *claim(const Incoming &in);
  // Runs a call (the servant's own calls come here directly). Errors are in the reply.
  RpcReply execute(const RpcCall &call, const char *bulk, char *result);

  std::int64_t open_files() const { return static_cast<std::int64_t>(handles_.size()); }
  std::int64_t private_bytes() const;

 private:
  struct OpenFile {
    int fd = -1;
    int flags = 0;  // of the open that created the descriptor
    std::pair<dev_t, ino_t> id;
    ~OpenFile();
  };
  void run(int caller, std::shared_ptr<RpcCall> call, std::shared_ptr<char> bulk);
  std::int64_t dispatch(const RpcCall &call, const char *bulk, char *result,
                        std::int64_t *result_bytes);
  std::int64_t open_file(int flags, const std::string &path);
  OpenFile &file(std::int64_t handle, int need);

  const Domain &domain_;
  Engine &engine_;
  HeapAllocator &heap_;
  StagingPool &staging_;
  const std::vector<UserFunction> &functions_;
  petacomm_node_counters &counters_;
  std::int64_t next_handle_ = 1;
  struct Handle {
    std::shared_ptr<OpenFile> file;
    int flags;  // what this handle may do (its open's flags)
  };
  std::unordered_map<std::int64_t, Handle> handles_;
  std::map<std::pair<dev_t, ino_t>, std::weak_ptr<OpenFile>> by_id_;
};

// Set by petacomm_node_rpc_fail inside a user function; read by the servant.
std::string &rpc_failure_message();

}  // namespace petacomm::node
