// Helpers of the Fortran (mpif.h / `use mpi`) wrappers: finding the MPI library's own
// binding to forward to, sentinel buffers, and request/status conversion.
#pragma once

#include <cstdlib>

#include "runtime.hpp"

namespace petacomm::prof {

#ifdef MPI_F_STATUS_SIZE
constexpr int kFortranStatusSize = MPI_F_STATUS_SIZE;
#else
constexpr int kFortranStatusSize = 16;
#endif

// The next definition of `symbol` after this library (the MPI library's Fortran binding),
// looked up once per symbol. Null when the MPI library has no such binding.
void *fortran_lookup(void **cache, const char *symbol);
template <typename Fn>
Fn fortran_next(void **cache, const char *symbol) {
  return reinterpret_cast<Fn>(fortran_lookup(cache, symbol));
}

// Maps the Fortran MPI_IN_PLACE / MPI_BOTTOM addresses to the C ones.
const void *fortran_buffer(const void *buffer);

// C handles of an array of Fortran requests.
class FortranRequests {
 public:
  FortranRequests(MPI_Fint count, const MPI_Fint *requests) {
    n_ = count > 0 && requests ? count : 0;
    if (n_ > kInline) {
      heap_ = static_cast<MPI_Request *>(std::malloc(sizeof(MPI_Request) * n_));
      if (!heap_) n_ = 0;
    }
    for (int i = 0; i < n_; ++i) data()[i] = PMPI_Request_f2c(requests[i]);
  }
  ~FortranRequests() { std::free(heap_); }
  FortranRequests(const FortranRequests &) = delete;
  FortranRequests &operator=(const FortranRequests &) = delete;
  MPI_Request *data() { return heap_ ? heap_ : inline_; }

 private:
  static constexpr int kInline = 8;
  MPI_Request inline_[kInline];
  MPI_Request *heap_ = nullptr;
  int n_ = 0;
};

// Fortran statuses of a completion call: the caller's, or private ones when the caller
// ignores them but a tracked receive needs them; c(i) converts one to C.
class FortranStatuses {
 public:
  FortranStatuses(MPI_Fint count, MPI_Fint *user, bool needed, MPI_Fint *ignore)
      : user_(user), ignore_(ignore) {
    if (!user && needed && count > 0) {
      own_ = static_cast<MPI_Fint *>(std::malloc(sizeof(MPI_Fint) * kFortranStatusSize * count));
    }
  }
  ~FortranStatuses() { std::free(own_); }
  FortranStatuses(const FortranStatuses &) = delete;
  FortranStatuses &operator=(const FortranStatuses &) = delete;
  MPI_Fint *data() { return user_ ? user_ : (own_ ? own_ : ignore_); }
  const MPI_Status *c(int i) {
    MPI_Fint *base = user_ ? user_ : own_;
    if (!base || i < 0) return nullptr;
    if (PMPI_Status_f2c(base + static_cast<long>(i) * kFortranStatusSize, &status_) != MPI_SUCCESS)
      return nullptr;
    return &status_;
  }

 private:
  MPI_Fint *user_;
  MPI_Fint *ignore_;
  MPI_Fint *own_ = nullptr;
  MPI_Status status_;
};

}  // namespace petacomm::prof
