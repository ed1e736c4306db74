#include "slab_plan.hpp"

#include "agreement.hpp"
#include "array_check.hpp"
#include "json_out.hpp"

namespace petacomm::transpose {
namespace {

// Forward: rows of n0 (n1 contiguous columns each) -> rows of n1 (n0 each); backward: the
// reverse. Elements are howmany interleaved values.
Geometry slab(std::int64_t rows, std::int64_t cols, std::size_t elem) {
  Geometry g;
  g.n_rows = rows;
  g.n_cols = cols;
  g.batch = 1;
  g.elem = elem;
  g.in_row = cols;
  g.out_row = rows;
  return g;
}

// "" or the problem with a direction.
std::string direction_problem(int direction) {
  if (direction == PETACOMM_TRANSPOSE_FORWARD || direction == PETACOMM_TRANSPOSE_BACKWARD)
    return {};
  return concat("direction: unknown direction ", direction, " (expected 0 forward or 1 backward)");
}

}  // namespace

SlabPlan::SlabPlan(MPI_Comm comm, std::int64_t n0, std::int64_t n1, std::int64_t howmany, int dtype,
                   const petacomm_transpose_options *opts, const char *caller_error)
    : n0_(n0), n1_(n1), howmany_(howmany), dtype_(dtype) {
  require_mpi_running("petacomm_transpose_plan_create");
  if (comm == MPI_COMM_NULL) fail_arg("comm: MPI_COMM_NULL");
  const double start = MPI_Wtime();
  int q = 1;
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &q));
  const auto first_problem = [&]() -> std::string {
    if (n0 < 1) return concat("n0: must be >= 1, got ", n0);
    if (n1 < 1) return concat("n1: must be >= 1, got ", n1);
    if (howmany < 1) return concat("howmany: must be >= 1, got ", howmany);
    if (dtype_bytes(dtype) == 0)
      return concat("dtype: unknown dtype ", dtype,
                    " (expected 0..3: float32, float64, complex64, complex128)");
    return size_problem("n0 x n1", {n0, n1}, howmany, dtype);
  };
  // A binding's own finding comes first: the other arguments may be placeholders then.
  std::string problem =
      caller_error != nullptr && *caller_error != '\0' ? caller_error : first_problem();
  const std::size_t elem = problem.empty() ? dtype_bytes(dtype) * howmany : 1;
  const TransposeOptions o =
      problem.empty() ? validate_options(opts, n1, true, &problem) : TransposeOptions{};
  if (problem.empty() && o.strategy != "auto") {
    ProblemStats s;
    s.q = q;
    s.n_rows = n0;
    s.n_cols = n1;
    s.elem = static_cast<double>(elem);
    s.col_kept = o.mask;
    const std::string why = registry().require("strategy", o.strategy).not_applicable(s);
    if (!why.empty()) problem = concat("strategy: ", o.strategy, " ", why);
  }
  std::uint64_t h = mix(mix(mix(static_cast<std::uint64_t>(n0), n1), howmany), dtype);
  agree_or_fail(comm, problem, fingerprint(o, h),
                "arguments differ between ranks: n0, n1, howmany, dtype and the options must "
                "be the same on every rank");
  PETACOMM_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  Geometry forward = slab(n0, n1, elem), backward = slab(n1, n0, elem);
  forward.col_kept = o.mask;
  backward.row_kept = o.mask;
  transposer_ = std::make_unique<Transposer>(comm_, std::move(forward), std::move(backward), o);
  setup_seconds_ = MPI_Wtime() - start;
}

SlabPlan::~SlabPlan() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  transposer_.reset();
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void SlabPlan::release() {
  transposer_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) PETACOMM_CHECK_MPI(MPI_Comm_free(&comm_));
  comm_ = MPI_COMM_NULL;
}

std::vector<std::int64_t> SlabPlan::shape(bool input, Direction d) const {
  const bool forward_rows = (d == Direction::kForward) == input;
  std::vector<std::int64_t> s;
  if (forward_rows) {
    s = {transposer_->geometry(Direction::kForward)
             .rows(transposer_->ranks())
             .count(transposer_->rank()),
         n1_};
  } else {
    s = {transposer_->geometry(Direction::kForward)
             .cols(transposer_->ranks())
             .count(transposer_->rank()),
         n0_};
  }
  if (howmany_ > 1) s.push_back(howmany_);
  return s;
}

void SlabPlan::run(int direction, const std::string &problem, const void *in, void *out) {
  agree_or_fail(comm_, problem, static_cast<std::uint64_t>(direction) + 1,
                "direction: must be the same on every rank");
  transposer_->execute(static_cast<Direction>(direction), static_cast<const char *>(in),
                       static_cast<char *>(out));
}

void SlabPlan::execute(int direction, const void *in, void *out) {
  require_mpi_running("petacomm_transpose_execute");
  std::string problem = direction_problem(direction);
  const auto d = static_cast<Direction>(direction);
  if (problem.empty())
    problem = check_buffers(in, transposer_->input_bytes(d), out, transposer_->output_bytes(d));
  run(direction, problem, in, out);
}

void SlabPlan::execute_array(int direction, const petacomm_transpose_array *in,
                             const petacomm_transpose_array *out) {
  require_mpi_running("petacomm_transpose_execute_array");
  std::string problem = direction_problem(direction);
  const auto d = static_cast<Direction>(direction);
  if (problem.empty()) problem = check_array("in", in, shape(true, d), dtype_, false);
  if (problem.empty()) problem = check_array("out", out, shape(false, d), dtype_, true);
  if (problem.empty())
    problem = check_buffers(in->data, transposer_->input_bytes(d), out->data,
                            transposer_->output_bytes(d));
  run(direction, problem, problem.empty() ? in->data : nullptr,
      problem.empty() ? out->data : nullptr);
}

petacomm_transpose_local SlabPlan::local() const {
  petacomm_transpose_local l{};
  const Geometry &f = transposer_->geometry(Direction::kForward);
  const int q = transposer_->ranks(), me = transposer_->rank();
  l.rows_in = f.rows(q).count(me);
  l.row0_in = f.rows(q).offset(me);
  l.rows_out = f.cols(q).count(me);
  l.row0_out = f.cols(q).offset(me);
  l.alloc_elements = std::max(l.rows_in * n1_, l.rows_out * n0_);
  return l;
}

const std::string &SlabPlan::describe() {
  JsonOut j;
  j.begin_object();
  j.value("kind", "slab").value("n0", n0_).value("n1", n1_).value("howmany", howmany_);
  j.value("dtype", dtype_name(dtype_));
  const petacomm_transpose_local l = local();
  j.begin_object("local");
  j.value("rows_in", l.rows_in).value("row0_in", l.row0_in);
  j.value("rows_out", l.rows_out).value("row0_out", l.row0_out);
  j.end_object();
  j.value("setup_seconds", setup_seconds_);
  j.raw("transpose", transposer_->describe_json());
  j.value("strategy", transposer_->strategy_name());
  j.end_object();
  description_ = j.str();
  return description_;
}

std::vector<petacomm_transpose_minavgmax> spread(MPI_Comm comm, const std::vector<double> &values) {
  int q = 1;
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &q));
  const std::size_t n = values.size();
  std::vector<double> extremes(2 * n), sums(values), out_extremes(2 * n), out_sums(n);
  for (std::size_t k = 0; k < n; ++k) {
    extremes[2 * k] = values[k];
    extremes[2 * k + 1] = -values[k];
  }
  PETACOMM_CHECK_MPI(MPI_Allreduce(extremes.data(), out_extremes.data(), static_cast<int>(2 * n),
                                   MPI_DOUBLE, MPI_MAX, comm));
  PETACOMM_CHECK_MPI(
      MPI_Allreduce(sums.data(), out_sums.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm));
  std::vector<petacomm_transpose_minavgmax> out(n);
  for (std::size_t k = 0; k < n; ++k)
    out[k] = {-out_extremes[2 * k + 1], out_sums[k] / q, out_extremes[2 * k]};
  return out;
}

void SlabPlan::stats(petacomm_transpose_stats *out) {
  require_mpi_running("petacomm_transpose_plan_stats");
  agree_or_fail(comm_, out == nullptr ? "stats: NULL output pointer" : "");
  const auto s = spread(comm_, {transposer_->messages(), transposer_->bytes(),
                                static_cast<double>(transposer_->memory_bytes()), setup_seconds_});
  *out = petacomm_transpose_stats{s[0], s[1], s[2], s[3].max};
}

}  // namespace petacomm::transpose
