#include "pencil.hpp"

#include "agreement.hpp"
#include "array_check.hpp"
#include "json_out.hpp"

namespace petacomm::transpose {
namespace {

const char *layout_name(int layout) {
  switch (layout) {
    case PETACOMM_PENCIL_Z:
      return "Z";
    case PETACOMM_PENCIL_Y:
      return "Y";
    case PETACOMM_PENCIL_X:
      return "X";
    default:
      return "unknown";
  }
}

bool known_layout(int layout) { return layout >= PETACOMM_PENCIL_Z && layout <= PETACOMM_PENCIL_X; }

}  // namespace

PencilPlan::PencilPlan(MPI_Comm comm, const std::int64_t n[3], const int grid[2],
                       std::int64_t howmany, int dtype, const petacomm_transpose_options *opts,
                       const char *caller_error)
    : howmany_(howmany), dtype_(dtype) {
  require_mpi_running("petacomm_transpose_pencil_create");
  if (comm == MPI_COMM_NULL) fail_arg("comm: MPI_COMM_NULL");
  const double start = MPI_Wtime();
  int p = 1, rank = 0;
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &p));
  PETACOMM_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  const auto first_problem = [&]() -> std::string {
    if (n == nullptr || grid == nullptr) return "n, grid: must not be NULL";
    if (n[0] < 1 || n[1] < 1 || n[2] < 1)
      return concat("n: every extent must be >= 1, got (", n[0], ", ", n[1], ", ", n[2], ")");
    if (grid[0] < 1 || grid[1] < 1 || static_cast<std::int64_t>(grid[0]) * grid[1] != p)
      return concat("grid: ", grid[0], " x ", grid[1], " does not match the ", p,
                    " ranks of the communicator");
    if (howmany < 1) return concat("howmany: must be >= 1, got ", howmany);
    if (dtype_bytes(dtype) == 0) return concat("dtype: unknown dtype ", dtype);
    return size_problem("n", {n[0], n[1], n[2]}, howmany, dtype);
  };
  // A binding's own finding comes first: the other arguments may be placeholders then.
  std::string problem =
      caller_error != nullptr && *caller_error != '\0' ? caller_error : first_problem();
  TransposeOptions o;
  if (problem.empty()) o = validate_options(opts, 0, false, &problem);
  if (problem.empty() && o.strategy != "auto") {
    for (int q : {grid[0], grid[1]}) {
      ProblemStats s;
      s.q = q;
      s.n_rows = s.n_cols = 1;
      const std::string why = registry().require("strategy", o.strategy).not_applicable(s);
      if (!why.empty()) {
        problem =
            concat("strategy: ", o.strategy, " ", why, " on a grid of ", grid[0], " x ", grid[1]);
        break;
      }
    }
  }
  std::uint64_t h = 0;
  if (problem.empty())
    h = fingerprint(
        o,
        mix(mix(mix(mix(mix(mix(static_cast<std::uint64_t>(n[0]), n[1]), n[2]), grid[0]), grid[1]),
                howmany),
            dtype));
  agree_or_fail(comm, problem, h,
                "arguments differ between ranks: n, grid, howmany, dtype and the options must be "
                "the same on every rank");
  n_ = {n[0], n[1], n[2]};
  grid_[0] = grid[0];
  grid_[1] = grid[1];
  i0_ = rank / grid[1];
  i1_ = rank % grid[1];
  PETACOMM_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  PETACOMM_CHECK_MPI(MPI_Comm_split(comm_, i0_, i1_, &row_comm_));
  PETACOMM_CHECK_MPI(MPI_Comm_split(comm_, i1_, i0_, &col_comm_));
  const std::size_t elem = dtype_bytes(dtype) * howmany;
  const std::int64_t c0 = BlockDistribution{n_[0], grid[0]}.count(i0_);
  const std::int64_t c1 = BlockDistribution{n_[1], grid[1]}.count(i1_);
  const std::int64_t c2 = BlockDistribution{n_[2], grid[1]}.count(i1_);
  const std::int64_t c1x = BlockDistribution{n_[1], grid[0]}.count(i0_);
  // Z [c0][c1][n2] <-> Y [c0][c2][n1] on the row communicator: rows axis 1, columns
  // axis 2, batches axis 0.
  Geometry zy;
  zy.n_rows = n_[1];
  zy.n_cols = n_[2];
  zy.batch = c0;
  zy.elem = elem;
  zy.in_row = n_[2];
  zy.in_batch = c1 * n_[2];
  zy.out_row = n_[1];
  zy.out_batch = c2 * n_[1];
  Geometry yz = zy;
  std::swap(yz.n_rows, yz.n_cols);
  yz.in_row = n_[1];
  yz.in_batch = c2 * n_[1];
  yz.out_row = n_[2];
  yz.out_batch = c1 * n_[2];
  zy_ = std::make_unique<Transposer>(row_comm_, zy, yz, o);
  // Y [c0][c2][n1] <-> X [c2][c1x][n0] on the column communicator: rows axis 0, columns
  // axis 1, batches axis 2.
  Geometry yx;
  yx.n_rows = n_[0];
  yx.n_cols = n_[1];
  yx.batch = c2;
  yx.elem = elem;
  yx.in_row = c2 * n_[1];
  yx.in_batch = n_[1];
  yx.out_row = n_[0];
  yx.out_batch = c1x * n_[0];
  Geometry xy = yx;
  std::swap(xy.n_rows, xy.n_cols);
  xy.in_row = n_[0];
  xy.in_batch = c1x * n_[0];
  xy.out_row = c2 * n_[1];
  xy.out_batch = n_[1];
  yx_ = std::make_unique<Transposer>(col_comm_, yx, xy, o);
  setup_seconds_ = MPI_Wtime() - start;
}

PencilPlan::~PencilPlan() { release(); }

void PencilPlan::release() {
  zy_.reset();
  yx_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    for (MPI_Comm *c : {&row_comm_, &col_comm_, &comm_})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  row_comm_ = col_comm_ = comm_ = MPI_COMM_NULL;
}

void PencilPlan::local(int layout, std::int64_t shape[3], std::int64_t offset[3]) const {
  const BlockDistribution d0{n_[0], grid_[0]}, d1{n_[1], grid_[1]}, d2{n_[2], grid_[1]},
      d1x{n_[1], grid_[0]};
  switch (layout) {
    case PETACOMM_PENCIL_Z:
      shape[0] = d0.count(i0_), shape[1] = d1.count(i1_), shape[2] = n_[2];
      offset[0] = d0.offset(i0_), offset[1] = d1.offset(i1_), offset[2] = 0;
      return;
    case PETACOMM_PENCIL_Y:
      shape[0] = d0.count(i0_), shape[1] = d2.count(i1_), shape[2] = n_[1];
      offset[0] = d0.offset(i0_), offset[1] = d2.offset(i1_), offset[2] = 0;
      return;
    case PETACOMM_PENCIL_X:
      shape[0] = d2.count(i1_), shape[1] = d1x.count(i0_), shape[2] = n_[0];
      offset[0] = d2.offset(i1_), offset[1] = d1x.offset(i0_), offset[2] = 0;
      return;
    default:
      fail_arg("layout: unknown layout ", layout, " (expected 0 Z, 1 Y or 2 X)");
  }
}

std::vector<std::int64_t> PencilPlan::array_shape(int layout) const {
  std::int64_t shape[3], offset[3];
  local(layout, shape, offset);
  std::vector<std::int64_t> s(shape, shape + 3);
  if (howmany_ > 1) s.push_back(howmany_);
  return s;
}

std::size_t PencilPlan::layout_bytes(int layout) const {
  std::int64_t shape[3], offset[3];
  local(layout, shape, offset);
  return static_cast<std::size_t>(shape[0] * shape[1] * shape[2] * howmany_) * dtype_bytes(dtype_);
}

std::string PencilPlan::swap(int from, int to, Transposer **t, Direction *d) {
  if (!known_layout(from))
    return concat("from: unknown layout ", from, " (expected 0 Z, 1 Y, 2 X)");
  if (!known_layout(to)) return concat("to: unknown layout ", to, " (expected 0 Z, 1 Y, 2 X)");
  if (from == PETACOMM_PENCIL_Z && to == PETACOMM_PENCIL_Y) {
    *t = zy_.get(), *d = Direction::kForward;
  } else if (from == PETACOMM_PENCIL_Y && to == PETACOMM_PENCIL_Z) {
    *t = zy_.get(), *d = Direction::kBackward;
  } else if (from == PETACOMM_PENCIL_Y && to == PETACOMM_PENCIL_X) {
    *t = yx_.get(), *d = Direction::kForward;
  } else if (from == PETACOMM_PENCIL_X && to == PETACOMM_PENCIL_Y) {
    *t = yx_.get(), *d = Direction::kBackward;
  } else {
    return concat("to: ", layout_name(from), " -> ", layout_name(to),
                  " is not a swap of adjacent layouts (Z <-> Y, Y <-> X)");
  }
  return {};
}

void PencilPlan::run(const std::string &problem, int from, int to, const void *in, void *out) {
  agree_or_fail(comm_, problem, static_cast<std::uint64_t>(from * 3 + to + 1),
                "from, to: must be the same on every rank");
  Transposer *t = nullptr;
  Direction d = Direction::kForward;
  swap(from, to, &t, &d);
  t->execute(d, static_cast<const char *>(in), static_cast<char *>(out));
}

void PencilPlan::execute(int from, int to, const void *in, void *out) {
  require_mpi_running("petacomm_transpose_pencil_execute");
  Transposer *t = nullptr;
  Direction d = Direction::kForward;
  std::string problem = swap(from, to, &t, &d);
  if (problem.empty()) problem = check_buffers(in, layout_bytes(from), out, layout_bytes(to));
  run(problem, from, to, in, out);
}

void PencilPlan::execute_array(int from, int to, const petacomm_transpose_array *in,
                               const petacomm_transpose_array *out) {
  require_mpi_running("petacomm_transpose_pencil_execute_array");
  Transposer *t = nullptr;
  Direction d = Direction::kForward;
  std::string problem = swap(from, to, &t, &d);
  if (problem.empty()) problem = check_array("in", in, array_shape(from), dtype_, false);
  if (problem.empty()) problem = check_array("out", out, array_shape(to), dtype_, true);
  if (problem.empty())
    problem = check_buffers(in->data, layout_bytes(from), out->data, layout_bytes(to));
  if (!problem.empty()) {
    run(problem, from, to, nullptr, nullptr);
    return;
  }
  run(problem, from, to, in->data, out->data);
}

const std::string &PencilPlan::describe() {
  JsonOut j;
  j.begin_object();
  j.value("kind", "pencil").value("dtype", dtype_name(dtype_)).value("howmany", howmany_);
  j.begin_array("n").value(nullptr, n_[0]).value(nullptr, n_[1]).value(nullptr, n_[2]);
  j.end_array();
  j.begin_array("grid").value(nullptr, grid_[0]).value(nullptr, grid_[1]).end_array();
  j.value("setup_seconds", setup_seconds_);
  j.raw("zy", zy_->describe_json());
  j.raw("yx", yx_->describe_json());
  j.end_object();
  description_ = j.str();
  return description_;
}

}  // namespace petacomm::transpose
