// Start and end of profiling: MPI_Init*/MPI_Finalize/MPI_Abort/MPI_Pcontrol in C and
// Fortran, the region API, and what happens when a rank dies (signal and exit handlers note
// the reason in the rank's live file, which already holds its data: live.cpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "fortran.hpp"
#include "json.hpp"
#include "petacomm/prof.h"
#include "posix_io.hpp"
#include "state.hpp"

namespace petacomm::prof {

namespace {

// ---- command line, host, output path ------------------------------------------------------

// The program's argv (from /proc/self/cmdline: MPI_Init may have changed argv), as JSON and
// as shell words, and the name the default log is named after (for interpreters, the
// script's).
void read_command(char *exe_base, size_t exe_cap) {
  static char buf[8192];
  ssize_t n = 0;
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY));
  if (fd >= 0) {
    n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
  }
  if (n < 0) n = 0;
  buf[n] = '\0';
  if (n > 0 && buf[n - 1] == '\0') --n;  // the last word's terminator
  const std::string json = command_json(buf, static_cast<size_t>(n));
  const std::string shell = command_shell(buf, static_cast<size_t>(n));
  if (json.size() < sizeof(g.command_json))
    std::snprintf(g.command_json, sizeof(g.command_json), "%s", json.c_str());
  else
    std::snprintf(g.command_json, sizeof(g.command_json), "[\"(command too long)\"]");
  std::snprintf(g.command_text, sizeof(g.command_text), "%s", shell.c_str());
  const char *first = n > 0 ? buf : nullptr;
  const char *second =
      first && std::strlen(first) < static_cast<size_t>(n) ? buf + std::strlen(first) + 1 : nullptr;
  const char *name = first ? first : "program";
  const char *base = std::strrchr(name, '/');
  base = base ? base + 1 : name;
  if (second && (std::strncmp(base, "python", 6) == 0 || std::strncmp(base, "pypy", 4) == 0) &&
      second[0] != '-') {
    const char *sb = std::strrchr(second, '/');
    base = sb ? sb + 1 : second;
  }
  std::snprintf(exe_base, exe_cap, "%s", base);
  for (char *p = exe_base; *p; ++p)
    if (*p == '/' || *p == ' ' || *p == ':' || static_cast<unsigned char>(*p) < 0x20) *p = '_';
}

void choose_output(const char *exe_base) {
  char *out = g.settings.output;
  const size_t cap = sizeof(g.settings.output);
  char name[512];
  const time_t now = time(nullptr);
  struct tm tmv;
  localtime_r(&now, &tmv);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tmv);
  std::snprintf(name, sizeof(name), "petacomm-prof.%s.%s.%d.json", exe_base, stamp, g.pid);
  struct stat st;
  const size_t len = std::strlen(out);
  if (len == 0) {
    std::snprintf(out, cap, "%s", name);
  } else if (out[len - 1] == '/' || (stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
    char dir[4096];
    std::snprintf(dir, sizeof(dir), "%s", out);
    std::snprintf(out, cap, "%s%s%s", dir, dir[std::strlen(dir) - 1] == '/' ? "" : "/", name);
  }
  if (out[0] != '/') {
    char cwd[2048];
    if (getcwd(cwd, sizeof(cwd))) {
      char rel[4096];
      std::snprintf(rel, sizeof(rel), "%s", out);
      std::snprintf(out, cap, "%s/%s", cwd, rel);
    }
  }
  std::snprintf(g.run_id, sizeof(g.run_id), "%d-%lld", g.pid, static_cast<long long>(now));
}

// ---- signals and exit ---------------------------------------------------------------------

// SIGCONT is what Open MPI 5's launcher sends first when it kills a job (then SIGTERM and,
// milliseconds later, SIGKILL): it only refreshes the time of the rank's data.
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV,
                            SIGBUS,  SIGFPE, SIGILL, SIGXCPU, SIGCONT};
struct sigaction g_old_actions[65];
bool g_installed[65];

const char *signal_reason(int sig) {
  switch (sig) {
    case SIGTERM:
      return "signal SIGTERM";
    case SIGINT:
      return "signal SIGINT";
    case SIGHUP:
      return "signal SIGHUP";
    case SIGQUIT:
      return "signal SIGQUIT";
    case SIGABRT:
      return "signal SIGABRT";
    case SIGSEGV:
      return "signal SIGSEGV";
    case SIGBUS:
      return "signal SIGBUS";
    case SIGFPE:
      return "signal SIGFPE";
    case SIGILL:
      return "signal SIGILL";
    case SIGXCPU:
      return "signal SIGXCPU";
    default:
      return nullptr;
  }
}

void on_signal(int sig, siginfo_t *info, void *context) {
  const int saved_errno = errno;
  if (g.initialised && !g.finalised) live_mark(signal_reason(sig), sig);
  errno = saved_errno;
  // Hand the signal on: to the handler that was there before us, or the default action.
  if (sig > 0 && sig < 65 && g_installed[sig]) {
    const struct sigaction &old = g_old_actions[sig];
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
      old.sa_sigaction(sig, info, context);
      return;
    }
    if (old.sa_handler == SIG_IGN) return;
    if (old.sa_handler != SIG_DFL) {
      old.sa_handler(sig);
      return;
    }
    if (sig == SIGCONT) return;  // its default action (continue) has happened already
    sigaction(sig, &old, nullptr);
    g_installed[sig] = false;
    raise(sig);
  }
}

void install_signal_handlers() {
  for (const int sig : kSignals) {
    struct sigaction current;
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
    struct sigaction mine;
    std::memset(&mine, 0, sizeof(mine));
    mine.sa_sigaction = on_signal;
    mine.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&mine.sa_mask);
    if (sigaction(sig, &mine, &g_old_actions[sig]) == 0) g_installed[sig] = true;
  }
}

void restore_signal_handlers() {
  for (const int sig : kSignals) {
    if (!g_installed[sig]) continue;
    struct sigaction current;
    // Only where ours is still installed (the program may have replaced it).
    if (sigaction(sig, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
        current.sa_sigaction == on_signal)
      sigaction(sig, &g_old_actions[sig], nullptr);
    g_installed[sig] = false;
  }
}

void on_exit_without_finalize() {
  if (g.initialised && !g.finalising && !g.finalised) live_mark("exit without MPI_Finalize");
}

// ---- region names from MPI_Pcontrol's variadic argument --------------------------------

// Copies bytes from an address that may not be valid (MPI_Pcontrol(1) is often called
// without a name, leaving garbage in the variadic slot): never faults.
bool readable(const void *address, void *out, size_t n) {
  struct iovec local = {out, n};
  struct iovec remote = {const_cast<void *>(address), n};
  const ssize_t got = syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0);
  if (got == static_cast<ssize_t>(n)) return true;
  if (got >= 0 || (errno != ENOSYS && errno != EPERM)) return false;
  // process_vm_readv unavailable: a pipe refuses (EFAULT) to read from a bad address.
  int fds[2];
  if (pipe(fds) != 0) return false;
  const bool ok = syscall(SYS_write, fds[1], address, n) == static_cast<ssize_t>(n);
  if (ok) syscall(SYS_read, fds[0], out, n);
  close(fds[0]);
  close(fds[1]);
  return ok;
}

// A region name from a pointer that may be garbage: accepted only when it points to a
// NUL-terminated string of at most kNameScan bytes without control characters (bytes that
// are not UTF-8 are kept, and escaped in the logs); stored truncated to kRegionNameMax - 1
// bytes, at a character boundary.
constexpr size_t kNameScan = 256;
bool copy_region_name(const char *name, char *out, size_t cap) {
  if (!name) return false;
  char text[kNameScan];
  size_t n = 0;
  bool terminated = false;
  while (n < kNameScan && !terminated) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(name + n);
    size_t chunk = 4096 - (address & 4095);
    if (chunk > kNameScan - n) chunk = kNameScan - n;
    if (!readable(name + n, text + n, chunk)) return false;
    for (size_t i = 0; i < chunk; ++i) {
      if (text[n + i] == '\0') {
        terminated = true;
        n += i;
        break;
      }
    }
    if (!terminated) n += chunk;
  }
  if (!terminated || n == 0) return false;
  const auto *p = reinterpret_cast<const unsigned char *>(text);
  size_t keep = 0;
  for (size_t i = 0; i < n;) {
    if (p[i] < 0x20 || p[i] == 0x7f) return false;
    int len = utf8_sequence(p + i, n - i);
    if (len == 0) len = 1;  // not UTF-8: one byte
    if (i + static_cast<size_t>(len) <= cap - 1) keep = i + static_cast<size_t>(len);
    i += static_cast<size_t>(len);
  }
  std::memcpy(out, text, keep);
  out[keep] = '\0';
  return true;
}

// One lowest rank among those for which `mine` holds prints a message.
bool lowest_with(bool mine, MPI_Comm comm) {
  int candidate = mine ? g.world_rank : g.world_size, lowest = g.world_size;
  PMPI_Allreduce(&candidate, &lowest, 1, MPI_INT, MPI_MIN, comm);
  return mine && lowest == g.world_rank;
}

}  // namespace

// ---- start and end -----------------------------------------------------------------------

void startup(uint64_t init_ns) {
  if (g.initialised) return;
  int ready = 0;
  PMPI_Initialized(&ready);
  if (!ready) return;
  g.initialised = true;
  g.pid = static_cast<int>(getpid());
  PMPI_Comm_rank(MPI_COMM_WORLD, &g.world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &g.world_size);
  char error[1024];
  const bool settings_ok = parse_settings(error, sizeof(error));
  // All ranks profile, or none: 0 profile, 1 disabled, 2 a bad setting somewhere.
  int mine = settings_ok ? (g.settings.disable ? 1 : 0) : 2, worst = 0;
  PMPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst == 2 && lowest_with(!settings_ok, MPI_COMM_WORLD))
    std::fprintf(stderr, "petacomm-prof: error: %s; profiling is off for this run\n", error);
  if (worst != 0) return;

  PMPI_Comm_group(MPI_COMM_WORLD, &g.world_group);
  PMPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
  PMPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);  // our own traffic never aborts the job
  MPI_Comm node;
  PMPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0;
  PMPI_Comm_rank(node, &node_rank);
  int leader = node_rank == 0 ? 1 : 0;
  PMPI_Allreduce(&leader, &g.nodes, 1, MPI_INT, MPI_SUM, g.comm);
  PMPI_Comm_free(&node);
  gethostname(g.host, sizeof(g.host) - 1);
  // The MPI library may write up to MPI_MAX_LIBRARY_VERSION_STRING characters (8192 with
  // MPICH, which includes its whole configure line): read it whole, keep what fits the log.
  static char version[MPI_MAX_LIBRARY_VERSION_STRING + 1];
  int len = 0;
  std::memset(version, 0, sizeof(version));
  PMPI_Get_library_version(version, &len);
  if (len < 0 || len > MPI_MAX_LIBRARY_VERSION_STRING) len = MPI_MAX_LIBRARY_VERSION_STRING;
  version[len] = '\0';  // the count some libraries give includes the terminating NUL
  std::snprintf(g.library, sizeof(g.library), "%s", version);
  for (char *p = g.library; *p; ++p)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  for (size_t n = std::strlen(g.library); n > 0 && g.library[n - 1] == ' '; --n)
    g.library[n - 1] = '\0';
  PMPI_Query_thread(&g.thread_level);
  g_hot.threaded = g.thread_level == MPI_THREAD_MULTIPLE;
  char exe_base[256];
  read_command(exe_base, sizeof(exe_base));
  // One output path for all ranks: rank 0 decides.
  if (g.world_rank == 0) choose_output(exe_base);
  int out_len = static_cast<int>(std::strlen(g.settings.output)) + 1;
  PMPI_Bcast(&out_len, 1, MPI_INT, 0, g.comm);
  PMPI_Bcast(g.settings.output, out_len, MPI_CHAR, 0, g.comm);
  PMPI_Bcast(g.run_id, sizeof(g.run_id), MPI_CHAR, 0, g.comm);
  std::snprintf(g.partial_dir, sizeof(g.partial_dir), "%s.partial", g.settings.output);

  clock_calibrate(g.settings.tsc);
  g.clock_at_unix[0] = now_ns();
  g.clock_at_unix[1] = static_cast<uint64_t>(time(nullptr));
  uint64_t entries = 16;
  while (entries * 2 * sizeof(Entry) <= g.settings.table_bytes) entries *= 2;
  const bool memory_ok = live_create(entries, error, sizeof(error)) && requests_init() &&
                         caches_init() && callsites_init(error, sizeof(error));
  int all_ok = memory_ok ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, g.comm);
  if (!all_ok) {
    if (lowest_with(!memory_ok, g.comm))
      std::fprintf(stderr, "petacomm-prof: %s; profiling is off for this run\n",
                   memory_ok ? "out of memory" : error);
    return;
  }
  if (lowest_with(g.live_note[0] != '\0', g.comm))
    std::fprintf(stderr,
                 "petacomm-prof: warning: no partial logs (%s): a run that dies leaves no log\n",
                 g.live_note);

  Live &l = *g.live;
  const uint64_t now = now_ns();
  l.t_start_ns = now;
  l.heartbeat_ns = now;
  l.init_ns = init_ns;
  regions_start(now);
  t_main_thread = true;
  install_signal_handlers();
  static bool exit_registered = false;
  if (!exit_registered) exit_registered = std::atexit(on_exit_without_finalize) == 0;
  live_heartbeat_start();
  g_hot.callsite_depth = static_cast<int>(g.settings.callsite_depth);
  g_hot.tracking = true;
  g_hot.recording = true;
}

void shutdown() {
  if (!g.initialised || g.finalising || g.finalised || !g.live) {
    g.finalised = true;
    return;
  }
  g.finalising = true;
  g_hot.recording = false;
  g_hot.tracking = false;
  live_heartbeat_stop();
  g.t_end = now_ns();
  regions_close_all(g.t_end);
  requests_flush_incomplete();
  int written = write_final_log() ? 1 : 0;
  PMPI_Bcast(&written, 1, MPI_INT, 0, g.comm);
  live_finished(written != 0);
  PMPI_Barrier(g.comm);
  if (g.world_rank == 0 && written) rmdir(g.partial_dir);  // only when empty
  PMPI_Comm_free(&g.comm);
  PMPI_Group_free(&g.world_group);
  restore_signal_handlers();
  g.finalised = true;
}

}  // namespace petacomm::prof

namespace pp = petacomm::prof;

// ---- C lifecycle wrappers ------------------------------------------------------------------

extern "C" PETACOMM_PROF_EXPORT int MPI_Init(int *argc, char ***argv) {
  const uint64_t t0 = pp::now_ns();
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS && pp::t_depth == 0) pp::startup(pp::now_ns() - t0);
  return rc;
}

extern "C" PETACOMM_PROF_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required,
                                                    int *provided) {
  const uint64_t t0 = pp::now_ns();
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && pp::t_depth == 0) pp::startup(pp::now_ns() - t0);
  return rc;
}

extern "C" PETACOMM_PROF_EXPORT int MPI_Finalize(void) {
  if (pp::t_depth == 0) {
    ++pp::t_depth;
    pp::shutdown();
    --pp::t_depth;
  }
  return PMPI_Finalize();
}

namespace {
void note_abort(int errorcode) {
  if (!pp::g.initialised || pp::g.finalised) return;
  char reason[64];
  std::snprintf(reason, sizeof(reason), "MPI_Abort(errorcode %d)", errorcode);
  pp::live_mark(reason);
}

// MPI_Pcontrol(3): a snapshot log of what was recorded so far (collective: every rank calls
// it), written as the final log is, to OUTPUT.snapshot-K.json; recording goes on.
void snapshot() {
  using namespace pp;
  static pp::Live saved_live;
  static pp::Region saved_regions[pp::kMaxRegions];
  char saved_output[sizeof(g.settings.output)];
  std::memcpy(&saved_live, g.live, sizeof(saved_live));
  std::memcpy(saved_regions, g.regions, sizeof(saved_regions));
  std::memcpy(saved_output, g.settings.output, sizeof(saved_output));
  const bool banner = g.settings.banner;
  ++g.snapshot_count;
  const size_t len = std::strlen(saved_output);
  const bool json = len > 5 && std::strcmp(saved_output + len - 5, ".json") == 0;
  std::snprintf(g.settings.output, sizeof(g.settings.output), "%.*s.snapshot-%d.json",
                static_cast<int>(json ? len - 5 : len), saved_output, g.snapshot_count);
  g.settings.banner = false;
  g.snapshot = g.snapshot_count;
  // The final log's code closes the open regions: it works on the state, restored after.
  g.t_end = now_ns();
  regions_close_all(g.t_end);
  write_final_log();
  g.snapshot = 0;
  g.settings.banner = banner;
  std::memcpy(g.settings.output, saved_output, sizeof(saved_output));
  std::memcpy(g.regions, saved_regions, sizeof(saved_regions));
  std::memcpy(g.live, &saved_live, sizeof(saved_live));
}

// MPI_Pcontrol(4): forgets what was recorded so far (this rank): the table, call sites,
// counters and region times start again from now; open regions stay open.
void reset_data() {
  using namespace pp;
  {
    Lock lock;
    Live &l = *g.live;
    const uint64_t now = now_ns();
    table_reset();
    l.events = l.coarsened_peer = l.coarsened_size = l.coarsened_call = 0;
    l.mpi_ns = l.io_ns = 0;
    l.requests_untracked = l.region_errors = 0;
    for (int r = 0; r < l.nregions; ++r) {
      Region &reg = g.regions[r];
      reg.entries = reg.open_depth > 0 ? 1 : 0;
      reg.wall_ns = reg.mpi_ns = reg.io_ns = 0;
      reg.excl_wall_ns = reg.excl_mpi_ns = reg.excl_io_ns = reg.lbst_ns = 0;
      reg.open_t = now;
      reg.open_mpi = reg.open_io = 0;
    }
    l.excl_mark = now;
    l.t_start_ns = now;
    g.last_was_barrier = false;
  }
  callsites_reset();
}

// MPI_Pcontrol levels: 0 pauses recording; 1 with a name opens a region, -1 with a name
// closes it; 3 writes a snapshot log (collective), 4 resets what was recorded (3 and 4 leave
// recording paused or not as it was); any other call (2, or 1/-1 without a readable name)
// resumes recording.
void pcontrol(int level, const char *name) {
  if (!pp::g.initialised || pp::g.finalising || pp::g.finalised || !pp::g.live) return;
  if (level == 3) {
    snapshot();
    return;
  }
  if (level == 4) {
    reset_data();
    return;
  }
  if (level == 0) {
    pp::g_hot.recording = false;
    return;
  }
  pp::g_hot.recording = true;
  char copy[pp::kRegionNameMax];
  if ((level == 1 || level == -1) && pp::copy_region_name(name, copy, sizeof(copy))) {
    if (level == 1)
      pp::region_begin(copy);
    else
      pp::region_end(copy);
  }
}
}  // namespace

extern "C" PETACOMM_PROF_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  note_abort(errorcode);
  return PMPI_Abort(comm, errorcode);
}

extern "C" PETACOMM_PROF_EXPORT int MPI_Pcontrol(const int level, ...) {
  const char *name = nullptr;
  if (level == 1 || level == -1) {
    va_list ap;
    va_start(ap, level);
    name = va_arg(ap, const char *);
    va_end(ap);
  }
  if (pp::t_depth == 0) pcontrol(level, name);
  return PMPI_Pcontrol(level);
}

// ---- Fortran lifecycle wrappers --------------------------------------------------------

namespace {
// The next definition of SYMBOL, or null after setting the ierror to MPI_ERR_INTERN. IERR
// becomes OWN when the caller left ierror out (`use mpi_f08`: it is optional there).
template <typename Fn>
Fn next_fortran(void **cache, const char *symbol, MPI_Fint *&ierr, MPI_Fint *own) {
  if (!ierr) ierr = own;
  const Fn fn = pp::fortran_next<Fn>(cache, symbol);
  if (!fn) *ierr = MPI_ERR_INTERN;
  return fn;
}

void f_init(void **cache, const char *symbol, MPI_Fint *ierr) {
  MPI_Fint own_ierr;
  auto fn = next_fortran<void (*)(MPI_Fint *)>(cache, symbol, ierr, &own_ierr);
  if (!fn) return;
  const uint64_t t0 = pp::now_ns();
  ++pp::t_depth;
  fn(ierr);
  --pp::t_depth;
  if (*ierr == MPI_SUCCESS && pp::t_depth == 0) pp::startup(pp::now_ns() - t0);
}

void f_init_thread(void **cache, const char *symbol, MPI_Fint *required, MPI_Fint *provided,
                   MPI_Fint *ierr) {
  MPI_Fint own_ierr;
  auto fn =
      next_fortran<void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *)>(cache, symbol, ierr, &own_ierr);
  if (!fn) return;
  const uint64_t t0 = pp::now_ns();
  ++pp::t_depth;
  fn(required, provided, ierr);
  --pp::t_depth;
  if (*ierr == MPI_SUCCESS && pp::t_depth == 0) pp::startup(pp::now_ns() - t0);
}

void f_finalize(void **cache, const char *symbol, MPI_Fint *ierr) {
  MPI_Fint own_ierr;
  auto fn = next_fortran<void (*)(MPI_Fint *)>(cache, symbol, ierr, &own_ierr);
  if (!fn) return;
  ++pp::t_depth;
  if (pp::t_depth == 1) pp::shutdown();
  fn(ierr);
  --pp::t_depth;
}

void f_abort(void **cache, const char *symbol, MPI_Fint *comm, MPI_Fint *errorcode,
             MPI_Fint *ierr) {
  MPI_Fint own_ierr;
  auto fn =
      next_fortran<void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *)>(cache, symbol, ierr, &own_ierr);
  if (!fn) return;
  note_abort(static_cast<int>(*errorcode));
  ++pp::t_depth;
  fn(comm, errorcode, ierr);
  --pp::t_depth;
}

void f_pcontrol(void **cache, const char *symbol, MPI_Fint *level) {
  // The Fortran binding takes the level only: 0 pauses recording, 3 and 4 snapshot and reset,
  // other levels resume it.
  auto fn = pp::fortran_next<void (*)(MPI_Fint *)>(cache, symbol);
  if (pp::t_depth == 0) pcontrol(*level == 0 || *level == 3 || *level == 4 ? *level : 2, nullptr);
  if (fn) {
    ++pp::t_depth;
    fn(level);
    --pp::t_depth;
  }
}
}  // namespace

// The arguments forwarded to IMPL come last (variadic: there may be several).
#define PETACOMM_PROF_FORTRAN4(lower, upper, params, impl, ...) \
  extern "C" PETACOMM_PROF_EXPORT void lower##_ params {        \
    static void *cache;                                         \
    impl(&cache, #lower "_", __VA_ARGS__);                      \
  }                                                             \
  extern "C" PETACOMM_PROF_EXPORT void lower##__ params {       \
    static void *cache;                                         \
    impl(&cache, #lower "__", __VA_ARGS__);                     \
  }                                                             \
  extern "C" PETACOMM_PROF_EXPORT void lower params {           \
    static void *cache;                                         \
    impl(&cache, #lower, __VA_ARGS__);                          \
  }                                                             \
  extern "C" PETACOMM_PROF_EXPORT void upper params {           \
    static void *cache;                                         \
    impl(&cache, #upper, __VA_ARGS__);                          \
  }

// mpif.h / `use mpi` (mpi_init_, ...) and `use mpi_f08` (mpi_init_f08_, ...: the same
// arguments, ierror optional).
#define PETACOMM_PROF_FORTRAN8(lower, upper, params, impl, ...)   \
  PETACOMM_PROF_FORTRAN4(lower, upper, params, impl, __VA_ARGS__) \
  PETACOMM_PROF_FORTRAN4(lower##_f08, upper##_F08, params, impl, __VA_ARGS__)

PETACOMM_PROF_FORTRAN8(mpi_init, MPI_INIT, (MPI_Fint * ierr), f_init, ierr)
PETACOMM_PROF_FORTRAN8(mpi_init_thread, MPI_INIT_THREAD,
                       (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr), f_init_thread,
                       required, provided, ierr)
PETACOMM_PROF_FORTRAN8(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr), f_finalize, ierr)
PETACOMM_PROF_FORTRAN8(mpi_abort, MPI_ABORT, (MPI_Fint * comm, MPI_Fint *errorcode, MPI_Fint *ierr),
                       f_abort, comm, errorcode, ierr)
PETACOMM_PROF_FORTRAN8(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint * level), f_pcontrol, level)

// ---- the region API (for programs that link the profiler, Python's ctypes, Fortran) ------

extern "C" PETACOMM_PROF_EXPORT int petacomm_prof_region_begin(const char *name) {
  char copy[pp::kRegionNameMax];
  if (!pp::g_hot.recording || pp::t_depth != 0 || !pp::copy_region_name(name, copy, sizeof(copy)))
    return -1;
  pp::region_begin(copy);
  return 0;
}

extern "C" PETACOMM_PROF_EXPORT int petacomm_prof_region_end(const char *name) {
  char copy[pp::kRegionNameMax];
  if (!pp::g_hot.recording || pp::t_depth != 0 || !pp::copy_region_name(name, copy, sizeof(copy)))
    return -1;
  pp::region_end(copy);
  return 0;
}

extern "C" PETACOMM_PROF_EXPORT int petacomm_prof_is_active(void) {
  return pp::g_hot.recording ? 1 : 0;
}

namespace {
void fortran_region(const char *name, size_t len, bool begin) {
  char copy[256];  // names longer than a region name are cut at a character boundary later
  while (len > 0 && name[len - 1] == ' ') --len;  // Fortran strings are blank-padded
  if (len >= sizeof(copy)) len = sizeof(copy) - 1;
  std::memcpy(copy, name, len);
  copy[len] = '\0';
  if (begin)
    petacomm_prof_region_begin(copy);
  else
    petacomm_prof_region_end(copy);
}
}  // namespace

extern "C" PETACOMM_PROF_EXPORT void petacomm_prof_region_begin_(const char *name, size_t len) {
  fortran_region(name, len, true);
}
extern "C" PETACOMM_PROF_EXPORT void petacomm_prof_region_end_(const char *name, size_t len) {
  fortran_region(name, len, false);
}
