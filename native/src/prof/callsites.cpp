// Call sites (PETACOMM_PROF_CALLSITES=DEPTH): each recorded MPI call is also counted under its
// call site, the return addresses of the program's DEPTH innermost stack frames (the frames
// of this library and of the MPI library's own modules are skipped, so a site is where the
// program called MPI, whether through the C or the Fortran bindings). Addresses are kept as they
// are while the program runs and turned into (module, offset) pairs at the end, so that `petacomm
// report` can resolve them to file:line:function offline with the modules' debug information
// (addr2line), as mpiP does online. Non-blocking calls are counted under the site that posted them.
//
// Two fixed-size tables in private memory: the distinct stacks (sites) and the statistics per
// (site, call). A site beyond kMaxSites is counted under site 0, "(other)".
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "handle_table.hpp"
#include "state.hpp"

namespace petacomm::prof {

__thread uint32_t t_site __attribute__((tls_model("initial-exec"))) = 0;

namespace {

constexpr uint64_t kMaxSites = 8192;
constexpr uint64_t kMaxSiteStats = 16384;

struct Site {
  uintptr_t key;  // hash of the frames (non-zero)
  uint32_t id;
  int depth;
  uintptr_t pc[kMaxCallsiteDepth];
};

struct SiteStat {
  uintptr_t key;  // (site << 16 | call) + 1
  uint64_t count, bytes, time_ns, min_ns, max_ns;
};

HandleTable<Site> g_sites;
HandleTable<SiteStat> g_stats;
Site *g_by_id[kMaxSites];  // site id -> its slot (slots never move: nothing is erased)
uint32_t g_nsites = 0;
uintptr_t g_self_lo = 0, g_self_hi = 0;  // this library's code

int find_self(dl_phdr_info *info, size_t, void *data) {
  const auto here = reinterpret_cast<uintptr_t>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (here >= lo && here < hi) {
      // Linked into the executable (static archive): its frames cannot be told from ours.
      if (!info->dlpi_name || !info->dlpi_name[0]) return -1;
      g_self_lo = lo;
      g_self_hi = hi;
      return 1;
    }
  }
  return 0;
}

// Code of the MPI library's own modules (libmpi*, libmpich*: the C library and its Fortran
// bindings). A call that reaches the profiler through them started in the program: MPICH's
// `use mpi_f08` procedures with a buffer (mpi_send_f08ts_) call the C MPI_Send, whose caller
// is then inside libmpichfort, not where the program called MPI.
struct CodeRange {
  uintptr_t lo, hi;
};
constexpr int kMaxMpiRanges = 32;
CodeRange g_mpi_code[kMaxMpiRanges];
int g_mpi_ranges = 0;

int find_mpi_modules(dl_phdr_info *info, size_t, void *) {
  const char *name = info->dlpi_name;
  if (!name || !name[0]) return 0;
  const char *base = std::strrchr(name, '/');
  base = base ? base + 1 : name;
  if (std::strncmp(base, "libmpi", 6) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum && g_mpi_ranges < kMaxMpiRanges; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    g_mpi_code[g_mpi_ranges++] = {lo, lo + ph.p_memsz};
  }
  return 0;
}

// Frames skipped before the call site: this library's and the MPI library's.
inline bool ours(void *pc) {
  const auto a = reinterpret_cast<uintptr_t>(pc);
  if (a >= g_self_lo && a < g_self_hi) return true;
  for (int i = 0; i < g_mpi_ranges; ++i)
    if (a >= g_mpi_code[i].lo && a < g_mpi_code[i].hi) return true;
  return false;
}

}  // namespace

bool callsites_init(char *error, size_t cap) {
  if (g.settings.callsite_depth == 0) return true;
  if (dl_iterate_phdr(find_self, reinterpret_cast<void *>(&callsites_init)) != 1) {
    std::snprintf(error, cap,
                  "PETACOMM_PROF_CALLSITES needs the shared profiler library (preloaded), not "
                  "the static archive");
    return false;
  }
  g_mpi_ranges = 0;
  dl_iterate_phdr(find_mpi_modules, nullptr);
  void *prime[4];
  backtrace(prime, 4);  // loads the unwinder now, not inside the first MPI call
  g_nsites = 0;
  return g_sites.init(kMaxSites) && g_stats.init(kMaxSiteStats);
}

uint32_t callsite_capture() {
  const int depth = static_cast<int>(g.settings.callsite_depth);
  void *frames[kMaxCallsiteDepth + 16];
  const int n = backtrace(frames, depth + 16);
  int first = 0;
  while (first < n && ours(frames[first])) ++first;
  Site probe{};
  probe.depth = n - first < depth ? n - first : depth;
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < probe.depth; ++k) {
    probe.pc[k] = reinterpret_cast<uintptr_t>(frames[first + k]);
    h = mix64(h ^ probe.pc[k]);
  }
  probe.key = h | 1;
  Lock lock;
  Site *site = g_sites.find(probe.key, [&probe](const Site &s) {
    return s.depth == probe.depth && std::memcmp(s.pc, probe.pc, sizeof(uintptr_t) * s.depth) == 0;
  });
  if (site) return site->id;
  if (g_nsites + 1 >= kMaxSites) return 0;
  site = g_sites.insert(probe.key);
  if (!site) return 0;
  *site = probe;
  site->id = ++g_nsites;
  g_by_id[site->id] = site;
  return site->id;
}

void callsite_add(uint32_t site, int call, uint64_t bytes, uint64_t ns) {
  if (!g_stats.ready()) return;
  const uintptr_t key = ((static_cast<uintptr_t>(site) << 16) | static_cast<uintptr_t>(call)) + 1;
  SiteStat *s = g_stats.find(key);
  if (!s) s = g_stats.insert(key);
  if (!s) s = g_stats.find(static_cast<uintptr_t>(call) + 1);  // full: under "(other)"
  if (!s) s = g_stats.insert(static_cast<uintptr_t>(call) + 1);
  if (!s) return;
  if (s->count == 0 || ns < s->min_ns) s->min_ns = ns;
  if (ns > s->max_ns) s->max_ns = ns;
  s->bytes += bytes;
  s->time_ns += ns;
  ++s->count;
}

void callsites_reset() {
  Lock lock;
  g_stats.for_each([](SiteStat &s) {
    const uintptr_t key = s.key;
    std::memset(&s, 0, sizeof(s));
    s.key = key;
  });
}

namespace {

// "module\x1foffset" of a return address (offset relative to the module's load address, as
// in its ELF file: what addr2line takes).
std::string frame_text(uintptr_t pc) {
  Dl_info info;
  link_map *map = nullptr;
  char module[4096] = "?";
  uintptr_t offset = pc;
  if (dladdr1(reinterpret_cast<void *>(pc), &info, reinterpret_cast<void **>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map) {
    offset = pc - map->l_addr;
    if (map->l_name && map->l_name[0]) {
      std::snprintf(module, sizeof(module), "%s", map->l_name);
    } else {
      const ssize_t n = readlink("/proc/self/exe", module, sizeof(module) - 1);
      module[n > 0 ? n : 0] = '\0';
      if (n <= 0) std::snprintf(module, sizeof(module), "?");
    }
  }
  char tail[32];
  std::snprintf(tail, sizeof(tail), "\x1f%llu", static_cast<unsigned long long>(offset));
  return std::string(module) + tail;
}

}  // namespace

void callsites_collect(void (*visit)(const std::string &frames, int call, uint64_t count,
                                     uint64_t bytes, uint64_t time_ns, uint64_t min_ns,
                                     uint64_t max_ns, void *data),
                       void *data) {
  if (!g_stats.ready()) return;
  std::string frames;
  g_stats.for_each([&](SiteStat &s) {
    if (s.count == 0) return;
    const uintptr_t packed = s.key - 1;
    const auto site = static_cast<uint32_t>(packed >> 16);
    const int call = static_cast<int>(packed & 0xffff);
    frames.clear();
    if (site > 0 && site <= g_nsites) {
      const Site *st = g_by_id[site];
      for (int k = 0; k < st->depth; ++k) {
        if (k) frames += '\x1e';
        frames += frame_text(st->pc[k]);
      }
    }
    visit(frames, call, s.count, s.bytes, s.time_ns, s.min_ns, s.max_ns, data);
  });
}

}  // namespace petacomm::prof
