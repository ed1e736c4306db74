// The call table: a fixed-size open-addressed hash table keyed by (region, call, size class,
// partner), in the per-rank block (state.hpp). It takes distinct keys up to 7/8 of its
// entries; only beyond that does it overflow, and then events are kept under coarser keys
// (counted per level), never dropped.
#include "handle_table.hpp"
#include "state.hpp"

namespace petacomm::prof {

HotState g_hot;
thread_local int t_depth __attribute__((tls_model("initial-exec"))) = 0;
State g;
std::atomic_flag Lock::flag_ = ATOMIC_FLAG_INIT;

bool table_place(void *memory, uint64_t entries) {
  if (!memory || entries < 16 || (entries & (entries - 1)) != 0) return false;
  g.table = static_cast<Entry *>(memory);
  g.table_mask = entries - 1;
  g.key_capacity = entries / 8 * 7;
  g.coarse_capacity = entries / 16 * 15;
  return true;
}

uint64_t size_class(uint64_t bytes) {
  if (bytes <= g.settings.size_exact_limit) return bytes;
  const int top = 63 - __builtin_clzll(bytes);
  const int shift = top - 3;  // keep the leading bit and 3 more: 8 bins per power of two
  return ((bytes >> shift) << shift) | kSizeBinned;
}

uint64_t size_lower(uint64_t key) {
  if (key == kSizeAll) return 0;
  return key & ~(kSizeBinned | kSizeCoarse);
}

uint64_t size_upper(uint64_t key) {
  if (key == kSizeAll) return ~0ull >> 2;
  const uint64_t lo = size_lower(key);
  if (lo == 0) return 0;
  const int top = 63 - __builtin_clzll(lo);
  if (key & kSizeCoarse) return lo + (1ull << top) - 1;
  if (key & kSizeBinned) return lo + (1ull << (top - 3)) - 1;
  return lo;
}

namespace {

inline void update(Entry *e, uint64_t moved, uint64_t ns, uint64_t count) {
  if (e->count == 0 || ns < e->min_ns) e->min_ns = ns;
  if (ns > e->max_ns) e->max_ns = ns;
  e->bytes += moved;
  e->time_ns += ns;
  e->count += count;  // last: a non-zero count marks the entry as used
}

// The entry of a key: found, or added while the table holds fewer than `limit` keys.
Entry *find(int region, int call, uint64_t size_key, int peer, uint64_t limit) {
  const uint64_t h =
      mix64(size_key ^ (static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 20) ^
            (static_cast<uint64_t>(call) << 44) ^ (static_cast<uint64_t>(region) << 54));
  // At most 15/16 of the entries are ever used: the probe always reaches a free one.
  for (uint64_t s = h & g.table_mask;; s = (s + 1) & g.table_mask) {
    Entry *e = &g.table[s];
    if (e->count == 0) {
      if (g_hot.live->used_keys >= limit) return nullptr;
      e->size_key = size_key;
      e->peer = peer;
      e->call = static_cast<uint16_t>(call);
      e->region = static_cast<uint16_t>(region);
      e->min_ns = 0;
      e->max_ns = 0;
      e->size_max = size_upper(size_key);
      ++g_hot.live->used_keys;
      return e;
    }
    if (e->size_key == size_key && e->peer == peer && e->call == call && e->region == region)
      return e;
  }
}

}  // namespace

void table_add(int region, int call, uint64_t msg_bytes, uint64_t moved, int peer, uint64_t ns,
               uint64_t count) {
  Live &l = *g_hot.live;
  ++l.events;
  Entry *e = find(region, call, size_class(msg_bytes), peer, g.key_capacity);
  if (__builtin_expect(e == nullptr, 0)) {
    // Overflow: coarser keys, counted, never dropped.
    uint64_t coarse = 0;
    if (msg_bytes) coarse = (1ull << (63 - __builtin_clzll(msg_bytes))) | kSizeCoarse;
    e = find(region, call, coarse, peer >= 0 ? kPeerCoarse : peer, g.coarse_capacity);
    if (e) {
      ++l.coarsened_peer;
    } else if ((e = find(region, call, kSizeAll, kPeerCoarse, g.coarse_capacity)) != nullptr) {
      ++l.coarsened_size;
    } else {
      e = &g.fallback[call];
      e->size_key = kSizeAll;
      e->peer = kPeerCoarse;
      e->call = static_cast<uint16_t>(call);
      e->region = kRegionCoarse;
      e->size_max = size_upper(kSizeAll);
      ++l.coarsened_call;
    }
  }
  update(e, moved, ns, count);
}

void record(int call, uint64_t msg_bytes, uint64_t moved_bytes, int peer, uint64_t ns) {
  Lock lock;
  if (peer == kPeerProcNull) msg_bytes = moved_bytes = 0;
  g.last_was_barrier = call == kMPI_Barrier;
  g.last_barrier_ns = ns;
  table_add(g_hot.live->cur_region, call, msg_bytes, moved_bytes, peer, ns, 1);
}

void record_io(int call, uint64_t bytes, uint64_t ns) {
  Lock lock;
  Live &l = *g_hot.live;
  l.io_ns += ns;
  g_hot.regions[l.cur_region].excl_io_ns += ns;
  table_add(l.cur_region, call, bytes, bytes, kPeerNone, ns, 1);
}

}  // namespace petacomm::prof
