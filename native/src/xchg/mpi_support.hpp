// MPI helpers private to xchg: collective agreement on errors, element datatypes, count
// conversions, a timer.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace petacomm::xchg {

// Collective: if `problem` is non-empty on any rank, every rank throws fail_arg — the rank
// at fault with its own message, the others naming the lowest failing rank. Keeps
// collective creation from hanging when one rank's arguments are bad.
void agree_or_fail(MPI_Comm comm, const std::string &problem);

// int count for an MPI call; throws naming `what` if it does not fit.
int to_int_count(std::size_t count, const char *what);

// A committed contiguous datatype of `bytes` bytes (one key's k components), freed on
// destruction. Movable, not copyable.
class ElementType {
 public:
  ElementType() = default;
  explicit ElementType(std::size_t bytes);
  ~ElementType();
  ElementType(ElementType &&other) noexcept;
  ElementType &operator=(ElementType &&other) noexcept;
  ElementType(const ElementType &) = delete;
  ElementType &operator=(const ElementType &) = delete;
  MPI_Datatype get() const { return type_; }
  std::size_t bytes() const { return bytes_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::size_t bytes_ = 0;
};

// True once MPI_Finalize has been called (then no MPI call may be made).
bool mpi_finalized();

double now_seconds();

// ceil(log2 p) for p >= 1.
int ceil_log2(std::int64_t p);

// Mixing hash of a key (splitmix64 finaliser): the directory home and the owner choice.
std::uint64_t mix64(std::uint64_t x);

}  // namespace petacomm::xchg
