#include "error.hpp"

namespace petacomm {
namespace {
thread_local std::string last_error;
}  // namespace

void set_last_error(const std::string &message) { last_error = message; }
void clear_last_error() { last_error.clear(); }

void check_mpi(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw Error(PETACOMM_ERR_MPI, concat(call, " failed: ", std::string(text, length)));
}

}  // namespace petacomm

extern "C" const char *petacomm_last_error(void) { return petacomm::last_error.c_str(); }
