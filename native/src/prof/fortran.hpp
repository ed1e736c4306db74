// Helpers of the Fortran (mpif.h / `use mpi`) wrappers: finding the MPI library's own
// binding to forward to, sentinel buffers, and the Fortran forms of the request and status
// helpers of runtime.hpp (same member names, so the generator writes one body for both).
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

// Whether a Fortran status (array) argument is MPI_STATUS(ES)_IGNORE: mpif.h's
// MPI_F_STATUS(ES)_IGNORE (MPICH sets them on its first Fortran call) or `use mpi_f08`'s
// (MPICH's is an object of its own; Open MPI 4 shares mpif.h's).
bool fortran_status_ignored(const MPI_Fint *status);
bool fortran_statuses_ignored(const MPI_Fint *statuses);

// C handles of an array of Fortran requests (converted when constructed).
class FRequestArray {
 public:
  FRequestArray(const MPI_Fint *count, const MPI_Fint *requests) {
    n_ = count && requests && *count > 0 ? static_cast<int>(*count) : 0;
    if (n_ > kInline) {
      heap_ = static_cast<MPI_Request *>(std::malloc(sizeof(MPI_Request) * n_));
      if (!heap_) n_ = 0;
    }
    for (int i = 0; i < n_; ++i) data()[i] = PMPI_Request_f2c(requests[i]);
  }
  ~FRequestArray() { std::free(heap_); }
  FRequestArray(const FRequestArray &) = delete;
  FRequestArray &operator=(const FRequestArray &) = delete;
  MPI_Request *data() { return heap_ ? heap_ : inline_; }
  int size() const { return n_; }
  MPI_Request get(int i) { return i < n_ ? data()[i] : MPI_REQUEST_NULL; }

 private:
  static constexpr int kInline = 8;
  MPI_Request inline_[kInline];
  MPI_Request *heap_ = nullptr;
  int n_ = 0;
};

// The status of a receive-like Fortran call: the caller's, or a private one when the caller
// passed MPI_F_STATUS_IGNORE; get() gives it in C.
class FStatusOut {
 public:
  explicit FStatusOut(MPI_Fint *user) : user_(user) {}
  MPI_Fint *arg() { return fortran_status_ignored(user_) ? own_ : user_; }
  const MPI_Status *get() {
    return PMPI_Status_f2c(arg(), &status_) == MPI_SUCCESS ? &status_ : nullptr;
  }

 private:
  MPI_Fint *user_;
  MPI_Fint own_[kFortranStatusSize];
  MPI_Status status_;
};

// Completion calls of Fortran: the Fortran requests converted, the claims, and the Fortran
// statuses (private ones when the caller ignores them but a tracked receive needs them).
class FCompletions {
 public:
  FCompletions(const MPI_Fint *count, const MPI_Fint *requests, MPI_Fint *statuses, bool array)
      : requests_(count, requests),
        claims_(requests_.size(), requests_.data()),
        user_(statuses),
        array_(array) {
    const bool ignore =
        array ? fortran_statuses_ignored(statuses) : fortran_status_ignored(statuses);
    pass_ = statuses;
    if (ignore && claims_.needs_status() && requests_.size() > 0) {
      if (!array) {
        pass_ = one_;
      } else {
        const size_t n = static_cast<size_t>(requests_.size());
        own_ = static_cast<MPI_Fint *>(std::malloc(sizeof(MPI_Fint) * kFortranStatusSize * n));
        if (own_) pass_ = own_;
      }
    }
    ignored_ = pass_ == statuses && ignore;
  }
  ~FCompletions() { std::free(own_); }
  FCompletions(const FCompletions &) = delete;
  FCompletions &operator=(const FCompletions &) = delete;
  MPI_Fint *arg() { return pass_; }
  void finish(int index, int position) {
    MPI_Status c;
    const MPI_Status *status = nullptr;
    if (!ignored_ &&
        PMPI_Status_f2c(pass_ + (array_ ? position : 0) * kFortranStatusSize, &c) == MPI_SUCCESS)
      status = &c;
    claims_.finish(index, status);
  }
  void finish_all() {
    for (int t = 0; t < claims_.tracked(); ++t) finish(claims_.index_of(t), claims_.index_of(t));
  }

 private:
  FRequestArray requests_;
  RequestClaims claims_;
  MPI_Fint *user_;
  MPI_Fint *pass_;
  MPI_Fint *own_ = nullptr;
  MPI_Fint one_[kFortranStatusSize];
  bool array_;
  bool ignored_ = true;
};

}  // namespace petacomm::prof
