// The profiler runtime as seen by the generated wrappers: the pass-through test, the clock,
// time accounting, recording into the table, partner translation, byte counts and request
// tracking.
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

// What a wrapper does with one call.
enum Mode : int {
  kPass = 0,    // straight through: not profiling, or a call made from inside a wrapper
  kTrack = 1,   // not recorded (paused, or not in PETACOMM_PROF_WRAP), but the objects it
                // creates, frees or completes are followed so that later records stay right
  kRecord = 2,  // recorded
};

struct Live;
struct Region;

constexpr int kMaxCallsiteDepth = 16;

// Fields read on every call, kept together on one cache line.
struct alignas(64) HotState {
  volatile bool recording;  // initialised, not finalised, not paused by MPI_Pcontrol(0)
  volatile bool tracking;   // initialised and not finalised (even when paused)
  bool threaded;            // MPI_THREAD_MULTIPLE: bookkeeping takes a lock
  Live *live;               // the per-rank counters (see state.hpp)
  Region *regions;
  int callsite_depth;  // PETACOMM_PROF_CALLSITES (0: call sites off)
  unsigned char enabled[kNumCalls];
};
extern HotState g_hot;
// >0 while inside a wrapper (or the profiler itself). `__thread` with the initial-exec model
// (the library is preloaded): one instruction to reach it, no call to __tls_get_addr or to a
// C++ thread_local's initialisation wrapper on every MPI call.
extern __thread int t_depth __attribute__((tls_model("initial-exec")));

// The mode of this call; unless kPass, leave() must follow. Calls made from inside another
// wrapper (MPI internals, Fortran bindings routed through C) are passed through, which is
// what makes every call count exactly once.
inline int enter(int call) {
  if (__builtin_expect(g_hot.recording && t_depth == 0 && g_hot.enabled[call], 1)) {
    ++t_depth;
    return kRecord;
  }
  if (t_depth == 0 && g_hot.tracking && kCallLifecycle[call]) {
    ++t_depth;
    return kTrack;
  }
  return kPass;
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

__attribute__((always_inline)) inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

__attribute__((always_inline)) inline uint64_t now_ns() {
#if defined(__x86_64__)
  if (__builtin_expect(g_tsc.mult != 0, 1)) {
    const uint64_t ticks = __builtin_ia32_rdtsc() - g_tsc.tsc0;
    return g_tsc.ns0 +
           static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * g_tsc.mult) >> 32);
  }
#endif
  return monotonic_ns();
}
void clock_calibrate(bool use_tsc);

// MPI time of a rank is the time during which at least one of its threads is inside a
// recorded MPI call (so it never exceeds the wall time); the call in flight is visible to
// the partial logs. call_begin/call_end bracket the real call.
void busy_begin(int call, uint64_t t0);
void busy_end(uint64_t t0, uint64_t t1);
// Call sites (callsites.cpp): the site of the call in progress on this thread (0: none).
extern __thread uint32_t t_site __attribute__((tls_model("initial-exec")));
uint32_t callsite_capture();
inline uint64_t call_begin(int mode, int call) {
  if (__builtin_expect(g_hot.callsite_depth != 0, 0) && mode == kRecord)
    t_site = callsite_capture();
  const uint64_t t0 = now_ns();
  if (mode == kRecord) busy_begin(call, t0);
  return t0;
}
inline uint64_t call_end(int mode, uint64_t t0) {
  const uint64_t t1 = now_ns();
  if (mode == kRecord) busy_end(t0, t1);
  return t1 - t0;
}

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

// Object lifetimes (followed in kTrack mode too).
void comm_created(MPI_Comm comm);
void comm_freeing(MPI_Comm comm);
void win_created(MPI_Win win, MPI_Comm comm);
void win_freeing(MPI_Win win);
void message_matched(MPI_Message message, MPI_Comm comm);
MPI_Comm message_comm(MPI_Message message);

// Requests: non-blocking calls are recorded when they complete.
void request_posted(int call, int start_call, MPI_Request request, uint64_t bytes, int peer,
                    uint64_t post_ns, unsigned flags, MPI_Comm comm);
// A persistent request activated; `counted`: the activation is recorded when it completes.
void request_started(MPI_Request request, bool counted);
void request_freeing(MPI_Request request);

// The status a receive-like call writes: the caller's, or a private one when the caller
// passed MPI_STATUS_IGNORE (the profiler needs the source and the size).
class StatusOut {
 public:
  explicit StatusOut(MPI_Status *user) : user_(user) {}
  MPI_Status *arg() { return user_ == MPI_STATUS_IGNORE ? &own_ : user_; }
  const MPI_Status *get() { return arg(); }

 private:
  MPI_Status *user_;
  MPI_Status own_;
};

// A request array of a start call (C: the caller's array).
class RequestArray {
 public:
  RequestArray(int, MPI_Request *requests) : requests_(requests) {}
  MPI_Request get(int i) const { return requests_[i]; }

 private:
  MPI_Request *requests_;
};

// What the profiler keeps about one pending request (the postings of equal handle values
// are told apart by `serial`).
struct RequestInfo {
  uintptr_t key;  // the handle value (0: free slot)
  uint64_t serial;
  MPI_Comm comm;
  uint64_t bytes;
  uint64_t post_ns;
  int call;
  int start_call;
  int peer;
  uint32_t site;          // call site of the posting call (0: none)
  unsigned short region;  // where it was posted (or, persistent, last started)
  unsigned char flags;
  unsigned char active;   // persistent: started (counted) and not yet completed
  unsigned char claimed;  // a completion call in progress holds it
};

// The tracked requests among those a completion call is given. The constructor claims them
// (one tracked posting per array slot, even when several slots hold the same handle value,
// as Open MPI's shared handle of requests that completed at once), finish() records one that
// completed, and the destructor releases the claims of those that did not complete.
class RequestClaims {
 public:
  RequestClaims(int count, const MPI_Request *requests);
  ~RequestClaims();
  RequestClaims(const RequestClaims &) = delete;
  RequestClaims &operator=(const RequestClaims &) = delete;
  // A tracked receive is among them: its status gives the bytes and the source.
  bool needs_status() const { return needs_status_; }
  // Request `index` of the array completed with `status` (null when none).
  void finish(int index, const MPI_Status *status);
  int tracked() const { return tracked_; }
  int index_of(int item) const { return items_[item].index; }

 private:
  struct Item {
    int index;
    bool done;
    RequestInfo info;
  };
  static constexpr int kInline = 4;
  Item inline_[kInline];
  Item *items_ = inline_;
  int tracked_ = 0;
  bool needs_status_ = false;
};

// Completion calls of C: the claims plus the status argument to give MPI (the caller's, or a
// private one when the caller ignores statuses but a tracked receive needs one).
class Completions {
 public:
  // `statuses`: the caller's status (an array when `array`), or MPI_STATUS(ES)_IGNORE.
  Completions(int count, const MPI_Request *requests, MPI_Status *statuses, bool array);
  ~Completions();
  Completions(const Completions &) = delete;
  Completions &operator=(const Completions &) = delete;
  MPI_Status *arg() { return pass_; }
  // Request `index` completed; its status is at `position` of the status argument.
  void finish(int index, int position);
  void finish_all();

 private:
  RequestClaims claims_;
  MPI_Status *pass_;
  MPI_Status *own_ = nullptr;  // private statuses of an array call
  MPI_Status one_;             // the private status of a single-request call
  bool array_;
};

}  // namespace petacomm::prof
