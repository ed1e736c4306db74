// POSIX I/O interposition: time and bytes of the program's own file I/O (counted as I/O,
// not MPI). Only recorded while profiling, outside MPI calls, and by default only on the
// thread that initialised MPI (MPI libraries' helper threads do socket I/O of their own).
// PETACOMM_PROF_IO=off|main|all.
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

thread_local bool t_main_thread __attribute__((tls_model("initial-exec"))) = false;

namespace {

struct Real {
  int (*open)(const char *, int, ...);
  int (*open64)(const char *, int, ...);
  int (*openat)(int, const char *, int, ...);
  int (*creat)(const char *, mode_t);
  int (*close)(int);
  ssize_t (*read)(int, void *, size_t);
  ssize_t (*write)(int, const void *, size_t);
  ssize_t (*pread)(int, void *, size_t, off_t);
  ssize_t (*pwrite)(int, const void *, size_t, off_t);
  ssize_t (*pread64)(int, void *, size_t, off64_t);
  ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
  ssize_t (*readv)(int, const struct iovec *, int);
  ssize_t (*writev)(int, const struct iovec *, int);
  int (*fsync)(int);
  int (*fdatasync)(int);
  FILE *(*fopen)(const char *, const char *);
  int (*fclose)(FILE *);
  size_t (*fread)(void *, size_t, size_t, FILE *);
  size_t (*fwrite)(const void *, size_t, size_t, FILE *);
  int (*open_2)(const char *, int);
  int (*open64_2)(const char *, int);
  ssize_t (*read_chk)(int, void *, size_t, size_t);
  size_t (*fread_chk)(void *, size_t, size_t, size_t, FILE *);
};
Real real;

template <typename F>
void resolve(F &slot, const char *name) {
  if (!slot) slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor)) void resolve_all() {
  resolve(real.open, "open");
  resolve(real.open64, "open64");
  resolve(real.openat, "openat");
  resolve(real.creat, "creat");
  resolve(real.close, "close");
  resolve(real.read, "read");
  resolve(real.write, "write");
  resolve(real.pread, "pread");
  resolve(real.pwrite, "pwrite");
  resolve(real.pread64, "pread64");
  resolve(real.pwrite64, "pwrite64");
  resolve(real.readv, "readv");
  resolve(real.writev, "writev");
  resolve(real.fsync, "fsync");
  resolve(real.fdatasync, "fdatasync");
  resolve(real.fopen, "fopen");
  resolve(real.fclose, "fclose");
  resolve(real.fread, "fread");
  resolve(real.fwrite, "fwrite");
  resolve(real.open_2, "__open_2");
  resolve(real.open64_2, "__open64_2");
  resolve(real.read_chk, "__read_chk");
  resolve(real.fread_chk, "__fread_chk");
}

inline bool io_on(int call) {
  return g_hot.recording && t_depth == 0 && g.settings.io_mode != 0 &&
         (t_main_thread || g.settings.io_mode == 2) && g_hot.enabled[call];
}

// Times fn() and records it; keeps errno as the real call left it.
template <typename F>
auto timed(int call, F fn) {
  ++t_depth;
  const uint64_t t0 = now_ns();
  auto result = fn();
  const uint64_t t1 = now_ns();
  --t_depth;
  return std::pair<decltype(result), uint64_t>(result, t1 - t0);
}

template <typename R>
uint64_t positive(R r) {
  return r > 0 ? static_cast<uint64_t>(r) : 0;
}

mode_t mode_arg(int flags, va_list ap) {
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
    return static_cast<mode_t>(va_arg(ap, int));
  return 0;
}

int do_open(int call, int (*fn)(const char *, int, ...), const char *path, int flags, mode_t mode,
            long sysno) {
  auto invoke = [&]() -> int {
    if (fn) return fn(path, flags, mode);
    return static_cast<int>(syscall(sysno, AT_FDCWD, path, flags, mode));
  };
  if (!io_on(call)) return invoke();
  const auto [r, ns] = timed(call, invoke);
  const int saved = errno;
  record_io(call, 0, ns);
  errno = saved;
  return r;
}

template <typename R, typename F>
R io_call(int call, uint64_t (*bytes)(R), F invoke) {
  if (!io_on(call)) return invoke();
  const auto [r, ns] = timed(call, invoke);
  const int saved = errno;
  record_io(call, bytes(r), ns);
  errno = saved;
  return r;
}

uint64_t no_bytes_int(int) { return 0; }
uint64_t bytes_ssize(ssize_t r) { return positive(r); }

}  // namespace
}  // namespace petacomm::prof

namespace pp = petacomm::prof;

extern "C" {

PETACOMM_PROF_EXPORT int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = pp::mode_arg(flags, ap);
  va_end(ap);
  pp::resolve(pp::real.open, "open");
  return pp::do_open(pp::kopen, pp::real.open, path, flags, mode, SYS_openat);
}

PETACOMM_PROF_EXPORT int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = pp::mode_arg(flags, ap);
  va_end(ap);
  pp::resolve(pp::real.open64, "open64");
  return pp::do_open(pp::kopen64, pp::real.open64, path, flags, mode, SYS_openat);
}

PETACOMM_PROF_EXPORT int __open_2(const char *path, int flags) {
  pp::resolve(pp::real.open_2, "__open_2");
  auto invoke = [&]() -> int {
    if (pp::real.open_2) return pp::real.open_2(path, flags);
    return static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, flags, 0));
  };
  return pp::io_call<int>(pp::kopen, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT int __open64_2(const char *path, int flags) {
  pp::resolve(pp::real.open64_2, "__open64_2");
  auto invoke = [&]() -> int {
    if (pp::real.open64_2) return pp::real.open64_2(path, flags);
    return static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, flags, 0));
  };
  return pp::io_call<int>(pp::kopen64, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = pp::mode_arg(flags, ap);
  va_end(ap);
  pp::resolve(pp::real.openat, "openat");
  auto invoke = [&]() -> int {
    if (pp::real.openat) return pp::real.openat(dirfd, path, flags, mode);
    return static_cast<int>(syscall(SYS_openat, dirfd, path, flags, mode));
  };
  return pp::io_call<int>(pp::kopenat, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT int creat(const char *path, mode_t mode) {
  pp::resolve(pp::real.creat, "creat");
  auto invoke = [&]() -> int {
    if (pp::real.creat) return pp::real.creat(path, mode);
    return static_cast<int>(
        syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode));
  };
  return pp::io_call<int>(pp::kcreat, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT int close(int fd) {
  pp::resolve(pp::real.close, "close");
  auto invoke = [&]() -> int {
    return pp::real.close ? pp::real.close(fd) : static_cast<int>(syscall(SYS_close, fd));
  };
  return pp::io_call<int>(pp::kclose, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  pp::resolve(pp::real.read, "read");
  auto invoke = [&]() -> ssize_t {
    return pp::real.read ? pp::real.read(fd, buf, n) : syscall(SYS_read, fd, buf, n);
  };
  return pp::io_call<ssize_t>(pp::kread, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  pp::resolve(pp::real.read_chk, "__read_chk");
  auto invoke = [&]() -> ssize_t {
    return pp::real.read_chk ? pp::real.read_chk(fd, buf, n, buflen)
                             : syscall(SYS_read, fd, buf, n);
  };
  return pp::io_call<ssize_t>(pp::kread, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  pp::resolve(pp::real.write, "write");
  auto invoke = [&]() -> ssize_t {
    return pp::real.write ? pp::real.write(fd, buf, n) : syscall(SYS_write, fd, buf, n);
  };
  return pp::io_call<ssize_t>(pp::kwrite, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t offset) {
  pp::resolve(pp::real.pread, "pread");
  auto invoke = [&]() -> ssize_t {
    return pp::real.pread ? pp::real.pread(fd, buf, n, offset)
                          : syscall(SYS_pread64, fd, buf, n, offset);
  };
  return pp::io_call<ssize_t>(pp::kpread, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset) {
  pp::resolve(pp::real.pwrite, "pwrite");
  auto invoke = [&]() -> ssize_t {
    return pp::real.pwrite ? pp::real.pwrite(fd, buf, n, offset)
                           : syscall(SYS_pwrite64, fd, buf, n, offset);
  };
  return pp::io_call<ssize_t>(pp::kpwrite, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t offset) {
  pp::resolve(pp::real.pread64, "pread64");
  auto invoke = [&]() -> ssize_t {
    return pp::real.pread64 ? pp::real.pread64(fd, buf, n, offset)
                            : syscall(SYS_pread64, fd, buf, n, offset);
  };
  return pp::io_call<ssize_t>(pp::kpread64, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t offset) {
  pp::resolve(pp::real.pwrite64, "pwrite64");
  auto invoke = [&]() -> ssize_t {
    return pp::real.pwrite64 ? pp::real.pwrite64(fd, buf, n, offset)
                             : syscall(SYS_pwrite64, fd, buf, n, offset);
  };
  return pp::io_call<ssize_t>(pp::kpwrite64, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n) {
  pp::resolve(pp::real.readv, "readv");
  auto invoke = [&]() -> ssize_t {
    return pp::real.readv ? pp::real.readv(fd, iov, n) : syscall(SYS_readv, fd, iov, n);
  };
  return pp::io_call<ssize_t>(pp::kreadv, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
  pp::resolve(pp::real.writev, "writev");
  auto invoke = [&]() -> ssize_t {
    return pp::real.writev ? pp::real.writev(fd, iov, n) : syscall(SYS_writev, fd, iov, n);
  };
  return pp::io_call<ssize_t>(pp::kwritev, pp::bytes_ssize, invoke);
}

PETACOMM_PROF_EXPORT int fsync(int fd) {
  pp::resolve(pp::real.fsync, "fsync");
  auto invoke = [&]() -> int {
    return pp::real.fsync ? pp::real.fsync(fd) : static_cast<int>(syscall(SYS_fsync, fd));
  };
  return pp::io_call<int>(pp::kfsync, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT int fdatasync(int fd) {
  pp::resolve(pp::real.fdatasync, "fdatasync");
  auto invoke = [&]() -> int {
    return pp::real.fdatasync ? pp::real.fdatasync(fd)
                              : static_cast<int>(syscall(SYS_fdatasync, fd));
  };
  return pp::io_call<int>(pp::kfdatasync, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT FILE *fopen(const char *path, const char *mode) {
  pp::resolve(pp::real.fopen, "fopen");
  if (!pp::real.fopen) {
    errno = ENOSYS;
    return nullptr;
  }
  if (!pp::io_on(pp::kfopen)) return pp::real.fopen(path, mode);
  const auto [r, ns] = pp::timed(pp::kfopen, [&] { return pp::real.fopen(path, mode); });
  const int saved = errno;
  pp::record_io(pp::kfopen, 0, ns);
  errno = saved;
  return r;
}

PETACOMM_PROF_EXPORT int fclose(FILE *stream) {
  pp::resolve(pp::real.fclose, "fclose");
  if (!pp::real.fclose) {
    errno = ENOSYS;
    return EOF;
  }
  auto invoke = [&]() -> int { return pp::real.fclose(stream); };
  return pp::io_call<int>(pp::kfclose, pp::no_bytes_int, invoke);
}

PETACOMM_PROF_EXPORT size_t fread(void *ptr, size_t size, size_t n, FILE *stream) {
  pp::resolve(pp::real.fread, "fread");
  if (!pp::real.fread) return 0;
  if (!pp::io_on(pp::kfread)) return pp::real.fread(ptr, size, n, stream);
  const auto [r, ns] = pp::timed(pp::kfread, [&] { return pp::real.fread(ptr, size, n, stream); });
  const int saved = errno;
  pp::record_io(pp::kfread, static_cast<uint64_t>(r) * size, ns);
  errno = saved;
  return r;
}

PETACOMM_PROF_EXPORT size_t __fread_chk(void *ptr, size_t buflen, size_t size, size_t n,
                                        FILE *stream) {
  pp::resolve(pp::real.fread_chk, "__fread_chk");
  if (!pp::real.fread_chk) return 0;
  if (!pp::io_on(pp::kfread)) return pp::real.fread_chk(ptr, buflen, size, n, stream);
  const auto [r, ns] =
      pp::timed(pp::kfread, [&] { return pp::real.fread_chk(ptr, buflen, size, n, stream); });
  const int saved = errno;
  pp::record_io(pp::kfread, static_cast<uint64_t>(r) * size, ns);
  errno = saved;
  return r;
}

PETACOMM_PROF_EXPORT size_t fwrite(const void *ptr, size_t size, size_t n, FILE *stream) {
  pp::resolve(pp::real.fwrite, "fwrite");
  if (!pp::real.fwrite) return 0;
  if (!pp::io_on(pp::kfwrite)) return pp::real.fwrite(ptr, size, n, stream);
  const auto [r, ns] =
      pp::timed(pp::kfwrite, [&] { return pp::real.fwrite(ptr, size, n, stream); });
  const int saved = errno;
  pp::record_io(pp::kfwrite, static_cast<uint64_t>(r) * size, ns);
  errno = saved;
  return r;
}

}  // extern "C"
