#include "mpi_support.hpp"

#include <time.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "error.hpp"

namespace petacomm::xchg {

std::uint64_t hash_text(const char *text) {
  std::uint64_t h = 0x84222325cbf29ce4ULL;
  for (const char *c = text ? text : ""; *c != '\0'; ++c)
    h = mix64(h ^ static_cast<unsigned char>(*c));
  return h;
}

std::uint64_t hash_number(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return mix64(bits ^ 0xd6e8feb86659fd93ULL);
}

std::uint64_t hash_number(std::int64_t value) { return mix64(static_cast<std::uint64_t>(value)); }

void start_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm, MPI_Request *request, SetupClock *clock) {
#ifdef PETACOMM_SMPI
  MpiWait wait(clock);
  check_mpi(MPI_Allreduce(send, recv, count, type, op, comm), "MPI_Allreduce");
  *request = MPI_REQUEST_NULL;
#else
  (void)clock;  // the wait for the result is timed where it happens
  check_mpi(MPI_Iallreduce(send, recv, count, type, op, comm, request), "MPI_Iallreduce");
#endif
}

ArgumentCheck::~ArgumentCheck() {
  if (request_ != MPI_REQUEST_NULL && !mpi_finalized()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

void ArgumentCheck::start(MPI_Comm comm, std::string problem, std::vector<AgreedValue> values,
                          bool flag) {
  PETACOMM_CHECK_INTERNAL(request_ == MPI_REQUEST_NULL, "an argument check started twice");
  comm_ = comm;
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  problem_ = std::move(problem);
  values_ = std::move(values);
  std::uint64_t fingerprint = 0x9ae16a3b2f90404fULL;
  for (const AgreedValue &v : values_) fingerprint = mix64(fingerprint ^ v.hash);
  // One MIN reduction: the lowest failing rank, the smallest fingerprint, the smallest
  // complement (= the complement of the largest fingerprint) and 0 if any rank's flag is set.
  mine_[0] = static_cast<std::uint64_t>(problem_.empty() ? size_ : rank_);
  mine_[1] = fingerprint;
  mine_[2] = ~fingerprint;
  mine_[3] = flag ? 0 : 1;
  done_ = false;
  start_allreduce(mine_, low_, 4, MPI_UINT64_T, MPI_MIN, comm, &request_, clock_);
}

bool ArgumentCheck::passed() {
  if (!done_) {
    MpiWait wait(clock_);
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    done_ = true;
    any_flag_ = low_[3] == 0;
  }
  return low_[0] == static_cast<std::uint64_t>(size_) && low_[1] == ~low_[2];
}

void ArgumentCheck::fail(const char *consequence) {
  PETACOMM_CHECK_INTERNAL(done_ && !passed(), "ArgumentCheck::fail on a check that passed");
  if (low_[0] != static_cast<std::uint64_t>(size_)) {
    PETACOMM_CHECK_ARG(problem_.empty(), problem_);
    fail_arg("invalid arguments on rank ", low_[0], " (see that rank's error); ", consequence);
  }
  // The values differ somewhere: name the lowest rank and its first value unlike rank 0's.
  std::vector<std::uint64_t> reference(values_.size());
  for (std::size_t i = 0; i < values_.size(); ++i) reference[i] = values_[i].hash;
  std::uint64_t first = static_cast<std::uint64_t>(size_) * (values_.size() + 1);
  {
    MpiWait wait(clock_);
    check_mpi(MPI_Bcast(reference.data(), to_int_count(reference.size(), "agreed values"),
                        MPI_UINT64_T, 0, comm_),
              "MPI_Bcast");
    std::uint64_t differs = first;
    for (std::size_t i = 0; i < values_.size(); ++i)
      if (values_[i].hash != reference[i]) {
        differs = static_cast<std::uint64_t>(rank_) * (values_.size() + 1) + i;
        break;
      }
    check_mpi(MPI_Allreduce(&differs, &first, 1, MPI_UINT64_T, MPI_MIN, comm_), "MPI_Allreduce");
  }
  const std::uint64_t at_rank = first / (values_.size() + 1);
  const std::uint64_t at_value = first % (values_.size() + 1);
  PETACOMM_CHECK_INTERNAL(at_rank < static_cast<std::uint64_t>(size_) && at_value < values_.size(),
                          "fingerprints differ but every value equals rank 0's");
  const AgreedValue &v = values_[at_value];
  if (at_rank == static_cast<std::uint64_t>(rank_))
    fail_arg(v.name, ": ", v.shown(), " on rank ", rank_,
             " differs from rank 0's (arguments of collective calls must be the same on every "
             "rank); ",
             consequence);
  fail_arg("arguments differ between ranks: ", v.name, " on rank ", at_rank,
           " differs from rank 0's", rank_ == 0 ? concat(" (", v.shown(), ")") : std::string(),
           "; ", consequence);
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

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

MpiWait::MpiWait(SetupClock *clock) : clock_(clock) {
  if (clock_ && clock_->open_waits++ == 0) {
    timing_ = true;
    wall0_ = now_seconds();
    cpu0_ = thread_cpu_seconds();
  }
}

MpiWait::~MpiWait() {
  if (!clock_) return;
  --clock_->open_waits;
  if (timing_) {
    clock_->mpi_cpu += thread_cpu_seconds() - cpu0_;
    clock_->mpi_wall += now_seconds() - wall0_;
  }
}

std::size_t FusedReduction::add(Op op, std::int64_t value) {
  ops_.push_back(op);
  values_.push_back(value);
  return ops_.size() - 1;
}

std::size_t FusedReduction::add(Op op, double value) {
  std::int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  ops_.push_back(op);
  values_.push_back(bits);
  return ops_.size() - 1;
}

double FusedReduction::real(std::size_t slot) const {
  double value;
  std::memcpy(&value, &values_[slot], sizeof value);
  return value;
}

namespace {
// One element = [ops (n int64), values (n int64)]; the ops travel with the values, so the
// operator needs no state beyond the datatype's size.
void fused_op(void *in, void *inout, int *len, MPI_Datatype *type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  const std::size_t n = static_cast<std::size_t>(bytes) / (2 * sizeof(std::int64_t));
  for (int e = 0; e < *len; ++e) {
    const auto *a = static_cast<const std::int64_t *>(in) + 2 * n * static_cast<std::size_t>(e);
    auto *b = static_cast<std::int64_t *>(inout) + 2 * n * static_cast<std::size_t>(e);
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t x = a[n + j];
      std::int64_t &y = b[n + j];
      double dx, dy;
      std::memcpy(&dx, &x, sizeof dx);
      std::memcpy(&dy, &y, sizeof dy);
      switch (static_cast<FusedReduction::Op>(b[j])) {
        case FusedReduction::kMinI:
          y = std::min(x, y);
          break;
        case FusedReduction::kMaxI:
          y = std::max(x, y);
          break;
        case FusedReduction::kSumI:
          y = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) +
                                        static_cast<std::uint64_t>(y));
          break;
        case FusedReduction::kMinD:
          dy = std::min(dx, dy);
          std::memcpy(&y, &dy, sizeof y);
          break;
        case FusedReduction::kMaxD:
          dy = std::max(dx, dy);
          std::memcpy(&y, &dy, sizeof y);
          break;
        case FusedReduction::kOrI:
          y = x | y;
          break;
        case FusedReduction::kSumD:
          dy = dx + dy;
          std::memcpy(&y, &dy, sizeof y);
          break;
      }
    }
  }
}
}  // namespace

void FusedReduction::run(MPI_Comm comm, SetupClock *clock) {
  if (ops_.empty()) return;
  std::vector<std::int64_t> send(ops_);
  send.insert(send.end(), values_.begin(), values_.end());
  std::vector<std::int64_t> recv(send.size());
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  check_mpi(MPI_Type_contiguous(to_int_count(send.size(), "fused reduction"), MPI_INT64_T, &type),
            "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  check_mpi(MPI_Op_create(fused_op, 1, &op), "MPI_Op_create");
  int status;
  {
    MpiWait wait(clock);
    status = MPI_Allreduce(send.data(), recv.data(), 1, type, op, comm);
  }
  MPI_Op_free(&op);
  MPI_Type_free(&type);
  check_mpi(status, "MPI_Allreduce");
  std::copy(recv.begin() + static_cast<std::ptrdiff_t>(ops_.size()), recv.end(), values_.begin());
}

int ceil_log2(std::int64_t p) {
  int steps = 0;
  while ((std::int64_t{1} << steps) < p) ++steps;
  return steps;
}

}  // namespace petacomm::xchg
