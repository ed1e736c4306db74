// The recording side of the profiler: the fixed-size call table, regions, the
// communicator/window translation caches and the request table.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "fortran.hpp"
#include "state.hpp"

namespace petacomm::prof {

HotState g_hot;
TscScale g_tsc = {0, 0, 0};
thread_local int t_depth __attribute__((tls_model("initial-exec"))) = 0;
State g;
std::atomic_flag Lock::flag_ = ATOMIC_FLAG_INIT;

// ---------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------

namespace {

uint64_t parse_bytes(const char *text, uint64_t fallback, const char *name) {
  if (!text || !*text) return fallback;
  char *end = nullptr;
  const double value = std::strtod(text, &end);
  uint64_t scale = 1;
  if (end && *end) {
    switch (*end) {
      case 'k':
      case 'K':
        scale = 1ull << 10;
        break;
      case 'm':
      case 'M':
        scale = 1ull << 20;
        break;
      case 'g':
      case 'G':
        scale = 1ull << 30;
        break;
      default:
        scale = 0;
    }
  }
  if (end == text || scale == 0 || value < 0) {
    std::fprintf(stderr, "petacomm-prof: %s='%s' is not a size (e.g. 4M); using %llu\n", name, text,
                 static_cast<unsigned long long>(fallback));
    return fallback;
  }
  return static_cast<uint64_t>(value * static_cast<double>(scale));
}

bool kind_matches(const char *token, const char *kind, const char *name) {
  if (std::strcmp(token, "all") == 0) return true;
  if (std::strcmp(token, name) == 0 || std::strcmp(token, kind) == 0) return true;
  if (std::strcmp(token, "p2p") == 0)
    return !std::strcmp(kind, "send") || !std::strcmp(kind, "recv") ||
           !std::strcmp(kind, "sendrecv") || !std::strcmp(kind, "probe");
  if (std::strcmp(token, "rma") == 0) return std::strncmp(kind, "rma_", 4) == 0;
  if (std::strcmp(token, "io") == 0) return std::strncmp(kind, "io_", 3) == 0;
  if (std::strcmp(token, "mpi") == 0) return std::strcmp(kind, "posix") != 0;
  return false;
}

}  // namespace

void set_enabled_calls(const char *wrap) {
  // Tokens in order; "-token" removes. An initial removal starts from "all".
  char buf[sizeof(g.settings.wrap)];
  std::snprintf(buf, sizeof(buf), "%s", (wrap && *wrap) ? wrap : "all");
  bool first = true;
  for (char *save = nullptr, *tok = strtok_r(buf, ", ", &save); tok;
       tok = strtok_r(nullptr, ", ", &save)) {
    const bool remove = tok[0] == '-';
    const char *name = remove ? tok + 1 : tok;
    if (first) {
      std::memset(g_hot.enabled, remove ? 1 : 0, sizeof(g_hot.enabled));
      first = false;
    }
    bool any = false;
    for (int c = 0; c < kNumCalls; ++c) {
      if (kind_matches(name, kCallKinds[c], kCallNames[c])) {
        g_hot.enabled[c] = remove ? 0 : 1;
        any = true;
      }
    }
    if (!any && g.world_rank == 0)
      std::fprintf(stderr, "petacomm-prof: PETACOMM_PROF_WRAP: '%s' names no call or kind\n", name);
  }
  if (first) std::memset(g_hot.enabled, 1, sizeof(g_hot.enabled));
  // Activations of persistent requests follow their *_init call.
  for (int c = 0; c < kNumCalls; ++c) {
    const char *colon = std::strchr(kCallNames[c], ':');
    if (!colon) continue;
    for (int d = 0; d < kNumCalls; ++d) {
      if (std::strncmp(kCallNames[d], kCallNames[c], colon - kCallNames[c]) == 0 &&
          kCallNames[d][colon - kCallNames[c]] == '\0')
        g_hot.enabled[c] = g_hot.enabled[d];
    }
  }
}

bool parse_settings() {
  Settings &s = g.settings;
  const char *disable = std::getenv("PETACOMM_PROF_DISABLE");
  if (disable && *disable && std::strcmp(disable, "0") != 0) return false;
  const char *out = std::getenv("PETACOMM_PROF_OUTPUT");
  std::snprintf(s.output, sizeof(s.output), "%s", out ? out : "");
  s.table_bytes =
      parse_bytes(std::getenv("PETACOMM_PROF_TABLE_SIZE"), 4ull << 20, "PETACOMM_PROF_TABLE_SIZE");
  if (s.table_bytes < 16 * sizeof(Entry)) s.table_bytes = 16 * sizeof(Entry);
  s.size_exact_limit =
      parse_bytes(std::getenv("PETACOMM_PROF_SIZE_EXACT"), 4096, "PETACOMM_PROF_SIZE_EXACT");
  s.request_slots =
      parse_bytes(std::getenv("PETACOMM_PROF_REQUESTS"), 16384, "PETACOMM_PROF_REQUESTS");
  if (s.request_slots < 16) s.request_slots = 16;
  const char *interval = std::getenv("PETACOMM_PROF_PARTIAL_INTERVAL");
  s.partial_interval_s = interval ? std::strtoull(interval, nullptr, 10) : 0;
  const char *detail = std::getenv("PETACOMM_PROF_DETAIL");
  s.detail = 1;
  if (detail && std::strcmp(detail, "summary") == 0) s.detail = 0;
  if (detail && std::strcmp(detail, "full") == 0) s.detail = 2;
  const char *banner = std::getenv("PETACOMM_PROF_BANNER");
  s.banner = !(banner && std::strcmp(banner, "0") == 0);
  const char *lbst = std::getenv("PETACOMM_PROF_LBST_BARRIER");
  s.lbst_barrier = lbst && std::strcmp(lbst, "1") == 0;
  const char *io = std::getenv("PETACOMM_PROF_IO");
  s.io_mode = 1;
  if (io && std::strcmp(io, "off") == 0) s.io_mode = 0;
  if (io && std::strcmp(io, "all") == 0) s.io_mode = 2;
  const char *wrap = std::getenv("PETACOMM_PROF_WRAP");
  std::snprintf(s.wrap, sizeof(s.wrap), "%s", wrap && *wrap ? wrap : "all");
  set_enabled_calls(s.wrap);
  return true;
}

// ---------------------------------------------------------------------------------------
// Clock
// ---------------------------------------------------------------------------------------

void clock_calibrate() {
#if defined(__x86_64__)
  // Invariant TSC (CPUID 0x80000007, EDX bit 8): constant rate, runs in every C-state.
  unsigned eax = 0x80000000u, ebx = 0, ecx = 0, edx = 0;
  __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx));
  if (eax < 0x80000007u) return;
  eax = 0x80000007u;
  __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx));
  if (!(edx & (1u << 8))) return;
  const char *off = std::getenv("PETACOMM_PROF_TSC");
  if (off && std::strcmp(off, "0") == 0) return;
  const uint64_t t0 = __builtin_ia32_rdtsc(), n0 = monotonic_ns();
  uint64_t t1 = t0, n1 = n0;
  while (n1 - n0 < 4000000) {  // 4 ms: the scale is good to about 1e-5
    n1 = monotonic_ns();
    t1 = __builtin_ia32_rdtsc();
  }
  if (t1 <= t0) return;
  const unsigned __int128 scaled = static_cast<unsigned __int128>(n1 - n0) << 32;
  g_tsc.tsc0 = t1;
  g_tsc.ns0 = n1;
  g_tsc.mult = static_cast<uint64_t>(scaled / (t1 - t0));
#endif
}

// ---------------------------------------------------------------------------------------
// The call table
// ---------------------------------------------------------------------------------------

bool table_init() {
  uint64_t n = 1;
  while (n * 2 * sizeof(Entry) <= g.settings.table_bytes) n *= 2;
  g.table = static_cast<Entry *>(std::calloc(n, sizeof(Entry)));
  g.fallback = static_cast<Entry *>(std::calloc(kNumCalls, sizeof(Entry)));
  if (!g.table || !g.fallback) return false;
  g.table_mask = n - 1;
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

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

inline void update(Entry *e, uint64_t moved, uint64_t ns, uint64_t count) {
  if (e->count == 0 || ns < e->min_ns) e->min_ns = ns;
  if (ns > e->max_ns) e->max_ns = ns;
  e->bytes += moved;
  e->time_ns += ns;
  e->count += count;  // last: a non-zero count marks the entry as used
}

Entry *find(int region, int call, uint64_t size_key, int peer) {
  const uint64_t h =
      mix(size_key ^ (static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 20) ^
          (static_cast<uint64_t>(call) << 44) ^ (static_cast<uint64_t>(region) << 54));
  const uint64_t probes = g.table_mask + 1 < kMaxProbe ? g.table_mask + 1 : kMaxProbe;
  for (uint64_t probe = 0; probe < probes; ++probe) {
    Entry *e = &g.table[(h + probe) & g.table_mask];
    if (e->count == 0) {
      e->size_key = size_key;
      e->peer = peer;
      e->call = static_cast<uint16_t>(call);
      e->region = static_cast<uint16_t>(region);
      e->min_ns = 0;
      e->max_ns = 0;
      return e;
    }
    if (e->size_key == size_key && e->peer == peer && e->call == call && e->region == region)
      return e;
  }
  return nullptr;
}

}  // namespace

void table_add(int region, int call, uint64_t msg_bytes, uint64_t moved, int peer, uint64_t ns,
               uint64_t count) {
  ++g.events;
  Entry *e = find(region, call, size_class(msg_bytes), peer);
  if (__builtin_expect(e == nullptr, 0)) {
    // Overflow: coarser keys, counted, never dropped.
    uint64_t coarse = 0;
    if (msg_bytes) coarse = (1ull << (63 - __builtin_clzll(msg_bytes))) | kSizeCoarse;
    e = find(region, call, coarse, peer >= 0 ? kPeerCoarse : peer);
    if (e) {
      ++g.coarsened[0];
    } else if ((e = find(region, call, kSizeAll, kPeerCoarse)) != nullptr) {
      ++g.coarsened[1];
    } else {
      e = &g.fallback[call];
      e->size_key = kSizeAll;
      e->peer = kPeerCoarse;
      e->call = static_cast<uint16_t>(call);
      e->region = 0xffff;
      ++g.coarsened[2];
    }
  }
  update(e, moved, ns, count);
}

void record(int call, uint64_t msg_bytes, uint64_t moved_bytes, int peer, uint64_t ns) {
  Lock lock;
  if (peer == kPeerProcNull) msg_bytes = moved_bytes = 0;
  g.mpi_ns += ns;
  g.regions[g.cur_region].excl_mpi_ns += ns;
  g.last_was_barrier = call == kMPI_Barrier;
  g.last_barrier_ns = ns;
  table_add(g.cur_region, call, msg_bytes, moved_bytes, peer, ns, 1);
}

void record_io(int call, uint64_t bytes, uint64_t ns) {
  Lock lock;
  g.io_ns += ns;
  g.regions[g.cur_region].excl_io_ns += ns;
  table_add(g.cur_region, call, bytes, bytes, kPeerNone, ns, 1);
}

// ---------------------------------------------------------------------------------------
// Regions
// ---------------------------------------------------------------------------------------

int region_lookup(const char *name) {
  for (int r = 0; r < g.nregions; ++r)
    if (std::strncmp(g.regions[r].name, name, kRegionNameMax - 1) == 0) return r;
  if (g.nregions >= kMaxRegions) return -1;
  Region &reg = g.regions[g.nregions];
  std::memset(&reg, 0, sizeof(reg));
  std::snprintf(reg.name, sizeof(reg.name), "%s", name);
  reg.parent = g.depth > 0 ? g.stack[g.depth - 1] : -1;
  return g.nregions++;
}

namespace {

void open_region(int r, uint64_t now) {
  Region &reg = g.regions[r];
  if (reg.open_depth++ == 0) {
    reg.open_t = now;
    reg.open_mpi = g.mpi_ns;
    reg.open_io = g.io_ns;
  }
  ++reg.entries;
}

void close_region(int r, uint64_t now) {
  Region &reg = g.regions[r];
  if (--reg.open_depth == 0) {
    reg.wall_ns += now - reg.open_t;
    reg.mpi_ns += g.mpi_ns - reg.open_mpi;
    reg.io_ns += g.io_ns - reg.open_io;
  }
}

void switch_innermost(uint64_t now) {
  g.regions[g.cur_region].excl_wall_ns += now - g.excl_mark;
  g.excl_mark = now;
}

}  // namespace

void region_begin(const char *name) {
  Lock lock;
  const uint64_t now = now_ns();
  const int r = region_lookup(name);
  if (r < 0 || g.depth >= kMaxRegionDepth) {
    ++g.region_errors;
    return;
  }
  switch_innermost(now);
  g.stack[g.depth++] = r;
  g.cur_region = r;
  g.last_was_barrier = false;
  open_region(r, now);
}

void region_end(const char *name) {
  // Optionally make the barrier that measures load imbalance ourselves.
  if (g.settings.lbst_barrier && g.depth > 1) {
    const uint64_t t0 = now_ns();
    PMPI_Barrier(g.comm);
    record(kMPI_Barrier, 0, 0, kPeerNone, now_ns() - t0);
  }
  Lock lock;
  const uint64_t now = now_ns();
  int at = -1;
  for (int d = g.depth - 1; d >= 1; --d) {
    if (std::strncmp(g.regions[g.stack[d]].name, name, kRegionNameMax - 1) == 0) {
      at = d;
      break;
    }
  }
  if (at < 0) {
    ++g.region_errors;  // closing a region that is not open
    return;
  }
  if (at != g.depth - 1) ++g.region_errors;  // regions closed out of order: close inner ones
  switch_innermost(now);
  if (g.last_was_barrier && at == g.depth - 1) g.regions[g.stack[at]].lbst_ns += g.last_barrier_ns;
  g.last_was_barrier = false;
  while (g.depth > at) close_region(g.stack[--g.depth], now);
  g.cur_region = g.stack[g.depth - 1];
}

void regions_close_all(uint64_t now) {
  Lock lock;
  switch_innermost(now);
  if (g.last_was_barrier && g.depth >= 1)
    g.regions[g.stack[g.depth - 1]].lbst_ns += g.last_barrier_ns;
  while (g.depth > 0) close_region(g.stack[--g.depth], now);
  g.cur_region = 0;
}

// ---------------------------------------------------------------------------------------
// Communicator and window caches: world ranks computed once, at creation.
// ---------------------------------------------------------------------------------------

namespace {

struct HandleInfo {
  uintptr_t key;
  int size;       // local size
  int rank;       // own rank
  int peers;      // ranks that partner arguments refer to (remote size for intercomms)
  int outdeg;     // neighbourhood out-degree, -1 when not a topology communicator
  bool identity;  // partner rank == world rank
  int *world;     // partner rank -> world rank (null when identity)
  MPI_Comm comm;  // for messages: the communicator
};

constexpr int kCacheSlots = 2048;
constexpr uintptr_t kEmpty = 0;

struct Cache {
  HandleInfo slots[kCacheSlots];
  uint64_t misses;
};
Cache *g_comms = nullptr;
Cache *g_wins = nullptr;
Cache *g_msgs = nullptr;

template <typename H>
uintptr_t key_of(H handle) {
  if constexpr (sizeof(H) <= sizeof(uintptr_t)) {
    uintptr_t k = 0;
    std::memcpy(&k, &handle, sizeof(H));
    return k ^ 0x9e3779b97f4a7c15ull;  // never 0 for real handles
  } else {
    return 0;
  }
}

inline int slot_of(uintptr_t key) { return static_cast<int>(mix(key) % kCacheSlots); }

HandleInfo *cache_find(Cache *c, uintptr_t key) {
  if (!c) return nullptr;
  for (int i = 0, s = slot_of(key); i < kCacheSlots; ++i, s = (s + 1) % kCacheSlots) {
    if (c->slots[s].key == key) return &c->slots[s];
    if (c->slots[s].key == kEmpty) return nullptr;
  }
  return nullptr;
}

HandleInfo *cache_insert(Cache *c, uintptr_t key) {
  if (!c) return nullptr;
  for (int i = 0, s = slot_of(key); i < kCacheSlots * 3 / 4; ++i, s = (s + 1) % kCacheSlots) {
    if (c->slots[s].key == kEmpty || c->slots[s].key == key) {
      HandleInfo *h = &c->slots[s];
      if (h->key == key) std::free(h->world);
      std::memset(h, 0, sizeof(*h));
      h->key = key;
      return h;
    }
  }
  ++c->misses;
  return nullptr;
}

// Backward-shift deletion keeps probe chains intact without tombstones.
void cache_erase(Cache *c, uintptr_t key) {
  if (!c) return;
  int s = slot_of(key), i = 0;
  for (; i < kCacheSlots; ++i, s = (s + 1) % kCacheSlots) {
    if (c->slots[s].key == key) break;
    if (c->slots[s].key == kEmpty) return;
  }
  if (i == kCacheSlots) return;
  std::free(c->slots[s].world);
  int hole = s;
  for (int j = (hole + 1) % kCacheSlots; c->slots[j].key != kEmpty; j = (j + 1) % kCacheSlots) {
    const int home = slot_of(c->slots[j].key);
    const bool movable = (hole <= j) ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      c->slots[hole] = c->slots[j];
      hole = j;
    }
  }
  std::memset(&c->slots[hole], 0, sizeof(HandleInfo));
}

// Fills `info` from a group of partner ranks; world translation once.
void describe_group(HandleInfo *info, MPI_Group group, bool maybe_identity) {
  int n = 0;
  PMPI_Group_size(group, &n);
  info->peers = n;
  if (maybe_identity && n == g.world_size) {
    int result = MPI_UNEQUAL;
    PMPI_Group_compare(group, g.world_group, &result);
    if (result == MPI_IDENT) {
      info->identity = true;
      return;
    }
  }
  int *seq = static_cast<int *>(std::malloc(sizeof(int) * (n > 0 ? n : 1)));
  info->world = static_cast<int *>(std::malloc(sizeof(int) * (n > 0 ? n : 1)));
  if (!seq || !info->world) {
    std::free(seq);
    std::free(info->world);
    info->world = nullptr;
    info->peers = 0;
    return;
  }
  for (int i = 0; i < n; ++i) seq[i] = i;
  PMPI_Group_translate_ranks(group, n, seq, g.world_group, info->world);
  for (int i = 0; i < n; ++i)
    if (info->world[i] == MPI_UNDEFINED) info->world[i] = kPeerOutside;
  std::free(seq);
}

void describe_comm(HandleInfo *info, MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  PMPI_Comm_size(comm, &info->size);
  PMPI_Comm_rank(comm, &info->rank);
  info->outdeg = -1;
  MPI_Group group;
  if (inter) {
    PMPI_Comm_remote_group(comm, &group);
  } else {
    PMPI_Comm_group(comm, &group);
    int topo = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
      int ndims = 0;
      PMPI_Cartdim_get(comm, &ndims);
      info->outdeg = 2 * ndims;
    } else if (topo == MPI_GRAPH) {
      int nn = 0;
      PMPI_Graph_neighbors_count(comm, info->rank, &nn);
      info->outdeg = nn;
    } else if (topo == MPI_DIST_GRAPH) {
      int indeg = 0, outd = 0, weighted = 0;
      PMPI_Dist_graph_neighbors_count(comm, &indeg, &outd, &weighted);
      info->outdeg = outd;
    }
  }
  describe_group(info, group, !inter);
  PMPI_Group_free(&group);
}

HandleInfo *comm_info(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  const uintptr_t key = key_of(comm);
  HandleInfo *info = cache_find(g_comms, key);
  if (info) return info;
  // Not seen at creation (made before MPI_Init returned, by MPI_Comm_idup, or the cache
  // was full): describe it now, once.
  info = cache_insert(g_comms, key);
  if (!info) return nullptr;
  describe_comm(info, comm);
  info->comm = comm;
  return info;
}

// A stack copy for the rare case the cache is full (no caching possible).
thread_local HandleInfo t_uncached;

HandleInfo *comm_info_any(MPI_Comm comm) {
  HandleInfo *info = comm_info(comm);
  if (info || comm == MPI_COMM_NULL) return info;
  std::free(t_uncached.world);
  std::memset(&t_uncached, 0, sizeof(t_uncached));
  describe_comm(&t_uncached, comm);
  return &t_uncached;
}

inline int translate(const HandleInfo *info, int rank) {
  if (!info) return kPeerOutside;
  if (info->identity) return rank;
  if (!info->world || rank >= info->peers) return kPeerOutside;
  return info->world[rank];
}

inline int special_rank(int rank) {
  if (rank == MPI_PROC_NULL) return kPeerProcNull;
  if (rank == MPI_ANY_SOURCE) return kPeerAny;
  return kPeerNone;
}

}  // namespace

void caches_init() {
  g_comms = static_cast<Cache *>(std::calloc(1, sizeof(Cache)));
  g_wins = static_cast<Cache *>(std::calloc(1, sizeof(Cache)));
  g_msgs = static_cast<Cache *>(std::calloc(1, sizeof(Cache)));
}

void comm_created(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  Lock lock;
  HandleInfo *info = cache_insert(g_comms, key_of(comm));
  if (!info) return;
  describe_comm(info, comm);
  info->comm = comm;
}

void comm_freeing(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  Lock lock;
  cache_erase(g_comms, key_of(comm));
}

void win_created(MPI_Win win, MPI_Comm) {
  if (win == MPI_WIN_NULL) return;
  Lock lock;
  HandleInfo *info = cache_insert(g_wins, key_of(win));
  if (!info) return;
  MPI_Group group;
  if (PMPI_Win_get_group(win, &group) != MPI_SUCCESS) return;
  describe_group(info, group, true);
  PMPI_Group_free(&group);
}

void win_freeing(MPI_Win win) {
  if (win == MPI_WIN_NULL) return;
  Lock lock;
  cache_erase(g_wins, key_of(win));
}

void message_matched(MPI_Message message, MPI_Comm comm) {
  if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC) return;
  Lock lock;
  HandleInfo *info = cache_insert(g_msgs, key_of(message));
  if (info) info->comm = comm;
}

MPI_Comm message_comm(MPI_Message message) {
  if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC) return MPI_COMM_NULL;
  Lock lock;
  const uintptr_t key = key_of(message);
  HandleInfo *info = cache_find(g_msgs, key);
  if (!info) return MPI_COMM_NULL;
  const MPI_Comm comm = info->comm;
  cache_erase(g_msgs, key);
  return comm;
}

int peer_comm(MPI_Comm comm, int rank) {
  if (rank < 0) return special_rank(rank);
  if (comm == MPI_COMM_WORLD) return rank;
  Lock lock;
  return translate(comm_info_any(comm), rank);
}

int peer_root(MPI_Comm comm, int root) {
  if (root < 0) return root == MPI_PROC_NULL ? kPeerProcNull : kPeerNone;  // MPI_ROOT
  return peer_comm(comm, root);
}

int peer_win(MPI_Win win, int rank) {
  if (rank < 0) return special_rank(rank);
  Lock lock;
  const HandleInfo *info = cache_find(g_wins, key_of(win));
  if (!info) {
    // Window created before the profiler started: describe it now.
    HandleInfo *fresh = cache_insert(g_wins, key_of(win));
    MPI_Group group;
    if (!fresh || PMPI_Win_get_group(win, &group) != MPI_SUCCESS) return kPeerOutside;
    describe_group(fresh, group, true);
    PMPI_Group_free(&group);
    info = fresh;
  }
  return translate(info, rank);
}

int peer_status(MPI_Comm comm, const MPI_Status *status, int source) {
  if (status && status != MPI_STATUS_IGNORE) {
    if (status->MPI_SOURCE == MPI_PROC_NULL) return kPeerProcNull;
    if (status->MPI_SOURCE >= 0) {
      if (comm == MPI_COMM_NULL) return kPeerAny;
      return peer_comm(comm, status->MPI_SOURCE);
    }
  }
  if (comm == MPI_COMM_NULL) return kPeerAny;
  return peer_comm(comm, source);
}

// ---------------------------------------------------------------------------------------
// Byte counts
// ---------------------------------------------------------------------------------------

uint64_t tsz(MPI_Count count, MPI_Datatype type) {
  if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  MPI_Count size = 0;
  if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size <= 0 || size == MPI_UNDEFINED) return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

uint64_t tsz_sum(const int *counts, int n, MPI_Datatype type) {
  if (!counts || n <= 0) return 0;
  int64_t total = 0;
  for (int i = 0; i < n; ++i)
    if (counts[i] > 0) total += counts[i];
  return tsz(total, type);
}

uint64_t tsz_at(const int *counts, int index, MPI_Datatype type) {
  if (!counts || index < 0) return 0;
  return tsz(counts[index], type);
}

uint64_t tsz_w(const int *counts, const MPI_Datatype *types, int n) {
  if (!counts || !types || n <= 0) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += tsz(counts[i], types[i]);
  return total;
}

uint64_t tsz_wf(const int *counts, const MPI_Fint *types, int n) {
  if (!counts || !types || n <= 0) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i)
    if (counts[i] > 0) total += tsz(counts[i], PMPI_Type_f2c(types[i]));
  return total;
}

uint64_t status_bytes(const MPI_Status *status) {
  if (!status || status == MPI_STATUS_IGNORE) return 0;
  if (status->MPI_SOURCE == MPI_PROC_NULL) return 0;
  MPI_Count n = 0;
  if (PMPI_Get_elements_x(status, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0)
    return 0;
  return static_cast<uint64_t>(n);
}

int npeers(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return g.world_size;
  Lock lock;
  const HandleInfo *info = comm_info_any(comm);
  return info ? info->peers : 0;
}

int commsize(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return g.world_size;
  Lock lock;
  const HandleInfo *info = comm_info_any(comm);
  return info ? info->size : 0;
}

int myrank(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return g.world_rank;
  Lock lock;
  const HandleInfo *info = comm_info_any(comm);
  return info ? info->rank : -1;
}

int outdeg(MPI_Comm comm) {
  Lock lock;
  const HandleInfo *info = comm_info_any(comm);
  return info && info->outdeg > 0 ? info->outdeg : 0;
}

// ---------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------

namespace {

RequestInfo *g_reqs = nullptr;
uint64_t g_req_mask = 0;

inline uint64_t req_home(uintptr_t key) { return mix(key) & g_req_mask; }

RequestInfo *req_find(uintptr_t key) {
  if (!g_reqs) return nullptr;
  for (uint64_t i = 0, s = req_home(key); i <= g_req_mask; ++i, s = (s + 1) & g_req_mask) {
    if (g_reqs[s].key == key) return &g_reqs[s];
    if (g_reqs[s].key == kEmpty) return nullptr;
  }
  return nullptr;
}

void req_erase(uintptr_t key) {
  if (!g_reqs) return;
  uint64_t s = req_home(key), i = 0;
  for (; i <= g_req_mask; ++i, s = (s + 1) & g_req_mask) {
    if (g_reqs[s].key == key) break;
    if (g_reqs[s].key == kEmpty) return;
  }
  if (i > g_req_mask) return;
  uint64_t hole = s;
  for (uint64_t j = (hole + 1) & g_req_mask; g_reqs[j].key != kEmpty; j = (j + 1) & g_req_mask) {
    const uint64_t home = req_home(g_reqs[j].key);
    const bool movable = (hole <= j) ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      g_reqs[hole] = g_reqs[j];
      hole = j;
    }
  }
  std::memset(&g_reqs[hole], 0, sizeof(RequestInfo));
}

// Records one completed transfer of a tracked request.
void finish(const RequestInfo &info, const MPI_Status *status) {
  uint64_t bytes = info.bytes;
  int peer = info.peer;
  if ((info.flags & kReqRecv) && status && status != MPI_STATUS_IGNORE) {
    bytes = status_bytes(status);
    peer = peer_status(info.comm, status, MPI_ANY_SOURCE);
    if (peer == kPeerAny) peer = info.peer;
  }
  Lock lock;
  if (peer == kPeerProcNull) bytes = 0;
  if (info.flags & kReqPersistent) {
    RequestInfo *live = req_find(info.key);
    if (live) live->active = 0;
    if (info.active && info.start_call >= 0)
      table_add(info.region, info.start_call, bytes, bytes, peer, 0, 1);
    return;
  }
  req_erase(info.key);
  table_add(info.region, info.call, bytes, bytes, peer, info.post_ns, 1);
}

}  // namespace

bool requests_init() {
  uint64_t n = 16;
  while (n < g.settings.request_slots) n *= 2;
  g_reqs = static_cast<RequestInfo *>(std::calloc(n, sizeof(RequestInfo)));
  if (!g_reqs) return false;
  g_req_mask = n - 1;
  return true;
}

void request_posted(int call, int start_call, MPI_Request request, uint64_t bytes, int peer,
                    uint64_t post_ns, unsigned flags, MPI_Comm comm) {
  Lock lock;
  g.mpi_ns += post_ns;
  g.regions[g.cur_region].excl_mpi_ns += post_ns;
  g.last_was_barrier = false;
  if (peer == kPeerProcNull) bytes = 0;
  if (flags & kReqPersistent) {
    // The *_init call itself moves nothing: counted now, with its message size.
    table_add(g.cur_region, call, bytes, 0, peer, post_ns, 1);
  }
  if (request == MPI_REQUEST_NULL) {
    if (!(flags & kReqPersistent)) table_add(g.cur_region, call, bytes, bytes, peer, post_ns, 1);
    return;
  }
  const uintptr_t key = key_of(request);
  // Load factor at most 3/4: beyond, record at posting time with what is known then.
  uint64_t used = 0;
  RequestInfo *slot = nullptr;
  for (uint64_t i = 0, s = req_home(key); i <= g_req_mask; ++i, s = (s + 1) & g_req_mask) {
    if (g_reqs[s].key == key) {
      // A handle we still track was reused: the old request completed unseen.
      const RequestInfo old = g_reqs[s];
      if (!(old.flags & kReqPersistent))
        table_add(old.region, old.call, old.bytes, old.bytes, old.peer, old.post_ns, 1);
      slot = &g_reqs[s];
      break;
    }
    if (g_reqs[s].key == kEmpty) {
      slot = &g_reqs[s];
      break;
    }
    if (++used > g_req_mask * 3 / 4) break;
  }
  if (!slot) {
    ++g.requests_untracked;
    if (!(flags & kReqPersistent)) table_add(g.cur_region, call, bytes, bytes, peer, post_ns, 1);
    return;
  }
  slot->key = key;
  slot->comm = comm;
  slot->bytes = bytes;
  slot->post_ns = (flags & kReqPersistent) ? 0 : post_ns;
  slot->call = call;
  slot->start_call = start_call;
  slot->peer = peer;
  slot->region = static_cast<unsigned short>(g.cur_region);
  slot->flags = static_cast<unsigned char>(flags);
  slot->active = 0;
}

void request_started(MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return;
  Lock lock;
  RequestInfo *info = req_find(key_of(request));
  if (info) {
    info->active = 1;
    info->region = static_cast<unsigned short>(g.cur_region);
  }
}

void request_freeing(MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return;
  Lock lock;
  const uintptr_t key = key_of(request);
  RequestInfo *info = req_find(key);
  if (!info) return;
  // A request freed before completion still moves its data: count what was posted.
  if (!(info->flags & kReqPersistent))
    table_add(info->region, info->call, info->bytes, info->bytes, info->peer, info->post_ns, 1);
  req_erase(key);
}

void requests_flush_incomplete() {
  if (!g_reqs) return;
  Lock lock;
  for (uint64_t s = 0; s <= g_req_mask; ++s) {
    const RequestInfo &info = g_reqs[s];
    if (info.key == kEmpty || (info.flags & kReqPersistent)) continue;
    table_add(info.region, info.call, info.bytes, info.bytes, info.peer, info.post_ns, 1);
    ++g.requests_incomplete;
  }
  std::memset(g_reqs, 0, (g_req_mask + 1) * sizeof(RequestInfo));
}

Snapshot::Snapshot(int count, const MPI_Request *requests) : count_(count) {
  if (count <= 0 || !requests) return;
  Lock lock;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    const RequestInfo *info = req_find(key_of(requests[i]));
    if (!info) continue;
    if (tracked_ == kInline && items_ == inline_items_) {
      Item *heap = static_cast<Item *>(std::malloc(sizeof(Item) * count));
      if (!heap) break;  // untracked completions are flushed at finalize
      std::memcpy(heap, inline_items_, sizeof(inline_items_));
      items_ = heap;
    }
    items_[tracked_].index = i;
    items_[tracked_].info = *info;
    if (info->flags & kReqRecv) needs_status_ = true;
    ++tracked_;
  }
}

Snapshot::~Snapshot() {
  if (items_ != inline_items_) std::free(items_);
  std::free(own_statuses_);
}

MPI_Status *Snapshot::statuses(MPI_Status *user) {
  if (user) return user;
  if (!needs_status_ || count_ <= 0) return MPI_STATUSES_IGNORE;
  own_statuses_ = static_cast<MPI_Status *>(std::malloc(sizeof(MPI_Status) * count_));
  return own_statuses_ ? own_statuses_ : MPI_STATUSES_IGNORE;
}

void Snapshot::complete(int index, const MPI_Status *status) {
  for (int t = 0; t < tracked_; ++t) {
    if (items_[t].index == index) {
      finish(items_[t].info, status);
      return;
    }
  }
}

void Snapshot::complete_all(const MPI_Status *statuses) {
  for (int t = 0; t < tracked_; ++t) {
    const MPI_Status *st =
        (statuses && statuses != MPI_STATUSES_IGNORE) ? statuses + items_[t].index : nullptr;
    finish(items_[t].info, st);
  }
}

void Snapshot::complete_all_f(FortranStatuses &statuses) {
  for (int t = 0; t < tracked_; ++t) finish(items_[t].info, statuses.c(items_[t].index));
}

}  // namespace petacomm::prof
