#include "mpi_support.hpp"

#include <climits>

#include "error.hpp"

namespace petacomm::xchg {

void agree_or_fail(MPI_Comm comm, const std::string &problem) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  int mine = problem.empty() ? size : rank;
  int first = size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first == size) return;
  if (!problem.empty()) fail_arg(problem);
  fail_arg("invalid arguments on rank ", first, " (see that rank's error); no plan was created");
}

int to_int_count(std::size_t count, const char *what) {
  if (count > static_cast<std::size_t>(INT_MAX))
    fail_arg(what, ": ", count, " elements exceed the MPI count limit ", INT_MAX,
             " (use a smaller chunk or fewer keys per rank)");
  return static_cast<int>(count);
}

ElementType::ElementType(std::size_t bytes) : bytes_(bytes) {
  check_mpi(MPI_Type_contiguous(to_int_count(bytes, "element bytes"), MPI_BYTE, &type_),
            "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&type_), "MPI_Type_commit");
}

ElementType::~ElementType() {
  if (type_ != MPI_DATATYPE_NULL && !mpi_finalized()) MPI_Type_free(&type_);
}

ElementType::ElementType(ElementType &&other) noexcept : type_(other.type_), bytes_(other.bytes_) {
  other.type_ = MPI_DATATYPE_NULL;
}

ElementType &ElementType::operator=(ElementType &&other) noexcept {
  if (this != &other) {
    if (type_ != MPI_DATATYPE_NULL && !mpi_finalized()) MPI_Type_free(&type_);
    type_ = other.type_;
    bytes_ = other.bytes_;
    other.type_ = MPI_DATATYPE_NULL;
  }
  return *this;
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

double now_seconds() { return MPI_Wtime(); }

int ceil_log2(std::int64_t p) {
  int steps = 0;
  while ((std::int64_t{1} << steps) < p) ++steps;
  return steps;
}

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace petacomm::xchg
