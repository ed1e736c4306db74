// Internal error handling: C++ code throws petacomm::Error; every C entry point runs its
// body through petacomm::guard, which turns exceptions into a status code plus a
// thread-local message, so no exception ever crosses the C API.
#pragma once

#include <mpi.h>

#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <utility>

#include "petacomm/core.h"

namespace petacomm {

class Error : public std::exception {
 public:
  Error(petacomm_status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  petacomm_status status() const noexcept { return status_; }
  const char *what() const noexcept override { return message_.c_str(); }

 private:
  petacomm_status status_;
  std::string message_;
};

// Builds a message from streamable parts: fail_arg("keys", ": negative key ", k).
template <typename... Parts>
std::string concat(const Parts &...parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail_arg(const Parts &...parts) {
  throw Error(PETACOMM_ERR_ARG, concat(parts...));
}

template <typename... Parts>
[[noreturn]] void fail_state(const Parts &...parts) {
  throw Error(PETACOMM_ERR_STATE, concat(parts...));
}

// A broken invariant of petacomm itself (never the caller's fault).
template <typename... Parts>
[[noreturn]] void fail_internal(const Parts &...parts) {
  throw Error(PETACOMM_ERR_INTERNAL, concat("internal error: ", parts...));
}

// Throws on a failed MPI call, naming the call and the MPI error string.
void check_mpi(int rc, const char *call);

// The CHECK family: one line per condition, the message built only on failure.
//   PETACOMM_CHECK_ARG(n >= 0, "n: must be >= 0, got ", n);      caller's argument (ERR_ARG)
//   PETACOMM_CHECK_STATE(!active_, "execute_end: no execution"); call sequence (ERR_STATE)
//   PETACOMM_CHECK_INTERNAL(at <= size, "short reply from ", r);  our invariant (ERR_INTERNAL)
//   PETACOMM_CHECK_MPI(MPI_Barrier(comm));                         names the MPI call (ERR_MPI)
#define PETACOMM_CHECK_ARG(cond, ...)               \
  do {                                              \
    if (!(cond)) ::petacomm::fail_arg(__VA_ARGS__); \
  } while (0)
#define PETACOMM_CHECK_STATE(cond, ...)               \
  do {                                                \
    if (!(cond)) ::petacomm::fail_state(__VA_ARGS__); \
  } while (0)
#define PETACOMM_CHECK_INTERNAL(cond, ...)                               \
  do {                                                                   \
    if (!(cond)) ::petacomm::fail_internal(__VA_ARGS__, " (" #cond ")"); \
  } while (0)
#define PETACOMM_CHECK_MPI(call) ::petacomm::check_mpi((call), #call)

void set_last_error(const std::string &message);
void clear_last_error();

template <typename Body>
petacomm_status guard(Body &&body) noexcept {
  try {
    clear_last_error();
    body();
    return PETACOMM_SUCCESS;
  } catch (const Error &e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc &) {
    set_last_error("out of memory");
    return PETACOMM_ERR_NOMEM;
  } catch (const std::exception &e) {
    // Anything that is not a petacomm::Error is a bug of ours (a standard-library throw).
    set_last_error(concat("internal error: ", e.what()));
    return PETACOMM_ERR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return PETACOMM_ERR_INTERNAL;
  }
}

}  // namespace petacomm
