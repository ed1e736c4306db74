// The profiler's per-process state: settings, the call table, regions, caches.
// Internal to libpetacomm-prof (hand-written parts only).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime.hpp"

namespace petacomm::prof {

constexpr int kMaxRegions = 256;
constexpr int kMaxRegionDepth = 64;
constexpr int kRegionNameMax = 80;
constexpr int kMaxProbe = 24;
constexpr uint64_t kSizeBinned = 1ull << 63;  // size key is a bin: 8 bins per power of two
constexpr uint64_t kSizeCoarse = 1ull << 62;  // size key is a power-of-two bin (overflow)
constexpr uint64_t kSizeAll = ~0ull;          // every size (second overflow level)
constexpr int kSchemaVersion = 1;

// One table entry: key (region, call, size class, partner) and its statistics. 64 bytes.
struct Entry {
  uint64_t size_key;
  int32_t peer;
  uint16_t call;
  uint16_t region;
  uint64_t count;
  uint64_t bytes;
  uint64_t time_ns;
  uint64_t min_ns;
  uint64_t max_ns;
  uint64_t reserved;
};
static_assert(sizeof(Entry) == 64, "table entries are one cache line");

struct Region {
  char name[kRegionNameMax];
  int parent;
  uint64_t entries;
  uint64_t wall_ns, mpi_ns, io_ns;                 // inclusive (nested regions included)
  uint64_t excl_wall_ns, excl_mpi_ns, excl_io_ns;  // while innermost
  uint64_t lbst_ns;                                // barrier waits closing the region
  int open_depth;                                  // >0 while open (recursion counted once)
  uint64_t open_t, open_mpi, open_io;
};

struct Settings {
  char output[4096];
  char partial_dir[4096];
  uint64_t table_bytes;
  uint64_t size_exact_limit;
  uint64_t partial_interval_s;
  uint64_t request_slots;
  int detail;  // 0 summary, 1 normal, 2 full
  bool banner;
  bool lbst_barrier;
  int io_mode;  // 0 off, 1 main thread, 2 all threads
  char wrap[512];
};

struct State {
  Settings settings;
  Entry *table;
  uint64_t table_mask;
  Entry *fallback;  // one entry per call: the last overflow level never fails
  uint64_t coarsened[3];
  uint64_t events;

  Region regions[kMaxRegions];
  int nregions;
  int stack[kMaxRegionDepth];
  int depth;  // stack[depth-1] is the innermost region; stack[0] is the program
  int cur_region;
  uint64_t excl_mark;
  uint64_t region_errors;
  bool last_was_barrier;
  uint64_t last_barrier_ns;

  uint64_t mpi_ns, io_ns;
  uint64_t t_start, t_end, init_ns;
  uint64_t requests_untracked, requests_incomplete;

  int world_rank, world_size, nodes;
  MPI_Comm comm;  // private duplicate of MPI_COMM_WORLD for the merge
  MPI_Group world_group;
  int thread_level;
  bool initialised, finalising, finalised;
  char host[256];
  char command_json[8192];
  char library[512];
  int pid;
};
extern State g;

// Lock for the bookkeeping of MPI_THREAD_MULTIPLE programs (never held across MPI calls).
class Lock {
 public:
  Lock() : held_(g_hot.threaded) {
    if (held_) {
      while (flag_.test_and_set(std::memory_order_acquire)) {
      }
    }
  }
  ~Lock() {
    if (held_) flag_.clear(std::memory_order_release);
  }
  Lock(const Lock &) = delete;
  Lock &operator=(const Lock &) = delete;

 private:
  static std::atomic_flag flag_;
  bool held_;
};

// runtime.cpp
bool table_init();
void table_add(int region, int call, uint64_t msg_bytes, uint64_t moved, int peer, uint64_t ns,
               uint64_t count);
uint64_t size_class(uint64_t bytes);
uint64_t size_upper(uint64_t key);
uint64_t size_lower(uint64_t key);
void region_begin(const char *name);
void region_end(const char *name);
void regions_close_all(uint64_t now);
int region_lookup(const char *name);
void caches_init();
void requests_flush_incomplete();
bool parse_settings();
void set_enabled_calls(const char *wrap);

// log.cpp
void write_final_log();
// Writes this rank's partial log; safe in a signal handler (no allocation, raw syscalls).
void write_partial_log(const char *reason, int slot);
void remove_partial_log();

// lifecycle.cpp
void startup(uint64_t init_ns);
void shutdown();

}  // namespace petacomm::prof
