#include <cstring>

#include "error.hpp"

extern "C" const char *petacomm_version(void) { return PETACOMM_VERSION_STRING; }

extern "C" petacomm_status petacomm_mpi_library_version(char *buf, int buflen) {
  return petacomm::guard([&] {
    if (buf == nullptr) petacomm::fail_arg("buf: must not be NULL");
    if (buflen <= 0) petacomm::fail_arg("buflen: must be positive, got ", buflen);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    petacomm::check_mpi(MPI_Get_library_version(version, &length), "MPI_Get_library_version");
    const int n = length < buflen - 1 ? length : buflen - 1;
    std::memcpy(buf, version, static_cast<size_t>(n));
    buf[n] = '\0';
  });
}

extern "C" petacomm_status petacomm_mpi_standard_version(int *version, int *subversion) {
  return petacomm::guard([&] {
    if (version == nullptr || subversion == nullptr)
      petacomm::fail_arg("version/subversion: must not be NULL");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
  });
}
