// MPI time of a rank (timing.cpp): the union of the intervals during which at least one thread
// is inside MPI. The interleavings of threads are replayed here by the order of the calls, the
// clock readings given by hand; expected values are the unions worked out by hand. No MPI call
// is made (the profiler's state is set up directly).
#include <cstdio>
#include <cstring>

#include "runtime.hpp"
#include "state.hpp"

using namespace petacomm::prof;

namespace {
int failures = 0;
void expect(uint64_t got, uint64_t want, const char *what) {
  if (got != want) {
    ++failures;
    std::fprintf(stderr, "%s: MPI time %llu ns, expected %llu ns\n", what,
                 static_cast<unsigned long long>(got), static_cast<unsigned long long>(want));
  }
}
}  // namespace

int main() {
  static Live live;
  static Region regions[1];
  std::memset(&live, 0, sizeof live);
  std::memset(regions, 0, sizeof regions);
  g_hot.live = &live;
  g_hot.regions = regions;
  g_hot.threaded = false;  // one thread replays them all: no lock needed

  // Two threads overlapping in MPI: A [100, 200], B [150, 300] entering while A is inside.
  busy_begin(0, 100);
  busy_begin(0, 150);
  busy_end(100, 200);
  busy_end(150, 300);
  expect(live.mpi_ns, 200, "overlapping calls");  // [100, 300]

  // C read t0 = 250 before B's exit was counted, then was descheduled and entered only after
  // it: [250, 400] overlaps [100, 300] by 50, which must not count twice.
  busy_begin(0, 250);
  busy_end(250, 400);
  expect(live.mpi_ns, 300, "an entry whose clock reading predates the last exit");  // [100, 400]

  // D's whole call [320, 380] lies inside what was counted: nothing to add.
  busy_begin(0, 320);
  busy_end(320, 380);
  expect(live.mpi_ns, 300, "a call inside counted time");

  // A later call after a gap: its own length.
  busy_begin(0, 1000);
  busy_end(1000, 1100);
  expect(live.mpi_ns, 400, "a call after a gap");  // [100, 400] + [1000, 1100]
  expect(regions[0].excl_mpi_ns, 400, "the region's exclusive MPI time");

  if (failures == 0) std::printf("busy time: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
