// The call table: entries keyed by (region, call, size class, partner), in the per-rank block
// (state.hpp). It takes distinct keys up to 7/8 of its entries; only beyond that does it
// overflow, and then events are kept under coarser keys (counted per level), never dropped.
//
// Entries are stored densely, in the order their keys first appeared, and found through a
// separate open-addressed index of 8-byte slots (entry number and 32 bits of the key's hash)
// in private memory: the index of a 4 MiB table is 512 KiB and stays in the CPU's cache, a
// lookup touches the one entry it needs (the hash bits make a slot of another key almost
// never lead to its entry), and a program that repeats a sequence of calls walks its entries
// in order. The block holds only the entries, so the partial logs need no index: a reader
// takes the entries whose count is non-zero.
//
// Programs repeat sequences of calls (an iteration of a solver), so the table also learns,
// for each entry, which entry was recorded after it last time, and fetches that one into
// the cache while the program computes and makes its next MPI call: when the guess is
// right the next record needs neither the index nor a wait for memory, however many keys the
// table holds (a wrong guess costs one comparison).
#include <sys/mman.h>

#include <cstring>

#include "handle_table.hpp"
#include "state.hpp"

namespace petacomm::prof {

HotState g_hot;
__thread int t_depth __attribute__((tls_model("initial-exec"))) = 0;
State g;
std::atomic_flag Lock::flag_ = ATOMIC_FLAG_INIT;

namespace {
// The entry recorded last and the guess for the next one (entry number + 1; 0: none).
uint32_t g_last = 0;
uint32_t g_guess = 0;
uint32_t *g_successor = nullptr;  // per entry: the entry recorded after it last time (+1)

uint64_t private_bytes(uint64_t entries) { return entries * (sizeof(uint64_t) + sizeof(uint32_t)); }
}  // namespace

bool table_place(void *memory, uint64_t entries) {
  if (!memory || entries < 16 || (entries & (entries - 1)) != 0 || entries > (1ull << 31))
    return false;
  if (g.index) munmap(g.index, private_bytes(g.table_mask + 1));
  g.index = nullptr;
  void *index = mmap(nullptr, private_bytes(entries), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (index == MAP_FAILED) return false;
  g.index = static_cast<uint64_t *>(index);
  g_successor = reinterpret_cast<uint32_t *>(g.index + entries);
  g_last = g_guess = 0;
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
  const uint64_t tag = h & 0xffffffff00000000ull;
  // At most 15/16 of the slots are ever used: the probe always reaches a free one.
  for (uint64_t s = h & g.table_mask;; s = (s + 1) & g.table_mask) {
    const uint64_t slot = g.index[s];
    if (slot == 0) {
      const uint64_t used = g_hot.live->used_keys;
      if (used >= limit) return nullptr;
      Entry *e = &g.table[used];
      e->size_key = size_key;
      e->peer = peer;
      e->call = static_cast<uint16_t>(call);
      e->region = static_cast<uint16_t>(region);
      e->min_ns = 0;
      e->max_ns = 0;
      e->size_max = size_upper(size_key);
      g.index[s] = tag | (used + 1);
      g_hot.live->used_keys = used + 1;
      return e;
    }
    if ((slot & 0xffffffff00000000ull) != tag) continue;
    Entry *e = &g.table[(slot & 0xffffffffull) - 1];
    if (e->size_key == size_key && e->peer == peer && e->call == call && e->region == region)
      return e;
  }
}

}  // namespace

void table_add(int region, int call, uint64_t msg_bytes, uint64_t moved, int peer, uint64_t ns,
               uint64_t count) {
  Live &l = *g_hot.live;
  ++l.events;
  const uint64_t size_key = size_class(msg_bytes);
  Entry *e = nullptr;
  if (g_guess) {
    Entry *guess = &g.table[g_guess - 1];
    if (guess->size_key == size_key && guess->peer == peer && guess->call == call &&
        guess->region == region)
      e = guess;
  }
  if (!e) e = find(region, call, size_key, peer, g.key_capacity);
  if (__builtin_expect(e != nullptr, 1)) {
    const auto number = static_cast<uint32_t>(e - g.table) + 1;
    if (g_last) g_successor[g_last - 1] = number;
    g_last = number;
    g_guess = g_successor[number - 1];
    if (g_guess) __builtin_prefetch(&g.table[g_guess - 1], 1);
  } else {
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
    g_last = g_guess = 0;
  }
  update(e, moved, ns, count);
}

void table_add_at(uint32_t site, int region, int call, uint64_t msg_bytes, uint64_t moved, int peer,
                  uint64_t ns) {
  table_add(region, call, msg_bytes, moved, peer, ns, 1);
  if (__builtin_expect(g_hot.callsite_depth != 0, 0)) callsite_add(site, call, moved, ns);
}

void table_reset() {
  std::memset(g.table, 0, (g.table_mask + 1) * sizeof(Entry));
  std::memset(g.fallback, 0, kNumCalls * sizeof(Entry));
  std::memset(g.index, 0, private_bytes(g.table_mask + 1));
  g_last = g_guess = 0;
  g_hot.live->used_keys = 0;
}

void record(int call, uint64_t msg_bytes, uint64_t moved_bytes, int peer, uint64_t ns) {
  Lock lock;
  if (peer == kPeerProcNull) msg_bytes = moved_bytes = 0;
  g.last_was_barrier = call == kMPI_Barrier;
  g.last_barrier_ns = ns;
  table_add_at(t_site, g_hot.live->cur_region, call, msg_bytes, moved_bytes, peer, ns);
}

void record_io(int call, uint64_t bytes, uint64_t ns) {
  Lock lock;
  Live &l = *g_hot.live;
  l.io_ns += ns;
  g_hot.regions[l.cur_region].excl_io_ns += ns;
  table_add(l.cur_region, call, bytes, bytes, kPeerNone, ns, 1);
}

}  // namespace petacomm::prof
