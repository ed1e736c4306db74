// MPI helpers private to xchg: collective agreement on errors, element datatypes, count
// conversions, a timer.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace petacomm::xchg {

// Where plan setup spends its time on this rank: wall and thread CPU time in total, and
// inside the MPI calls that block or poll for other ranks (collectives, probes, waits). The
// compute time of setup is cpu - mpi_cpu: the CPU time of this rank's own work, which
// neither waiting for slower ranks nor sharing a core with them inflates.
struct SetupClock {
  double wall = 0, cpu = 0, mpi_wall = 0, mpi_cpu = 0;
  int open_waits = 0;  // MpiWait scopes open on this clock: nested scopes count once
  double compute() const { return cpu > mpi_cpu ? cpu - mpi_cpu : 0.0; }
};

// Scope around blocking or polling MPI calls during plan setup: adds its wall and CPU time to
// `clock` (nullptr, outside setup: times nothing). The clock is passed down, never kept in
// thread-local state: MPI implementations that run ranks as user-level threads of one OS
// thread (SimGrid SMPI, AMPI) switch ranks inside MPI calls, so a per-thread "current clock"
// would be another rank's, and a pointer into a finished rank's stack.
class MpiWait {
 public:
  explicit MpiWait(SetupClock *clock);
  ~MpiWait();
  MpiWait(const MpiWait &) = delete;
  MpiWait &operator=(const MpiWait &) = delete;

 private:
  SetupClock *clock_;
  bool timing_ = false;
  double wall0_ = 0, cpu0_ = 0;
};

// One argument of a collective call whose value must be the same on every rank.
struct AgreedValue {
  std::string name;    // as the caller spells it: "strategy", "cost.p2p_alpha"
  std::uint64_t hash;  // of the value
  // The value as text, for this rank's message: made only when there is one (formatting
  // every value of every check cost more than the check's own work).
  std::function<std::string()> shown;
};

// Collective over comm: keeps a collective call from hanging or corrupting memory when one
// rank's arguments are bad. One reduction (four integers) finds the lowest rank whose
// `problem` is non-empty and whether the values' fingerprints differ. If a rank has a
// problem, every rank fails with ERR_ARG: that rank with its own message, the others naming
// it. If the values differ, a second step (on that failure path only: a broadcast of rank
// 0's value hashes and one reduction) finds the lowest rank whose value differs from rank
// 0's and every rank fails naming that rank and the argument. Every rank must pass the same
// value names. The reduction is nonblocking, so other communication can overlap it.
class ArgumentCheck {
 public:
  ArgumentCheck() = default;                                    // waits untimed (execution)
  explicit ArgumentCheck(SetupClock *clock) : clock_(clock) {}  // waits timed on clock
  ~ArgumentCheck();
  ArgumentCheck(const ArgumentCheck &) = delete;
  ArgumentCheck &operator=(const ArgumentCheck &) = delete;

  // Collective. flag: one bit per rank, OR-ed over the ranks (any_flag()).
  void start(MPI_Comm comm, std::string problem, std::vector<AgreedValue> values,
             bool flag = false);
  bool pending() const { return request_ != MPI_REQUEST_NULL; }
  // Completes the reduction: true when every rank's arguments are valid and agree.
  bool passed();
  bool any_flag() const { return any_flag_; }
  // Collective, after passed() returned false on every rank: throws ERR_ARG, ending the
  // message with `consequence` ("no plan was created").
  [[noreturn]] void fail(const char *consequence);

 private:
  SetupClock *clock_ = nullptr;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::string problem_;
  std::vector<AgreedValue> values_;
  std::uint64_t mine_[4] = {}, low_[4] = {};
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false, any_flag_ = false;
};

// Hashes for AgreedValue.
std::uint64_t hash_text(const char *text);  // NULL hashes like ""
std::uint64_t hash_number(double value);
std::uint64_t hash_number(std::int64_t value);

// MPI_Iallreduce, except under SimGrid SMPI (PETACOMM_SMPI): SMPI 3.32 runs a nonblocking
// allreduce as every rank sending its whole buffer to every other rank, p(p-1) messages with
// no tuned algorithm (65,280 for a 32-byte argument check at 256 ranks, which kept one plan's
// simulation busy for more than ten minutes and priced every execution as an all-to-all).
// There the blocking MPI_Allreduce (tuned algorithms) runs at once, timed on `clock`, and
// *request is MPI_REQUEST_NULL; only the overlap with what follows the call is lost.
void start_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm, MPI_Request *request, SetupClock *clock);

// int count for an MPI call; throws naming `what` if it does not fit.
int to_int_count(std::size_t count, const char *what);

// A committed contiguous datatype of `bytes` bytes (one key's k components), freed on
// destruction. Movable, not copyable.
class ElementType {
 public:
  ElementType() = default;
  explicit ElementType(std::size_t bytes);
  ~ElementType();
  ElementType(ElementType &&other) noexcept;
  ElementType &operator=(ElementType &&other) noexcept;
  ElementType(const ElementType &) = delete;
  ElementType &operator=(const ElementType &) = delete;
  MPI_Datatype get() const { return type_; }
  std::size_t bytes() const { return bytes_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::size_t bytes_ = 0;
};

// True once MPI_Finalize has been called (then no MPI call may be made).
bool mpi_finalized();

double now_seconds();

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID): unaffected by time the thread
// spends descheduled, so compute measured with it survives oversubscribed nodes.
double thread_cpu_seconds();

// Many small reductions fused into one MPI_Allreduce: each value is added with its own
// operation (min, max, sum or bitwise or; int64 or double) and read back after run(). The whole
// vector is one element of a contiguous datatype, so MPI never splits it between the operator's
// calls, and a user operator applies every slot's own operation.
class FusedReduction {
 public:
  enum Op : std::int64_t { kMinI = 0, kMaxI, kSumI, kMinD, kMaxD, kSumD, kOrI };
  std::size_t add(Op op, std::int64_t value);
  std::size_t add(Op op, double value);
  // Collective: every rank must have added the same operations in the same order. The
  // reduction's time is added to `clock` (may be nullptr).
  void run(MPI_Comm comm, SetupClock *clock);
  std::int64_t integer(std::size_t slot) const { return values_[slot]; }
  double real(std::size_t slot) const;
  std::size_t size() const { return ops_.size(); }

 private:
  std::vector<std::int64_t> ops_, values_;
};

// ceil(log2 p) for p >= 1.
int ceil_log2(std::int64_t p);

// Mixing hash of a key (splitmix64 finaliser): the directory home and the owner choice.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A mixed hash mapped onto [0, n), n < 2^32, by multiplying its top 32 bits: no division
// (a 64-bit division per key was half the cost of sending the keys home).
inline std::uint32_t hash_to_range(std::uint64_t h, std::uint64_t n) {
  return static_cast<std::uint32_t>(((h >> 32) * n) >> 32);
}

}  // namespace petacomm::xchg
