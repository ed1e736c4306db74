// Time: the clock (calibrated time-stamp counter) and the MPI time of a rank, defined as the
// time during which at least one of its threads is inside a recorded MPI call. With one
// thread in MPI at a time that is the sum of the calls' times; with MPI_THREAD_MULTIPLE,
// overlapping calls count once, so MPI time never exceeds the wall time. (The call table
// still sums every call's own time: per call, threads add up.)
#include "state.hpp"

namespace petacomm::prof {

TscScale g_tsc = {0, 0, 0};

void clock_calibrate(bool use_tsc) {
#if defined(__x86_64__)
  if (!use_tsc) return;
  // Invariant TSC (CPUID 0x80000007, EDX bit 8): constant rate, runs in every C-state.
  unsigned eax = 0x80000000u, ebx = 0, ecx = 0, edx = 0;
  __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx));
  if (eax < 0x80000007u) return;
  eax = 0x80000007u;
  __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx));
  if (!(edx & (1u << 8))) return;
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
#else
  (void)use_tsc;
#endif
}

namespace {
// The end of the last busy interval counted (under the lock). A thread reads its clock before
// it takes the lock: descheduled in between, it can enter after the last thread out counted
// an interval that ends past its t0. Its interval then starts where that one ended, so no
// time is counted twice and MPI time stays within the wall time.
uint64_t g_busy_until_ns = 0;
}  // namespace

void busy_begin(int call, uint64_t t0) {
  Lock lock;
  Live &l = *g_hot.live;
  if (l.busy_threads++ == 0) {
    l.busy_call = call;
    l.busy_region = l.cur_region;
    l.busy_since_ns = t0 > g_busy_until_ns ? t0 : g_busy_until_ns;
  }
}

void busy_end(uint64_t t0, uint64_t t1) {
  Lock lock;
  Live &l = *g_hot.live;
  l.heartbeat_ns = t1;
  if (--l.busy_threads > 0) return;
  // The last thread out: the whole busy interval is MPI time (t0 of a single thread).
  const uint64_t since = l.busy_since_ns ? l.busy_since_ns : t0;
  const uint64_t ns = t1 > since ? t1 - since : 0;
  if (t1 > g_busy_until_ns) g_busy_until_ns = t1;
  l.busy_since_ns = 0;
  l.mpi_ns += ns;
  g_hot.regions[l.cur_region].excl_mpi_ns += ns;
}

}  // namespace petacomm::prof
