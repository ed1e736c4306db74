// Owned MPI and memory resources of the exchanges: aligned buffers, derived datatypes,
// int counts checked against MPI's limits.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "error.hpp"

namespace petacomm::transpose {

// Uninitialised, 64-byte aligned bytes.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes) { resize(bytes); }
  void resize(std::size_t bytes) {
    if (bytes == size_) return;
    data_.reset();
    size_ = 0;
    if (bytes == 0) return;
    void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<char *>(p));
    size_ = bytes;
  }
  char *data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  std::size_t size_ = 0;
};

// A committed derived datatype, freed on destruction (unless MPI is finalised).
class Datatype {
 public:
  Datatype() = default;
  explicit Datatype(MPI_Datatype committed) : type_(committed) {}
  ~Datatype() { reset(); }
  Datatype(Datatype &&o) noexcept : type_(std::exchange(o.type_, MPI_DATATYPE_NULL)) {}
  Datatype &operator=(Datatype &&o) noexcept {
    if (this != &o) {
      reset();
      type_ = std::exchange(o.type_, MPI_DATATYPE_NULL);
    }
    return *this;
  }
  Datatype(const Datatype &) = delete;
  Datatype &operator=(const Datatype &) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  void reset() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (type_ != MPI_DATATYPE_NULL && !finalized) MPI_Type_free(&type_);
    type_ = MPI_DATATYPE_NULL;
  }
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// A count for an MPI call; ERR_ARG naming `what` when it exceeds int.
inline int int_count(std::int64_t count, const char *what) {
  if (count < 0 || count > INT_MAX)
    fail_arg(what, ": ", count,
             " elements exceed MPI's int counts (2^31 - 1); use a strategy "
             "that sends blocks separately (xor, pairwise, pipelined) or more ranks");
  return static_cast<int>(count);
}

// Committed `count` elements of `element` as one datatype.
inline Datatype contiguous_type(std::int64_t count, MPI_Datatype element, const char *what) {
  MPI_Datatype t;
  PETACOMM_CHECK_MPI(MPI_Type_contiguous(int_count(count, what), element, &t));
  PETACOMM_CHECK_MPI(MPI_Type_commit(&t));
  return Datatype(t);
}

// Requests completed before the vector is dropped (used on error paths too).
inline void wait_all(std::vector<MPI_Request> &requests) {
  if (requests.empty()) return;
  PETACOMM_CHECK_MPI(
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
}

}  // namespace petacomm::transpose
