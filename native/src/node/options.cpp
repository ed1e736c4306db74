#include "options.hpp"

#include <cerrno>
#include <cstdlib>

#include "error.hpp"
#include "shm_layout.hpp"

namespace petacomm::node {

petacomm_node_options default_options() {
  petacomm_node_options o{};
  o.node_size = 0;
  o.slots = 8;
  o.slot_bytes = 8192;
  o.descriptors = 16;
  o.coll_bytes = 256 << 10;
  o.heap_bytes = std::int64_t{64} << 20;
  o.aggregate_bytes = 64 << 10;
  o.max_mpi_bytes = std::int64_t{1} << 30;
  return o;
}

petacomm_node_options resolve_options(const petacomm_node_options *opts, std::string &problem) {
  petacomm_node_options o = opts ? *opts : default_options();
  if (o.node_size != 0) return o;
  const char *text = std::getenv("PETACOMM_NODE_SIZE");
  if (text == nullptr || *text == '\0') return o;
  char *end = nullptr;
  errno = 0;
  const long k = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || k < 1 || k > (1L << 30)) {
    problem = concat("PETACOMM_NODE_SIZE: expected a positive integer, got '", text, "'");
  } else {
    o.node_size = static_cast<int>(k);
  }
  return o;
}

std::string check_options(const petacomm_node_options &o) {
  constexpr std::int64_t kMaxSlotBytes = std::int64_t{1} << 30;
  if (o.node_size < 0) return concat("opts.node_size: must be >= 0, got ", o.node_size);
  if (o.slots < 2 || o.slots > 4096)
    return concat("opts.slots: must be in [2, 4096], got ", o.slots);
  if (o.slot_bytes < 2 * kCacheLine || o.slot_bytes > kMaxSlotBytes ||
      o.slot_bytes % kCacheLine != 0)
    return concat("opts.slot_bytes: must be a multiple of 64 in [128, 2^30], got ", o.slot_bytes);
  if (o.descriptors < 1 || o.descriptors > 65536)
    return concat("opts.descriptors: must be in [1, 65536], got ", o.descriptors);
  if (o.coll_bytes < kCacheLine || o.coll_bytes > kMaxSlotBytes || o.coll_bytes % kCacheLine != 0)
    return concat("opts.coll_bytes: must be a multiple of 64 in [64, 2^30], got ", o.coll_bytes);
  if (o.heap_bytes < 0 || o.heap_bytes % kCacheLine != 0 || o.heap_bytes > (std::int64_t{1} << 46))
    return concat("opts.heap_bytes: must be a multiple of 64 in [0, 2^46], got ", o.heap_bytes);
  if (o.aggregate_bytes < 0 || o.aggregate_bytes > kMaxSlotBytes)
    return concat("opts.aggregate_bytes: must be in [0, 2^30], got ", o.aggregate_bytes);
  if (o.max_mpi_bytes < 1 || o.max_mpi_bytes > kMaxSlotBytes)
    return concat("opts.max_mpi_bytes: must be in [1, 2^30], got ", o.max_mpi_bytes);
  return "";
}

std::uint64_t fingerprint(const petacomm_node_options &o) {
  return hash_values({o.node_size, o.slots, o.slot_bytes, o.descriptors, o.coll_bytes, o.heap_bytes,
                      o.aggregate_bytes, o.max_mpi_bytes});
}

std::uint64_t hash_values(std::initializer_list<std::int64_t> values) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::int64_t f : values) {
    h ^= static_cast<std::uint64_t>(f);
    h *= 0x100000001b3ULL;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace petacomm::node
