#include "buffer.hpp"

#include <cstring>

#include "domain.hpp"

namespace petacomm::node {

Buffer classify(const Domain &domain, const void *data, std::int64_t bytes) {
  Buffer b;
  b.data = static_cast<char *>(const_cast<void *>(data));
  b.bytes = bytes;
  b.heap_offset = data == nullptr ? -1 : domain.heap_offset_of(data, bytes);
  b.space = b.heap_offset >= 0 ? MemorySpace::kHostWindow : MemorySpace::kHostPrivate;
  return b;
}

void move_host(char *dst, const char *src, std::int64_t n) {
  if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n));
}

void move_bytes(const Buffer &dst, std::int64_t dst_at, const Buffer &src, std::int64_t src_at,
                std::int64_t n) {
  // Both host spaces are plain loads and stores for this process.
  move_host(dst.data + dst_at, src.data + src_at, n);
}

}  // namespace petacomm::node
