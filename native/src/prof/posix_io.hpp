// Support of the generated POSIX I/O wrappers (prof_wrappers_posix.cpp): the program's own
// file I/O is timed as I/O (not MPI), only while profiling, outside MPI calls, and by default
// only on the thread that initialised MPI (MPI libraries' helper threads do socket I/O of
// their own). PETACOMM_PROF_IO=off|main|all.
#pragma once

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <utility>

#include "state.hpp"

namespace petacomm::prof {

extern __thread bool t_main_thread __attribute__((tls_model("initial-exec")));

template <typename F>
void posix_resolve(F &slot, const char *name) {
  if (!slot) slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// What a wrapper returns when the C library lacks the function.
template <typename R>
R posix_missing(R value) {
  errno = ENOSYS;
  return value;
}

inline bool io_on(int call) {
  return g_hot.recording && t_depth == 0 && g.settings.io_mode != kIoModeOff &&
         (t_main_thread || g.settings.io_mode == kIoModeAll) && g_hot.enabled[call];
}

// Times invoke() (calls it makes are not the program's: passed through).
template <typename F>
auto io_timed(F invoke) {
  ++t_depth;
  const uint64_t t0 = now_ns();
  auto result = invoke();
  const uint64_t t1 = now_ns();
  --t_depth;
  return std::pair<decltype(result), uint64_t>(result, t1 - t0);
}

template <typename R>
uint64_t positive(R r) {
  return r > 0 ? static_cast<uint64_t>(r) : 0;
}

// The mode argument of open(path, flags, ...): present with O_CREAT or O_TMPFILE.
inline mode_t mode_arg(int flags, va_list ap) {
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
    return static_cast<mode_t>(va_arg(ap, int));
  return 0;
}

}  // namespace petacomm::prof
