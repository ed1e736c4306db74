// The per-rank block of data (state.hpp: Live, meta JSON, regions, call table). With
// PETACOMM_PROF_PARTIAL=file it is a shared mapping of LOG.partial/rank-N.live: the kernel
// keeps what the rank recorded in the file whatever ends the process, so a job that dies
// (MPI_Abort, a signal, the launcher's SIGKILL a few milliseconds after its SIGTERM, a
// crash, the out-of-memory killer) loses nothing; signal handlers only note the reason and
// the time. A successful MPI_Finalize removes the file. The meta JSON at meta_offset holds
// the log header and the offsets and types of every field, for readers
// (petacomm/profile/live.py).
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "json.hpp"
#include "state.hpp"

namespace petacomm::prof {

namespace {

constexpr uint64_t kAlign = 4096;
uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct FieldDesc {
  const char *name;
  size_t offset;
  const char *type;  // u64, i32, u16, char[N], i32[N]
};
#define PETACOMM_FIELD(S, f, t) {#f, offsetof(S, f), t}

const FieldDesc kLiveFields[] = {
    PETACOMM_FIELD(Live, regions_offset, "u64"),
    PETACOMM_FIELD(Live, table_offset, "u64"),
    PETACOMM_FIELD(Live, table_entries, "u64"),
    PETACOMM_FIELD(Live, fallback_offset, "u64"),
    PETACOMM_FIELD(Live, fallback_entries, "u64"),
    PETACOMM_FIELD(Live, block_bytes, "u64"),
    PETACOMM_FIELD(Live, state, "i32"),
    PETACOMM_FIELD(Live, rank, "i32"),
    PETACOMM_FIELD(Live, t_start_ns, "u64"),
    PETACOMM_FIELD(Live, heartbeat_ns, "u64"),
    PETACOMM_FIELD(Live, mpi_ns, "u64"),
    PETACOMM_FIELD(Live, io_ns, "u64"),
    PETACOMM_FIELD(Live, init_ns, "u64"),
    PETACOMM_FIELD(Live, events, "u64"),
    PETACOMM_FIELD(Live, coarsened_peer, "u64"),
    PETACOMM_FIELD(Live, coarsened_size, "u64"),
    PETACOMM_FIELD(Live, coarsened_call, "u64"),
    PETACOMM_FIELD(Live, used_keys, "u64"),
    PETACOMM_FIELD(Live, requests_untracked, "u64"),
    PETACOMM_FIELD(Live, requests_incomplete, "u64"),
    PETACOMM_FIELD(Live, region_errors, "u64"),
    PETACOMM_FIELD(Live, busy_since_ns, "u64"),
    PETACOMM_FIELD(Live, busy_call, "i32"),
    PETACOMM_FIELD(Live, busy_region, "i32"),
    PETACOMM_FIELD(Live, busy_threads, "i32"),
    PETACOMM_FIELD(Live, last_signal, "i32"),
    PETACOMM_FIELD(Live, rss_kib, "u64"),
    PETACOMM_FIELD(Live, nregions, "i32"),
    PETACOMM_FIELD(Live, depth, "i32"),
    PETACOMM_FIELD(Live, cur_region, "i32"),
    PETACOMM_FIELD(Live, excl_mark, "u64"),
    PETACOMM_FIELD(Live, stack, "i32[64]"),
    PETACOMM_FIELD(Live, reason, "char[128]"),
};
const FieldDesc kRegionFields[] = {
    PETACOMM_FIELD(Region, name, "char[80]"),   PETACOMM_FIELD(Region, parent, "i32"),
    PETACOMM_FIELD(Region, open_depth, "i32"),  PETACOMM_FIELD(Region, entries, "u64"),
    PETACOMM_FIELD(Region, wall_ns, "u64"),     PETACOMM_FIELD(Region, mpi_ns, "u64"),
    PETACOMM_FIELD(Region, io_ns, "u64"),       PETACOMM_FIELD(Region, excl_wall_ns, "u64"),
    PETACOMM_FIELD(Region, excl_mpi_ns, "u64"), PETACOMM_FIELD(Region, excl_io_ns, "u64"),
    PETACOMM_FIELD(Region, lbst_ns, "u64"),     PETACOMM_FIELD(Region, open_t, "u64"),
    PETACOMM_FIELD(Region, open_mpi, "u64"),    PETACOMM_FIELD(Region, open_io, "u64"),
};
const FieldDesc kEntryFields[] = {
    PETACOMM_FIELD(Entry, size_key, "u64"), PETACOMM_FIELD(Entry, peer, "i32"),
    PETACOMM_FIELD(Entry, call, "u16"),     PETACOMM_FIELD(Entry, region, "u16"),
    PETACOMM_FIELD(Entry, count, "u64"),    PETACOMM_FIELD(Entry, bytes, "u64"),
    PETACOMM_FIELD(Entry, time_ns, "u64"),  PETACOMM_FIELD(Entry, min_ns, "u64"),
    PETACOMM_FIELD(Entry, max_ns, "u64"),   PETACOMM_FIELD(Entry, size_max, "u64"),
};
static_assert(sizeof(Live) <= 4096, "the Live header fits its page");
static_assert(offsetof(Live, layout_version) == 8 && offsetof(Live, live_bytes) == 12 &&
                  offsetof(Live, meta_offset) == 16 && offsetof(Live, meta_bytes) == 24,
              "the fixed prefix readers start from");

template <size_t N>
void put_fields(JsonOut &o, const char *name, const FieldDesc (&fields)[N], size_t bytes) {
  o.s("\"").s(name).s("\":{\"bytes\":").u(bytes).s(",\"fields\":{");
  for (size_t k = 0; k < N; ++k) {
    if (k) o.s(",");
    o.q(fields[k].name).s(":[").u(fields[k].offset).s(",").q(fields[k].type).s("]");
  }
  o.s("}}");
}

// The meta JSON: the log header, who wrote the file, and the layout.
std::string meta_text() {
  std::string text;
  JsonOut o(&text);
  o.s("{\"schema\":\"petacomm.profile.live\",\"layout_version\":").u(kLiveLayoutVersion);
  o.s(",\"run\":").q(g.run_id).s(",\"rank\":").u(g.world_rank).s(",\"host\":").q(g.host);
  o.s(",\"pid\":").u(g.pid).s(",\"clock_ns_at_unix_s\":[").u(g.clock_at_unix[0]).s(",");
  o.u(g.clock_at_unix[1]).s("],\"header\":{");
  put_log_header(o);
  o.s("},\"size_key_flags\":").u(kSizeBinned | kSizeCoarse).s(",\"layout\":{");
  put_fields(o, "live", kLiveFields, sizeof(Live));
  o.s(",");
  put_fields(o, "region", kRegionFields, sizeof(Region));
  o.s(",");
  put_fields(o, "entry", kEntryFields, sizeof(Entry));
  o.s("}}");
  return text;
}

bool make_directory(const char *dir, char *error, size_t cap) {
  if (mkdir(dir, 0777) == 0 || errno == EEXIST) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return true;
    std::snprintf(error, cap, "'%s' is not a directory", dir);
    return false;
  }
  std::snprintf(error, cap, "cannot create '%s' (%s)", dir, std::strerror(errno));
  return false;
}

// The block in the rank's file (null with the reason in `error` when it cannot be had).
void *map_file(uint64_t bytes, char *error, size_t cap) {
  if (!make_directory(g.partial_dir, error, cap)) return nullptr;
  std::snprintf(g.live_path, sizeof(g.live_path), "%s/rank-%d.live", g.partial_dir, g.world_rank);
  const int fd = open(g.live_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::snprintf(error, cap, "cannot create '%s' (%s)", g.live_path, std::strerror(errno));
    return nullptr;
  }
  // Blocks reserved now: a full disk must not become a SIGBUS in the middle of the run.
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  void *memory = MAP_FAILED;
  if (rc == 0) memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int saved = rc ? rc : errno;
  close(fd);
  if (memory == MAP_FAILED) {
    unlink(g.live_path);
    std::snprintf(error, cap, "cannot map '%s' (%s)", g.live_path, std::strerror(saved));
    g.live_path[0] = '\0';
    return nullptr;
  }
  return memory;
}

pthread_t g_heartbeat;
bool g_heartbeat_running = false;
pthread_mutex_t g_heartbeat_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_heartbeat_cond = PTHREAD_COND_INITIALIZER;
bool g_heartbeat_stop = false;

void *heartbeat_main(void *) {
  ++t_depth;  // nothing this thread does is the program's
  const double interval = g.settings.partial_interval_s;
  pthread_mutex_lock(&g_heartbeat_mutex);
  while (!g_heartbeat_stop) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    const long long ns = static_cast<long long>(interval * 1e9);
    deadline.tv_sec += static_cast<time_t>(ns / 1000000000);
    deadline.tv_nsec += static_cast<long>(ns % 1000000000);
    if (deadline.tv_nsec >= 1000000000) {
      deadline.tv_nsec -= 1000000000;
      ++deadline.tv_sec;
    }
    while (!g_heartbeat_stop &&
           pthread_cond_timedwait(&g_heartbeat_cond, &g_heartbeat_mutex, &deadline) != ETIMEDOUT) {
    }
    if (!g_heartbeat_stop) live_mark(nullptr);
  }
  pthread_mutex_unlock(&g_heartbeat_mutex);
  return nullptr;
}

}  // namespace

uint64_t peak_rss_kib() {
  struct rusage usage;  // a system call: usable in a signal handler
  if (syscall(SYS_getrusage, RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss);
}

bool live_create(uint64_t table_entries, char *error, size_t cap) {
  const std::string meta = meta_text();
  const uint64_t meta_offset = align_up(sizeof(Live));
  const uint64_t regions_offset = meta_offset + align_up(meta.size() + 1);
  const uint64_t table_offset = regions_offset + align_up(sizeof(Region) * kMaxRegions);
  const uint64_t fallback_offset = table_offset + table_entries * sizeof(Entry);
  const uint64_t bytes = align_up(fallback_offset + kNumCalls * sizeof(Entry));
  void *memory = nullptr;
  g.live_is_file = false;
  g.live_note[0] = '\0';
  if (g.settings.partial == kPartialFile) {
    memory = map_file(bytes, g.live_note, sizeof(g.live_note));
    g.live_is_file = memory != nullptr;
  }
  if (!memory) {
    memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
      std::snprintf(error, cap, "cannot allocate the call table (%llu bytes)",
                    static_cast<unsigned long long>(bytes));
      return false;
    }
  }
  auto *base = static_cast<char *>(memory);
  Live *l = reinterpret_cast<Live *>(base);
  std::memset(l, 0, sizeof(Live));
  l->layout_version = kLiveLayoutVersion;
  l->live_bytes = sizeof(Live);
  l->meta_offset = meta_offset;
  l->meta_bytes = meta.size();
  l->regions_offset = regions_offset;
  l->table_offset = table_offset;
  l->table_entries = table_entries;
  l->fallback_offset = fallback_offset;
  l->fallback_entries = kNumCalls;
  l->block_bytes = bytes;
  l->rank = g.world_rank;
  l->state = kLiveRunning;
  std::memcpy(base + meta_offset, meta.data(), meta.size());
  g_hot.live = l;
  g.live = l;
  g.regions = reinterpret_cast<Region *>(base + regions_offset);
  g_hot.regions = g.regions;
  g.fallback = reinterpret_cast<Entry *>(base + fallback_offset);
  table_place(base + table_offset, table_entries);
  // The magic last: a reader never takes a half-initialised file for a rank's data.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  std::memcpy(l->magic, kLiveMagic, sizeof(kLiveMagic));
  return true;
}

void live_mark(const char *reason, int signal) {
  Live *l = g_hot.live;
  if (!l) return;
  l->heartbeat_ns = now_ns();
  l->rss_kib = peak_rss_kib();
  if (signal) l->last_signal = signal;
  if (!reason || l->reason[0]) return;  // the first reason is the cause
  size_t n = 0;
  while (reason[n] && n + 1 < sizeof(l->reason)) {
    l->reason[n] = reason[n];
    ++n;
  }
  l->reason[n] = '\0';
}

void live_heartbeat_start() {
  if (!g.live_is_file || g.settings.partial_interval_s <= 0) return;
  g_heartbeat_stop = false;
  // Block signals in the helper so that the program's threads keep receiving them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g_heartbeat_running = pthread_create(&g_heartbeat, nullptr, heartbeat_main, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void live_heartbeat_stop() {
  if (!g_heartbeat_running) return;
  pthread_mutex_lock(&g_heartbeat_mutex);
  g_heartbeat_stop = true;
  pthread_cond_broadcast(&g_heartbeat_cond);
  pthread_mutex_unlock(&g_heartbeat_mutex);
  pthread_join(g_heartbeat, nullptr);
  g_heartbeat_running = false;
}

void live_finished(bool logged) {
  Live *l = g_hot.live;
  if (!l || !g.live_is_file) return;
  if (logged) {
    l->state = kLiveFinished;
    unlink(g.live_path);
  } else {
    live_mark("MPI_Finalize reached, but the final log could not be written");
  }
}

}  // namespace petacomm::prof
