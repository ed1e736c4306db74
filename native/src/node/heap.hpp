// The node heap's allocator. It runs on the servant only (allocation is an RPC, as in the
// study: accelerators ask their host for memory), so its bookkeeping is private to one
// process; the memory itself is in the window and every rank of the node maps it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

namespace petacomm::node {

class HeapAllocator {
 public:
  explicit HeapAllocator(std::int64_t bytes);
  // Offset of a 64-byte aligned block of at least `bytes` (0 is allowed), or -1 if no free
  // block is large enough. First fit.
  std::int64_t allocate(std::int64_t bytes);
  // Returns a block; fail_arg if `offset` is not the start of an allocated block.
  void release(std::int64_t offset);
  std::int64_t used_bytes() const { return used_; }
  std::int64_t largest_free() const;
  std::int64_t capacity() const { return capacity_; }
  std::int64_t bookkeeping_bytes() const;

 private:
  std::int64_t capacity_, used_ = 0;
  std::map<std::int64_t, std::int64_t> free_;       // offset -> size, coalesced
  std::map<std::int64_t, std::int64_t> allocated_;  // offset -> size
};

}  // namespace petacomm::node

namespace petacomm::node {

// Buffers the leader (gateway and servant) holds data in while it passes through: in the
// node heap when it fits within the budget (then local ranks read or write them in one
// copy), else private memory. The memory returns when the last reference goes.
class StagingPool {
 public:
  StagingPool(char *heap_base, HeapAllocator *heap, std::int64_t budget);
  std::shared_ptr<char> get(std::int64_t bytes);
  std::int64_t heap_bytes_used() const { return *used_; }
  std::int64_t private_bytes_used() const { return *private_used_; }

 private:
  char *base_;
  HeapAllocator *heap_;
  std::int64_t budget_;
  std::shared_ptr<std::int64_t> used_, private_used_;
};

}  // namespace petacomm::node
