// Start and end of profiling: MPI_Init*/MPI_Finalize/MPI_Abort/MPI_Pcontrol in C and
// Fortran, the region API, signal/exit handlers and the periodic partial-log thread.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
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

#include "fortran.hpp"
#include "petacomm/prof.h"
#include "state.hpp"

namespace petacomm::prof {

bool requests_init();
extern thread_local bool t_main_thread;

namespace {

// ---- command line, host, output path ------------------------------------------------------

void json_escape_into(char *out, size_t cap, size_t &len, const char *text, size_t n) {
  for (size_t i = 0; i < n && len + 8 < cap; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out[len++] = '\\';
      out[len++] = static_cast<char>(c);
    } else if (c < 0x20) {
      len += std::snprintf(out + len, cap - len, "\\u%04x", c);
    } else {
      out[len++] = static_cast<char>(c);
    }
  }
}

void read_command(char *exe_base, size_t exe_cap) {
  char buf[8192];
  ssize_t n = 0;
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY));
  if (fd >= 0) {
    n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
  }
  if (n < 0) n = 0;
  buf[n] = '\0';
  size_t len = 0;
  char *out = g.command_json;
  const size_t cap = sizeof(g.command_json);
  out[len++] = '[';
  int argi = 0;
  const char *first = nullptr, *second = nullptr;
  for (ssize_t i = 0; i < n && len + 16 < cap;) {
    const char *arg = buf + i;
    const size_t alen = std::strlen(arg);
    if (argi == 0) first = arg;
    if (argi == 1) second = arg;
    if (argi++) out[len++] = ',';
    out[len++] = '"';
    json_escape_into(out, cap - 4, len, arg, alen);
    out[len++] = '"';
    i += static_cast<ssize_t>(alen) + 1;
  }
  out[len++] = ']';
  out[len] = '\0';
  // The program's name for the default log name; for interpreters, the script's.
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
    if (*p == '/' || *p == ' ' || *p == ':') *p = '_';
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
}

// ---- signals, exit, periodic partial logs --------------------------------------------------

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT,
                            SIGSEGV, SIGBUS, SIGFPE, SIGILL,  SIGXCPU};
struct sigaction g_old_actions[65];
bool g_installed[65];
std::atomic<bool> g_in_signal{false};

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
      return "signal";
  }
}

void on_signal(int sig, siginfo_t *info, void *context) {
  const int saved_errno = errno;
  if (g.initialised && g.settings.partial_dir[0] && !g.finalised && !g.finalising &&
      !g_in_signal.exchange(true)) {
    ++t_depth;
    write_partial_log(signal_reason(sig), 0);
    --t_depth;
  }
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
  if (g.initialised && g.settings.partial_dir[0] && !g.finalising && !g.finalised) {
    ++t_depth;
    write_partial_log("exit without MPI_Finalize", 1);
    --t_depth;
  }
}

pthread_t g_periodic;
bool g_periodic_running = false;
pthread_mutex_t g_periodic_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_periodic_cond = PTHREAD_COND_INITIALIZER;
bool g_periodic_stop = false;

void *periodic_main(void *) {
  ++t_depth;  // nothing this thread does is the program's
  pthread_mutex_lock(&g_periodic_mutex);
  while (!g_periodic_stop) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += static_cast<time_t>(g.settings.partial_interval_s);
    while (!g_periodic_stop &&
           pthread_cond_timedwait(&g_periodic_cond, &g_periodic_mutex, &deadline) != ETIMEDOUT) {
    }
    if (g_periodic_stop) break;
    pthread_mutex_unlock(&g_periodic_mutex);
    write_partial_log("periodic", 2);
    pthread_mutex_lock(&g_periodic_mutex);
  }
  pthread_mutex_unlock(&g_periodic_mutex);
  return nullptr;
}

void start_periodic() {
  if (g.settings.partial_interval_s == 0) return;
  g_periodic_stop = false;
  // Block signals in the helper so that the program's threads keep receiving them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g_periodic_running = pthread_create(&g_periodic, nullptr, periodic_main, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void stop_periodic() {
  if (!g_periodic_running) return;
  pthread_mutex_lock(&g_periodic_mutex);
  g_periodic_stop = true;
  pthread_cond_broadcast(&g_periodic_cond);
  pthread_mutex_unlock(&g_periodic_mutex);
  pthread_join(g_periodic, nullptr);
  g_periodic_running = false;
}

// ---- region names from MPI_Pcontrol's variadic argument --------------------------------

// Copies a C string from an address that may not be valid (MPI_Pcontrol(1) is often called
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

bool copy_region_name(const char *name, char *out, size_t cap) {
  if (!name) return false;
  size_t n = 0;
  while (n < cap - 1) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(name + n);
    size_t chunk = 4096 - (address & 4095);
    if (chunk > cap - 1 - n) chunk = cap - 1 - n;
    if (!readable(name + n, out + n, chunk)) return false;
    for (size_t i = 0; i < chunk; ++i) {
      const unsigned char c = static_cast<unsigned char>(out[n + i]);
      if (c == 0) return n + i > 0;
      if (c < 0x20 || c == 0x7f) return false;
    }
    n += chunk;
  }
  out[cap - 1] = '\0';  // long name: truncated
  return true;
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
  if (!parse_settings()) return;
  g.init_ns = init_ns;
  PMPI_Query_thread(&g.thread_level);
  const bool memory_ok = table_init() && requests_init();
  caches_init();
  int all_ok = memory_ok ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (g.world_rank == 0)
      std::fprintf(stderr,
                   "petacomm-prof: cannot allocate the call table (%llu bytes); "
                   "profiling is off for this run\n",
                   static_cast<unsigned long long>(g.settings.table_bytes));
    g.initialised = true;
    g.settings.partial_dir[0] = '\0';
    return;
  }
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
  version[0] = '\0';
  PMPI_Get_library_version(version, &len);
  version[MPI_MAX_LIBRARY_VERSION_STRING] = '\0';
  std::snprintf(g.library, sizeof(g.library), "%s", version);
  for (char *p = g.library; *p; ++p)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  char exe_base[256];
  read_command(exe_base, sizeof(exe_base));
  // One output path for all ranks: rank 0 decides.
  if (g.world_rank == 0) choose_output(exe_base);
  int out_len = static_cast<int>(std::strlen(g.settings.output)) + 1;
  PMPI_Bcast(&out_len, 1, MPI_INT, 0, g.comm);
  PMPI_Bcast(g.settings.output, out_len, MPI_CHAR, 0, g.comm);
  std::snprintf(g.settings.partial_dir, sizeof(g.settings.partial_dir), "%s.partial",
                g.settings.output);

  g_hot.threaded = g.thread_level == MPI_THREAD_MULTIPLE;
  clock_calibrate();
  g.nregions = 0;
  g.depth = 0;
  g.t_start = now_ns();
  g.excl_mark = g.t_start;
  region_begin("(program)");
  g.cur_region = 0;
  t_main_thread = true;
  install_signal_handlers();
  static bool exit_registered = false;
  if (!exit_registered) exit_registered = std::atexit(on_exit_without_finalize) == 0;
  start_periodic();
  g_hot.recording = true;
}

void shutdown() {
  if (!g.initialised || g.finalising || g.finalised || !g.table) {
    g.finalised = true;
    return;
  }
  g.finalising = true;
  g_hot.recording = false;
  stop_periodic();
  g.t_end = now_ns();
  regions_close_all(g.t_end);
  requests_flush_incomplete();
  write_final_log();
  remove_partial_log();
  PMPI_Barrier(g.comm);
  if (g.world_rank == 0) rmdir(g.settings.partial_dir);
  PMPI_Comm_free(&g.comm);
  PMPI_Group_free(&g.world_group);
  restore_signal_handlers();
  g.finalised = true;
}

// ---- Fortran support -----------------------------------------------------------------------

namespace {
// MPICH's Fortran bindings set their sentinels (MPI_F_STATUS_IGNORE, the addresses of the
// Fortran MPI_IN_PLACE and MPI_BOTTOM) on their first call, when MPIR_F_NeedInit is set. The
// wrappers compare arguments with them before forwarding: in a program whose first Fortran
// MPI call is not MPI_INIT (MPI initialised from C), do that initialisation first, as the
// binding would.
void mpich_fortran_init() {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire)) return;
  auto *need = static_cast<int *>(dlsym(RTLD_DEFAULT, "MPIR_F_NeedInit"));
  auto init = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "mpirinitf_"));
  if (need && init && *need) {
    init();
    *need = 0;
  }
  done.store(true, std::memory_order_release);
}
}  // namespace

void *fortran_lookup(void **cache, const char *symbol) {
  void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!fn) {
    mpich_fortran_init();
    fn = dlsym(RTLD_NEXT, symbol);
    __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

const void *fortran_buffer(const void *buffer) {
  struct Sentinels {
    const void *in_place[4];
    const void *bottom[4];
    void *const *mpich_in_place;  // MPICH keeps the addresses in variables, set at run time
    void *const *mpich_bottom;
  };
  static Sentinels s = [] {
    Sentinels t{};
    const char *in_place[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                              "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"};
    const char *bottom[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__",
                            "MPI_FORTRAN_BOTTOM"};
    for (int i = 0; i < 4; ++i) {
      t.in_place[i] = dlsym(RTLD_DEFAULT, in_place[i]);
      t.bottom[i] = dlsym(RTLD_DEFAULT, bottom[i]);
    }
    t.mpich_in_place = static_cast<void *const *>(dlsym(RTLD_DEFAULT, "MPIR_F_MPI_IN_PLACE"));
    t.mpich_bottom = static_cast<void *const *>(dlsym(RTLD_DEFAULT, "MPIR_F_MPI_BOTTOM"));
    return t;
  }();
  if (!buffer) return buffer;
  for (int i = 0; i < 4; ++i) {
    if (buffer == s.in_place[i]) return MPI_IN_PLACE;
    if (buffer == s.bottom[i]) return MPI_BOTTOM;
  }
  if (s.mpich_in_place && buffer == *s.mpich_in_place) return MPI_IN_PLACE;
  if (s.mpich_bottom && buffer == *s.mpich_bottom) return MPI_BOTTOM;
  return buffer;
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

extern "C" PETACOMM_PROF_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  if (pp::g.initialised && !pp::g.finalised && pp::g.settings.partial_dir[0]) {
    ++pp::t_depth;
    char reason[64];
    std::snprintf(reason, sizeof(reason), "MPI_Abort(errorcode %d)", errorcode);
    pp::write_partial_log(reason, 1);
    --pp::t_depth;
  }
  return PMPI_Abort(comm, errorcode);
}

namespace {
void pcontrol(int level, const char *name) {
  if (!pp::g.initialised || pp::g.finalising || pp::g.finalised || !pp::g.table) return;
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
template <typename Fn>
Fn next_fortran(void **cache, const char *symbol) {
  return pp::fortran_next<Fn>(cache, symbol);
}

void f_init(void **cache, const char *symbol, MPI_Fint *ierr) {
  auto fn = next_fortran<void (*)(MPI_Fint *)>(cache, symbol);
  if (!fn) {
    *ierr = MPI_ERR_INTERN;
    return;
  }
  const uint64_t t0 = pp::now_ns();
  ++pp::t_depth;
  fn(ierr);
  --pp::t_depth;
  if (*ierr == MPI_SUCCESS && pp::t_depth == 0) pp::startup(pp::now_ns() - t0);
}

void f_init_thread(void **cache, const char *symbol, MPI_Fint *required, MPI_Fint *provided,
                   MPI_Fint *ierr) {
  auto fn = next_fortran<void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *)>(cache, symbol);
  if (!fn) {
    *ierr = MPI_ERR_INTERN;
    return;
  }
  const uint64_t t0 = pp::now_ns();
  ++pp::t_depth;
  fn(required, provided, ierr);
  --pp::t_depth;
  if (*ierr == MPI_SUCCESS && pp::t_depth == 0) pp::startup(pp::now_ns() - t0);
}

void f_finalize(void **cache, const char *symbol, MPI_Fint *ierr) {
  auto fn = next_fortran<void (*)(MPI_Fint *)>(cache, symbol);
  if (!fn) {
    *ierr = MPI_ERR_INTERN;
    return;
  }
  ++pp::t_depth;
  if (pp::t_depth == 1) pp::shutdown();
  fn(ierr);
  --pp::t_depth;
}

void f_abort(void **cache, const char *symbol, MPI_Fint *comm, MPI_Fint *errorcode,
             MPI_Fint *ierr) {
  auto fn = next_fortran<void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *)>(cache, symbol);
  if (!fn) {
    *ierr = MPI_ERR_INTERN;
    return;
  }
  if (pp::g.initialised && !pp::g.finalised && pp::g.settings.partial_dir[0]) {
    ++pp::t_depth;
    char reason[64];
    std::snprintf(reason, sizeof(reason), "MPI_Abort(errorcode %d)", static_cast<int>(*errorcode));
    pp::write_partial_log(reason, 1);
    --pp::t_depth;
  }
  ++pp::t_depth;
  fn(comm, errorcode, ierr);
  --pp::t_depth;
}

void f_pcontrol(void **cache, const char *symbol, MPI_Fint *level) {
  // The Fortran binding takes the level only: 0 pauses recording, other levels resume it.
  auto fn = next_fortran<void (*)(MPI_Fint *)>(cache, symbol);
  if (pp::t_depth == 0) pcontrol(*level == 1 || *level == -1 ? 2 : *level, nullptr);
  if (fn) {
    ++pp::t_depth;
    fn(level);
    --pp::t_depth;
  }
}
}  // namespace

#define PETACOMM_PROF_FORTRAN4(lower, upper, params, impl, args) \
  extern "C" PETACOMM_PROF_EXPORT void lower##_ params {         \
    static void *cache;                                          \
    impl(&cache, #lower "_", args);                              \
  }                                                              \
  extern "C" PETACOMM_PROF_EXPORT void lower##__ params {        \
    static void *cache;                                          \
    impl(&cache, #lower "__", args);                             \
  }                                                              \
  extern "C" PETACOMM_PROF_EXPORT void lower params {            \
    static void *cache;                                          \
    impl(&cache, #lower, args);                                  \
  }                                                              \
  extern "C" PETACOMM_PROF_EXPORT void upper params {            \
    static void *cache;                                          \
    impl(&cache, #upper, args);                                  \
  }

#define PETACOMM_ARGS(...) __VA_ARGS__
PETACOMM_PROF_FORTRAN4(mpi_init, MPI_INIT, (MPI_Fint * ierr), f_init, ierr)
PETACOMM_PROF_FORTRAN4(mpi_init_thread, MPI_INIT_THREAD,
                       (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr), f_init_thread,
                       PETACOMM_ARGS(required, provided, ierr))
PETACOMM_PROF_FORTRAN4(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr), f_finalize, ierr)
PETACOMM_PROF_FORTRAN4(mpi_abort, MPI_ABORT, (MPI_Fint * comm, MPI_Fint *errorcode, MPI_Fint *ierr),
                       f_abort, PETACOMM_ARGS(comm, errorcode, ierr))
PETACOMM_PROF_FORTRAN4(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint * level), f_pcontrol, level)

// ---- the region API (for programs that link the profiler, ctypes and Fortran) --------------

extern "C" PETACOMM_PROF_EXPORT int petacomm_prof_region_begin(const char *name) {
  if (!pp::g_hot.recording || !name || pp::t_depth != 0) return -1;
  pp::region_begin(name);
  return 0;
}

extern "C" PETACOMM_PROF_EXPORT int petacomm_prof_region_end(const char *name) {
  if (!pp::g_hot.recording || !name || pp::t_depth != 0) return -1;
  pp::region_end(name);
  return 0;
}

extern "C" PETACOMM_PROF_EXPORT int petacomm_prof_is_active(void) {
  return pp::g_hot.recording ? 1 : 0;
}

namespace {
void fortran_region(const char *name, size_t len, bool begin) {
  char copy[pp::kRegionNameMax];
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
