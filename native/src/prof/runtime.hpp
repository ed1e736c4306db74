// The profiler runtime as seen by the generated wrappers: the pass-through test, the clock,
// recording into the table, partner translation, byte counts and request tracking.
//
// Nothing here throws or aborts: every helper returns a neutral value (0 bytes, no partner)
// when it cannot answer, so the host program behaves exactly as without the profiler.
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

#include "prof_calls.hpp"

#define PETACOMM_PROF_EXPORT __attribute__((visibility("default")))

namespace petacomm::prof {

// Partner codes (non-negative values are ranks of MPI_COMM_WORLD).
constexpr int kPeerNone = -1;      // the call has no partner (or a collective without root)
constexpr int kPeerProcNull = -2;  // MPI_PROC_NULL
constexpr int kPeerAny = -3;       // MPI_ANY_SOURCE that no status resolved
constexpr int kPeerCoarse = -4;    // partners merged because the table overflowed
constexpr int kPeerOutside = -5;   // a rank outside MPI_COMM_WORLD (spawned/connected)

constexpr unsigned kReqPersistent = 1u;
constexpr unsigned kReqRecv = 2u;

// Fields read on every call, kept together on one cache line.
struct alignas(64) HotState {
  volatile bool recording;  // initialised, not finalised, not paused by MPI_Pcontrol(0)
  bool threaded;            // MPI_THREAD_MULTIPLE: bookkeeping takes a lock
  unsigned char enabled[kNumCalls];
};
extern HotState g_hot;
extern thread_local int t_depth;  // >0 while inside a wrapper (or the profiler itself)

// True when this call is to be recorded; then leave() must follow. Calls made from inside
// another wrapper (MPI internals, Fortran bindings routed through C) are passed through,
// which is what makes every call count exactly once.
inline bool enter(int call) {
  if (__builtin_expect(!g_hot.recording || t_depth != 0 || !g_hot.enabled[call], 0)) return false;
  ++t_depth;
  return true;
}
inline void leave() { --t_depth; }

// The clock: nanoseconds of CLOCK_MONOTONIC. Where the CPU has an invariant time-stamp
// counter, the counter (about 12 ns to read instead of about 30) is converted with a scale
// calibrated against CLOCK_MONOTONIC when profiling starts (clock_calibrate()).
struct TscScale {
  uint64_t tsc0;
  uint64_t ns0;
  uint64_t mult;  // ns per tick, fixed point with 32 fractional bits; 0 = use clock_gettime
};
extern TscScale g_tsc;

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t now_ns() {
#if defined(__x86_64__)
  if (__builtin_expect(g_tsc.mult != 0, 1)) {
    const uint64_t ticks = __builtin_ia32_rdtsc() - g_tsc.tsc0;
    return g_tsc.ns0 +
           static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * g_tsc.mult) >> 32);
  }
#endif
  return monotonic_ns();
}
void clock_calibrate();

// One completed call: msg_bytes decides the size key, moved_bytes is added to the bytes.
void record(int call, uint64_t msg_bytes, uint64_t moved_bytes, int peer, uint64_t ns);
// POSIX I/O call (time counts as I/O, not MPI).
void record_io(int call, uint64_t bytes, uint64_t ns);

// Partner translation (cached per communicator / window at creation).
int peer_comm(MPI_Comm comm, int rank);
int peer_root(MPI_Comm comm, int root);
int peer_win(MPI_Win win, int rank);
int peer_status(MPI_Comm comm, const MPI_Status *status, int source);

// Byte counts (64-bit; MPI_DATATYPE_NULL and counts <= 0 give 0).
uint64_t tsz(MPI_Count count, MPI_Datatype type);
uint64_t tsz_sum(const int *counts, int n, MPI_Datatype type);
uint64_t tsz_at(const int *counts, int index, MPI_Datatype type);
uint64_t tsz_w(const int *counts, const MPI_Datatype *types, int n);
uint64_t tsz_wf(const int *counts, const MPI_Fint *types, int n);
uint64_t status_bytes(const MPI_Status *status);
inline bool inplace(const void *buffer) { return buffer == MPI_IN_PLACE; }
int npeers(MPI_Comm comm);    // size, or remote size of an intercommunicator
int commsize(MPI_Comm comm);  // local size
int myrank(MPI_Comm comm);
int outdeg(MPI_Comm comm);  // neighbourhood out-degree of a topology communicator

// Object lifetimes.
void comm_created(MPI_Comm comm);
void comm_freeing(MPI_Comm comm);
void win_created(MPI_Win win, MPI_Comm comm);
void win_freeing(MPI_Win win);
void message_matched(MPI_Message message, MPI_Comm comm);
MPI_Comm message_comm(MPI_Message message);

// Requests: non-blocking calls are recorded when they complete.
void request_posted(int call, int start_call, MPI_Request request, uint64_t bytes, int peer,
                    uint64_t post_ns, unsigned flags, MPI_Comm comm);
void request_started(MPI_Request request);
void request_freeing(MPI_Request request);

struct RequestInfo {
  uintptr_t key;
  MPI_Comm comm;
  uint64_t bytes;
  uint64_t post_ns;
  int call;
  int start_call;
  int peer;
  unsigned short region;
  unsigned char flags;
  unsigned char active;  // persistent: started and not yet completed
};

class FortranStatuses;

// The tracked requests among the ones a completion call is given, captured before the call
// (which overwrites completed handles with MPI_REQUEST_NULL).
class Snapshot {
 public:
  Snapshot(int count, const MPI_Request *requests);
  ~Snapshot();
  Snapshot(const Snapshot &) = delete;
  Snapshot &operator=(const Snapshot &) = delete;
  bool needs_status() const { return needs_status_; }
  // The status array to pass to MPI: the caller's, or a private one when the caller passed
  // MPI_STATUSES_IGNORE but a tracked receive needs its status.
  MPI_Status *statuses(MPI_Status *user);
  void complete(int index, const MPI_Status *status);
  void complete_all(const MPI_Status *statuses);
  void complete_all_f(FortranStatuses &statuses);

 private:
  static constexpr int kInline = 4;
  struct Item {
    int index;
    RequestInfo info;
  };
  Item inline_items_[kInline];
  Item *items_ = inline_items_;
  int tracked_ = 0;
  int count_ = 0;
  bool needs_status_ = false;
  MPI_Status *own_statuses_ = nullptr;
};

}  // namespace petacomm::prof
