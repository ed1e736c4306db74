// Regions: named phases of a program (MPI_Pcontrol(1, "name") ... MPI_Pcontrol(-1, "name"),
// or the region API). Every call is attributed to the innermost open region; regions nest;
// the whole run is the region "(program)". Times per region are inclusive (nested regions
// included) and exclusive (while innermost).
#include <cstdio>
#include <cstring>

#include "state.hpp"

namespace petacomm::prof {

namespace {

int region_lookup(const char *name) {
  Live &l = *g_hot.live;
  for (int r = 0; r < l.nregions; ++r)
    if (std::strncmp(g.regions[r].name, name, kRegionNameMax - 1) == 0) return r;
  if (l.nregions >= kMaxRegions) return -1;
  Region &reg = g.regions[l.nregions];
  std::memset(&reg, 0, sizeof(reg));
  std::snprintf(reg.name, sizeof(reg.name), "%s", name);
  reg.parent = l.depth > 0 ? l.stack[l.depth - 1] : -1;
  return l.nregions++;
}

void open_region(int r, uint64_t now) {
  Region &reg = g.regions[r];
  if (reg.open_depth++ == 0) {
    reg.open_t = now;
    reg.open_mpi = g_hot.live->mpi_ns;
    reg.open_io = g_hot.live->io_ns;
  }
  ++reg.entries;
}

void close_region(int r, uint64_t now) {
  Region &reg = g.regions[r];
  if (--reg.open_depth == 0) {
    reg.wall_ns += now - reg.open_t;
    reg.mpi_ns += g_hot.live->mpi_ns - reg.open_mpi;
    reg.io_ns += g_hot.live->io_ns - reg.open_io;
  }
}

void switch_innermost(uint64_t now) {
  Live &l = *g_hot.live;
  g.regions[l.cur_region].excl_wall_ns += now - l.excl_mark;
  l.excl_mark = now;
}

}  // namespace

void regions_start(uint64_t now) {
  Live &l = *g_hot.live;
  l.nregions = 0;
  l.depth = 0;
  l.cur_region = 0;
  l.excl_mark = now;
  const int r = region_lookup("(program)");
  l.stack[l.depth++] = r;
  open_region(r, now);
}

void region_begin(const char *name) {
  Lock lock;
  Live &l = *g_hot.live;
  const uint64_t now = now_ns();
  const int r = region_lookup(name);
  if (r < 0 || l.depth >= kMaxRegionDepth) {
    ++l.region_errors;
    return;
  }
  switch_innermost(now);
  l.stack[l.depth++] = r;
  l.cur_region = r;
  g.last_was_barrier = false;
  open_region(r, now);
}

void region_end(const char *name) {
  Live &l = *g_hot.live;
  // Optionally make the barrier that measures load imbalance ourselves.
  if (g.settings.lbst_barrier && l.depth > 1) {
    const uint64_t t0 = now_ns();
    busy_begin(kMPI_Barrier, t0);
    PMPI_Barrier(g.comm);
    const uint64_t t1 = now_ns();
    busy_end(t0, t1);
    t_site = 0;  // the profiler's own barrier has no call site in the program
    record(kMPI_Barrier, 0, 0, kPeerNone, t1 - t0);
  }
  Lock lock;
  const uint64_t now = now_ns();
  int at = -1;
  for (int d = l.depth - 1; d >= 1; --d) {
    if (std::strncmp(g.regions[l.stack[d]].name, name, kRegionNameMax - 1) == 0) {
      at = d;
      break;
    }
  }
  if (at < 0) {
    ++l.region_errors;  // closing a region that is not open
    return;
  }
  if (at != l.depth - 1) ++l.region_errors;  // regions closed out of order: close inner ones
  switch_innermost(now);
  if (g.last_was_barrier && at == l.depth - 1) g.regions[l.stack[at]].lbst_ns += g.last_barrier_ns;
  g.last_was_barrier = false;
  while (l.depth > at) close_region(l.stack[--l.depth], now);
  l.cur_region = l.stack[l.depth - 1];
}

void regions_close_all(uint64_t now) {
  Lock lock;
  Live &l = *g_hot.live;
  switch_innermost(now);
  if (g.last_was_barrier && l.depth >= 1)
    g.regions[l.stack[l.depth - 1]].lbst_ns += g.last_barrier_ns;
  while (l.depth > 0) close_region(l.stack[--l.depth], now);
  l.cur_region = 0;
}

}  // namespace petacomm::prof
