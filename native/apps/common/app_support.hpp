// Small pieces every mini-app needs: MPI error checks that throw (the apps use only the
// library's public C APIs, so they carry their own), rank-0 error reporting that lets all
// ranks stop together, and wall-clock sections.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "error.hpp"  // petacomm::Error, fail_arg, concat (header-only parts)

namespace petacomm::apps {

inline void check_mpi_call(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw Error(PETACOMM_ERR_MPI, concat(call, " failed: ", std::string(text, length)));
}
#define PETACOMM_APP_MPI(call) ::petacomm::apps::check_mpi_call((call), #call)

// Collective: true when any rank's flag is set (used so that a failure found on one rank,
// such as an unreadable file, stops every rank together instead of hanging the others).
inline bool any_rank(bool flag, MPI_Comm comm) {
  int local = flag ? 1 : 0, global = 0;
  PETACOMM_APP_MPI(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, comm));
  return global != 0;
}

// Collective: rethrows, on every rank, the first failing rank's message (the lowest rank
// that caught an Error), so every rank exits together with the same one-line error.
void agree_on_error(const std::string &local_error, MPI_Comm comm);

// The whole of a mini-app's main(): MPI_Init, run(argc, argv), MPI_Finalize. An Error that
// escapes run() reached every rank together (agree_on_error), so rank 0 alone prints it as
// "<program>: error: ..."; the exit status is 2 for a bad argument, 1 otherwise.
int main_of_app(const char *program, int argc, char **argv, int (*run)(int, char **));

// Accumulates wall time of one kind of work (MPI_Wtime between start and stop).
class Stopwatch {
 public:
  void start() { started_ = MPI_Wtime(); }
  double stop() {
    const double dt = MPI_Wtime() - started_;
    total_ += dt;
    return dt;
  }
  double total() const { return total_; }
  void reset() { total_ = 0; }

 private:
  double started_ = 0, total_ = 0;
};

// True when MPI_Wtime is one clock on every rank (MPI_WTIME_IS_GLOBAL: SimGrid SMPI's
// simulated time, some machines).
bool clock_is_global();

// Collective, on a global clock, for timed operations k = 0..n-1 that every rank ran from
// starts[k] to ends[k]: the means over k of the seconds from the last rank's start to the
// last rank's end, and between the first and the last start. Ranks leave a barrier at
// different times (tens of microseconds apart at 1,024 simulated ranks); a rank's own
// end - start counts its wait for later partners, this does not (the convention of the
// library's benchmarks too). One reduction, after the timed loop.
struct Span {
  double last_start_to_last_end = 0, start_spread = 0;
};
Span global_span(const std::vector<double> &starts, const std::vector<double> &ends, MPI_Comm comm);

}  // namespace petacomm::apps
