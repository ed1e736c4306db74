#include "heap.hpp"

#include <iterator>

#include "error.hpp"
#include "shm_layout.hpp"

namespace petacomm::node {

HeapAllocator::HeapAllocator(std::int64_t bytes) : capacity_(bytes) {
  if (bytes > 0) free_[0] = bytes;
}

std::int64_t HeapAllocator::allocate(std::int64_t bytes) {
  PETACOMM_CHECK_INTERNAL(bytes >= 0, "allocate(", bytes, ")");
  if (bytes > capacity_) return -1;  // also keeps the rounding below from overflowing
  const std::int64_t size = round_up(bytes > 0 ? bytes : 1, kCacheLine);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const std::int64_t offset = it->first, rest = it->second - size;
    free_.erase(it);
    if (rest > 0) free_[offset + size] = rest;
    allocated_[offset] = size;
    used_ += size;
    return offset;
  }
  return -1;
}

void HeapAllocator::release(std::int64_t offset) {
  const auto it = allocated_.find(offset);
  if (it == allocated_.end())
    fail_arg("ptr: heap offset ", offset, " is not a block from petacomm_node_alloc");
  std::int64_t start = offset, size = it->second;
  used_ -= size;
  allocated_.erase(it);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = size;
}

std::int64_t HeapAllocator::largest_free() const {
  std::int64_t best = 0;
  for (const auto &block : free_) best = block.second > best ? block.second : best;
  return best;
}

std::int64_t HeapAllocator::bookkeeping_bytes() const {
  // A std::map node holds the pair and three pointers plus a colour word.
  constexpr std::int64_t kNode = 2 * sizeof(std::int64_t) + 4 * sizeof(void *);
  return static_cast<std::int64_t>(free_.size() + allocated_.size()) * kNode;
}

}  // namespace petacomm::node

namespace petacomm::node {

StagingPool::StagingPool(char *heap_base, HeapAllocator *heap, std::int64_t budget)
    : base_(heap_base),
      heap_(heap),
      budget_(budget),
      used_(std::make_shared<std::int64_t>(0)),
      private_used_(std::make_shared<std::int64_t>(0)) {}

std::shared_ptr<char> StagingPool::get(std::int64_t bytes) {
  const std::int64_t size = round_up(bytes > 0 ? bytes : 1, kCacheLine);
  if (heap_ != nullptr && *used_ + size <= budget_) {
    const std::int64_t offset = heap_->allocate(size);
    if (offset >= 0) {
      *used_ += size;
      HeapAllocator *heap = heap_;
      std::shared_ptr<std::int64_t> used = used_;
      return std::shared_ptr<char>(base_ + offset, [heap, used, offset, size](char *) {
        heap->release(offset);
        *used -= size;
      });
    }
  }
  *private_used_ += size;
  std::shared_ptr<std::int64_t> counted = private_used_;
  return std::shared_ptr<char>(new char[static_cast<std::size_t>(size)], [counted, size](char *p) {
    delete[] p;
    *counted -= size;
  });
}

}  // namespace petacomm::node
