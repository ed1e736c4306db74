// The profiler's per-process state: settings, the per-rank data the logs are made of (the
// Live block, the regions and the call table), caches. Internal to libpetacomm-prof.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "prof_settings.hpp"
#include "runtime.hpp"

namespace petacomm::prof {

constexpr int kMaxRegions = 256;
constexpr int kMaxRegionDepth = 64;
constexpr int kRegionNameMax = 80;
constexpr uint64_t kSizeBinned = 1ull << 63;  // size key is a bin: 8 bins per power of two
constexpr uint64_t kSizeCoarse = 1ull << 62;  // size key is a power-of-two bin (overflow)
constexpr uint64_t kSizeAll = ~0ull;          // every size (second overflow level)
constexpr int kSchemaVersion = 1;
constexpr uint16_t kRegionCoarse = 0xffff;  // region of the last overflow level

// One table entry: key (region, call, size class, partner) and its statistics. 64 bytes.
struct Entry {
  uint64_t size_key;
  int32_t peer;
  uint16_t call;
  uint16_t region;
  uint64_t count;  // 0: unused slot (written last, so a used entry is always whole)
  uint64_t bytes;
  uint64_t time_ns;
  uint64_t min_ns;
  uint64_t max_ns;
  uint64_t size_max;  // upper bound of the size class (size_key holds the lower)
};
static_assert(sizeof(Entry) == 64, "table entries are one cache line");

struct Region {
  char name[kRegionNameMax];
  int32_t parent;
  int32_t open_depth;  // >0 while open (recursion counted once)
  uint64_t entries;
  uint64_t wall_ns, mpi_ns, io_ns;                 // inclusive (nested regions included)
  uint64_t excl_wall_ns, excl_mpi_ns, excl_io_ns;  // while innermost
  uint64_t lbst_ns;                                // barrier waits closing the region
  uint64_t open_t, open_mpi, open_io;
};

// The per-rank data the logs are made of, in one block: [Live | meta JSON | regions | call
// table | one fallback entry per call]. With PETACOMM_PROF_PARTIAL=file the block is a shared
// mapping of LOG.partial/rank-N.live, so whatever kills the process (MPI_Abort, a signal,
// SIGKILL, a crash) the data recorded until then is in the file; `petacomm report` reads it.
// The meta JSON describes this layout (field offsets and types), so readers need no copy of
// this struct; only its first 32 bytes are fixed: magic, layout_version, live_bytes (u32),
// meta_offset, meta_bytes (u64).
constexpr char kLiveMagic[8] = {'P', 'C', 'P', 'R', 'O', 'F', 'L', '\0'};
constexpr uint32_t kLiveLayoutVersion = 1;
constexpr int32_t kLiveRunning = 0;
constexpr int32_t kLiveFinished = 1;  // the final log has the data: the file is obsolete
constexpr int kReasonMax = 128;

struct Live {
  char magic[8];
  uint32_t layout_version;
  uint32_t live_bytes;  // sizeof(Live)
  uint64_t meta_offset, meta_bytes;
  uint64_t regions_offset, table_offset, table_entries, fallback_offset, fallback_entries;
  uint64_t block_bytes;
  int32_t state;
  int32_t rank;
  uint64_t t_start_ns;    // when profiling started (clock of now_ns)
  uint64_t heartbeat_ns;  // last known time the rank was alive
  uint64_t mpi_ns, io_ns, init_ns, events;
  uint64_t coarsened_peer, coarsened_size, coarsened_call;
  uint64_t used_keys;  // distinct keys in the table
  uint64_t requests_untracked, requests_incomplete, region_errors;
  uint64_t busy_since_ns;  // >0 while at least one thread is inside a recorded MPI call
  int32_t busy_call;       // the call that made the rank busy, and its region
  int32_t busy_region;
  int32_t busy_threads;  // threads inside recorded MPI calls
  int32_t last_signal;   // the last signal the rank received (0: none)
  uint64_t rss_kib;      // peak resident memory, as of the last heartbeat or signal
  int32_t nregions;
  int32_t depth;  // stack[depth-1] is the innermost region; stack[0] is the program
  int32_t cur_region;
  uint64_t excl_mark;
  int32_t stack[kMaxRegionDepth];
  char reason[kReasonMax];  // why the rank stopped, when known ("" while running)
};

struct State {
  Settings settings;
  char partial_dir[4200];
  char live_path[4300];
  Live *live;
  Region *regions;
  Entry *table;
  Entry *fallback;  // one entry per call: the last overflow level never fails
  uint64_t *index;  // the table's index (call_table.cpp), private memory
  uint64_t table_mask;
  uint64_t key_capacity;     // distinct keys the table takes (7/8 of its entries)
  uint64_t coarse_capacity;  // and with the coarsened keys of an overflow (15/16)
  bool live_is_file;
  char live_note[600];        // why the block is not a file, when it is not
  char run_id[64];            // the same on every rank of a run (rank 0's pid and start time)
  uint64_t clock_at_unix[2];  // now_ns() and the Unix time (s) at the same moment

  uint64_t t_end;  // when MPI_Finalize was called (or the snapshot taken)
  int snapshot;    // >0 while writing snapshot number `snapshot` (MPI_Pcontrol(3))
  int snapshot_count;
  bool last_was_barrier;
  uint64_t last_barrier_ns;

  int world_rank, world_size, nodes;
  MPI_Comm comm;  // private duplicate of MPI_COMM_WORLD for the merge
  MPI_Group world_group;
  int thread_level;
  bool initialised, finalising, finalised;
  char host[256];
  char command_json[8192];
  char command_text[8192];  // the command as shell words, for the banner
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

// settings.cpp
// Parses every PETACOMM_PROF_* variable into g.settings; false (with the message in
// `error`) when one is not valid.
bool parse_settings(char *error, size_t cap);
// Sets g_hot.enabled from a PETACOMM_PROF_WRAP list; false (message in `error`) when a token
// names no call, kind or group.
bool set_enabled_calls(const char *wrap, char *error, size_t cap);

// call_table.cpp
bool table_place(void *memory, uint64_t entries);
void table_add(int region, int call, uint64_t msg_bytes, uint64_t moved, int peer, uint64_t ns,
               uint64_t count);
// table_add of one call, also counted under its call site when call sites are on.
void table_add_at(uint32_t site, int region, int call, uint64_t msg_bytes, uint64_t moved, int peer,
                  uint64_t ns);
void table_reset();  // forgets every key (MPI_Pcontrol reset)
uint64_t size_class(uint64_t bytes);
uint64_t size_upper(uint64_t key);
uint64_t size_lower(uint64_t key);

// callsites.cpp (the caller holds the Lock, except for callsites_init and _reset)
bool callsites_init(char *error, size_t cap);
void callsite_add(uint32_t site, int call, uint64_t bytes, uint64_t ns);
void callsites_reset();
// Calls `visit` for every (site, call) counted: frames are "module\x1foffset" joined by
// "\x1e", innermost first ("" for the site "(other)").
void callsites_collect(void (*visit)(const std::string &frames, int call, uint64_t count,
                                     uint64_t bytes, uint64_t time_ns, uint64_t min_ns,
                                     uint64_t max_ns, void *data),
                       void *data);

// regions.cpp
void region_begin(const char *name);
void region_end(const char *name);
void regions_start(uint64_t now);
void regions_close_all(uint64_t now);

// partners.cpp
bool caches_init();

// requests.cpp
bool requests_init();
void requests_flush_incomplete();

// live.cpp
// The block of per-rank data (a file mapping in g.partial_dir, or anonymous memory).
bool live_create(uint64_t table_entries, char *error, size_t cap);
void live_write_meta();
// Notes the time (and the reason, unless one is noted already); async-signal-safe.
void live_mark(const char *reason, int signal = 0);
uint64_t peak_rss_kib();  // KiB; async-signal-safe
void live_heartbeat_start();
void live_heartbeat_stop();
void live_finished(bool logged);

// log.cpp
class JsonOut;
// The fields of the log header, from "schema" to "call_kinds" (no braces).
void put_log_header(JsonOut &o);
// Merges every rank's data; on rank 0, writes the log: true when it was written.
bool write_final_log();

// lifecycle.cpp
void startup(uint64_t init_ns);
void shutdown();

}  // namespace petacomm::prof
