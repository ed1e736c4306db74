#include "solver.hpp"

#include <petacomm/prof.h>

#include <algorithm>
#include <cmath>

#include "app_support.hpp"

namespace petacomm::apps::mapmaker {
namespace {

// Symmetric 3x3 in packed form (II, IQ, IU, QQ, QU, UU): index of (row, column).
constexpr int kPacked[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};

void check_xchg(petacomm_status status, const char *call) {
  if (status != PETACOMM_SUCCESS) throw Error(status, concat(call, ": ", petacomm_last_error()));
}

// Inverts a symmetric positive definite block by cofactors.
void invert_block(const double m[6], double inv[6]) {
  const double a = m[0], b = m[1], c = m[2], d = m[3], e = m[4], f = m[5];
  const double A = d * f - e * e, B = c * e - b * f, C = b * e - c * d;
  const double D = a * f - c * c, E = b * c - a * e, F = a * d - b * b;
  const double det = a * A + b * B + c * C;
  inv[0] = A / det;
  inv[1] = B / det;
  inv[2] = C / det;
  inv[3] = D / det;
  inv[4] = E / det;
  inv[5] = F / det;
}

// Collective: a SparseReducePlan over these keys with the solver's strategy options.
petacomm_xchg_plan create_plan(MPI_Comm comm, const std::int64_t *keys, std::int64_t n,
                               const SolverOptions &options) {
  petacomm_xchg_options opts;
  check_xchg(petacomm_xchg_options_default(&opts), "petacomm_xchg_options_default");
  opts.strategy = options.strategy.c_str();
  opts.transport = options.transport.c_str();
  opts.deterministic = options.deterministic ? 1 : 0;
  opts.plan_dtype = PETACOMM_XCHG_FLOAT64;
  opts.plan_k = 3;
  petacomm_xchg_plan plan = nullptr;
  const petacomm_status status = petacomm_xchg_plan_create(comm, keys, n, &opts, &plan);
  if (status != PETACOMM_SUCCESS) {
    // The plan names the option at fault ("strategy: ...", "transport: ..."): our flags.
    const std::string message = petacomm_last_error();
    const bool option = message.rfind("strategy", 0) == 0 || message.rfind("transport", 0) == 0;
    throw Error(status, option ? "--" + message : "SparseReducePlan: " + message);
  }
  return plan;
}

// The distributed pixel vectors: every rank holds the pixels it observes; after a
// reduction all holders of a pixel have the same values. Dot products count each pixel
// once, at its owner (the lowest rank holding it).
class PixelSpace {
 public:
  PixelSpace(const TimeDomain &td, const SolverOptions &options, MPI_Comm comm)
      : comm_(comm), n_(static_cast<std::int64_t>(td.pixels.size())) {
    const double t0 = MPI_Wtime();
    plan_ = create_plan(comm, td.pixels.data(), n_, options);
    plan_seconds_ = MPI_Wtime() - t0;
    int rank = 0;
    PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
    std::vector<double> owner(static_cast<std::size_t>(n_), rank);
    reduce(owner.data(), 1, PETACOMM_XCHG_MIN);
    owned_.resize(owner.size());
    for (std::size_t i = 0; i < owner.size(); ++i) owned_[i] = owner[i] == rank;
  }
  ~PixelSpace() { petacomm_xchg_plan_free(&plan_); }
  PixelSpace(const PixelSpace &) = delete;
  PixelSpace &operator=(const PixelSpace &) = delete;

  void reduce(double *values, int k, petacomm_xchg_op op = PETACOMM_XCHG_SUM) {
    if (region_) petacomm_prof_begin(region_);
    const double t0 = MPI_Wtime();
    check_xchg(petacomm_xchg_execute(plan_, comm_, values, n_, k, PETACOMM_XCHG_FLOAT64, op),
               "petacomm_xchg_execute");
    comm_seconds_ += MPI_Wtime() - t0;
    if (region_) petacomm_prof_end(region_);
  }
  // Global sums of `count` local partial sums.
  void allreduce(double *sums, int count) {
    if (region_) petacomm_prof_begin(region_);
    const double t0 = MPI_Wtime();
    PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, count, MPI_DOUBLE, MPI_SUM, comm_));
    comm_seconds_ += MPI_Wtime() - t0;
    if (region_) petacomm_prof_end(region_);
  }
  // Profiler region (nested in the current one) of the communication from now on.
  void set_region(const char *name) { region_ = name; }
  // Local part of the dot product of two 3-component pixel vectors over owned pixels.
  double local_dot(const std::vector<double> &a, const std::vector<double> &b) const {
    double sum = 0;
    for (std::int64_t i = 0; i < n_; ++i)
      if (owned_[i])
        for (int c = 0; c < 3; ++c) sum += a[3 * i + c] * b[3 * i + c];
    return sum;
  }
  double take_comm_seconds() {
    const double t = comm_seconds_;
    comm_seconds_ = 0;
    return t;
  }
  std::int64_t size() const { return n_; }
  const std::vector<char> &owned() const { return owned_; }
  petacomm_xchg_plan plan() const { return plan_; }
  double plan_seconds() const { return plan_seconds_; }

 private:
  MPI_Comm comm_;
  std::int64_t n_;
  petacomm_xchg_plan plan_ = nullptr;
  std::vector<char> owned_;
  double comm_seconds_ = 0, plan_seconds_ = 0;
  const char *region_ = nullptr;
};

// y = P^T Z N^-1 Z x_time where x_time = P x (apply_pointing) or the data; Z drops the
// samples of flagged pixels. Result summed over ranks.
class SystemOperator {
 public:
  SystemOperator(const TimeDomain &td, NoiseModel &noise, PixelSpace &space,
                 const std::vector<char> &good)
      : td_(td),
        noise_(noise),
        space_(space),
        good_(good),
        scratch_(static_cast<std::size_t>(td.samples())) {}

  // out = P^T Z N^-1 Z (P x) when x != nullptr, else P^T Z N^-1 Z d.
  void apply(const double *x, std::vector<double> &out) {
    std::fill(out.begin(), out.end(), 0.0);
    const std::int64_t n = td_.samples();
    for (int d = 0; d < td_.detectors; ++d) {
      const std::size_t base = static_cast<std::size_t>(d * n);
      for (std::int64_t t = 0; t < n; ++t) {
        const std::size_t i = base + static_cast<std::size_t>(t);
        const std::int32_t p = td_.pixel_index[i];
        if (!good_[p]) {
          scratch_[t] = 0;
        } else if (x) {
          scratch_[t] = x[3 * p] + x[3 * p + 1] * td_.cos2psi[i] + x[3 * p + 2] * td_.sin2psi[i];
        } else {
          scratch_[t] = td_.data[i];
        }
      }
      noise_.apply_inverse(td_.start, td_.stop, scratch_.data());
      for (std::int64_t t = 0; t < n; ++t) {
        const std::size_t i = base + static_cast<std::size_t>(t);
        const std::int32_t p = td_.pixel_index[i];
        if (!good_[p]) continue;
        out[3 * p] += scratch_[t];
        out[3 * p + 1] += scratch_[t] * td_.cos2psi[i];
        out[3 * p + 2] += scratch_[t] * td_.sin2psi[i];
      }
    }
    space_.reduce(out.data(), 3);
  }

 private:
  const TimeDomain &td_;
  NoiseModel &noise_;
  PixelSpace &space_;
  const std::vector<char> &good_;
  std::vector<double> scratch_;
};

}  // namespace

void check_solver_options(const SolverOptions &options, MPI_Comm comm) {
  petacomm_xchg_plan plan = create_plan(comm, nullptr, 0, options);
  petacomm_xchg_plan_free(&plan);
}

double block_rcond(const double block[6]) {
  double a[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) a[r][c] = block[kPacked[r][c]];
  // Cyclic Jacobi rotations until the off-diagonal part vanishes.
  for (int sweep = 0; sweep < 50; ++sweep) {
    const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    const double diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
    if (off <= 1e-30 * diag || off == 0) break;
    for (int p = 0; p < 2; ++p)
      for (int q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t =
            (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; ++k) {
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; ++k) {
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
      }
  }
  const double lo = std::min({a[0][0], a[1][1], a[2][2]});
  const double hi = std::max({a[0][0], a[1][1], a[2][2]});
  return hi > 0 && lo > 0 ? lo / hi : 0.0;
}

SolveResult solve_map(const TimeDomain &td, NoiseModel &noise, const SolverOptions &options,
                      MPI_Comm comm) {
  SolveResult result;
  const double setup_start = MPI_Wtime();
  petacomm_prof_begin("setup");
  PixelSpace space(td, options, comm);
  const auto npix = static_cast<std::size_t>(space.size());
  const char *strategy = nullptr;
  check_xchg(petacomm_xchg_plan_strategy(space.plan(), &strategy), "petacomm_xchg_plan_strategy");
  result.strategy = strategy;

  // Preconditioner blocks M_p = sum over samples of w w^T / sigma^2, and hit counts.
  std::vector<double> packed(7 * npix, 0.0);
  const double weight = noise.white_weight();
  for (std::size_t i = 0; i < td.pixel_index.size(); ++i) {
    double *m = &packed[7 * static_cast<std::size_t>(td.pixel_index[i])];
    const double w[3] = {1.0, td.cos2psi[i], td.sin2psi[i]};
    for (int r = 0; r < 3; ++r)
      for (int c = r; c < 3; ++c) m[kPacked[r][c]] += w[r] * w[c] * weight;
    m[6] += 1;
  }
  space.reduce(packed.data(), 7);
  result.blocks.resize(6 * npix);
  result.good.assign(npix, 0);
  std::vector<double> inverse(6 * npix, 0.0);
  PixelCounts local;
  for (std::size_t p = 0; p < npix; ++p) {
    std::copy(&packed[7 * p], &packed[7 * p + 6], &result.blocks[6 * p]);
    const bool enough = packed[7 * p + 6] >= options.min_hits;
    const bool conditioned = enough && block_rcond(&result.blocks[6 * p]) >= options.rcond_min;
    result.good[p] = conditioned;
    if (conditioned) invert_block(&result.blocks[6 * p], &inverse[6 * p]);
    if (space.owned()[p]) {
      ++local.observed;
      local.solved += conditioned;
      local.flagged_hits += !enough;
      local.flagged_rcond += enough && !conditioned;
    }
  }
  std::int64_t counts[4] = {local.observed, local.solved, local.flagged_hits, local.flagged_rcond};
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, counts, 4, MPI_INT64_T, MPI_SUM, comm));
  result.pixels = {counts[0], counts[1], counts[2], counts[3]};
  result.owned = space.owned();
  const double setup_local = MPI_Wtime() - setup_start;
  const double plan_local = space.plan_seconds();
  PETACOMM_APP_MPI(
      MPI_Allreduce(&setup_local, &result.setup_seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  PETACOMM_APP_MPI(MPI_Allreduce(&plan_local, &result.plan_seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  check_xchg(petacomm_xchg_plan_stats(space.plan(), PETACOMM_XCHG_FLOAT64, 3, &result.stats),
             "petacomm_xchg_plan_stats");
  std::size_t needed = 0;
  check_xchg(petacomm_xchg_plan_describe(space.plan(), nullptr, 0, &needed),
             "petacomm_xchg_plan_describe");
  result.plan_description.assign(needed, '\0');
  check_xchg(
      petacomm_xchg_plan_describe(space.plan(), result.plan_description.data(), needed, &needed),
      "petacomm_xchg_plan_describe");
  result.plan_description.resize(needed - 1);
  PETACOMM_APP_MPI(MPI_Barrier(comm));  // closes the phase: the wait is its load imbalance
  petacomm_prof_end("setup");

  // Preconditioned conjugate gradients from m = 0.
  petacomm_prof_begin("solve");
  space.set_region("reduce");  // the solve's communication: reductions and dot products
  SystemOperator system(td, noise, space, result.good);
  const auto apply_preconditioner = [&](const std::vector<double> &r, std::vector<double> &z) {
    for (std::size_t p = 0; p < npix; ++p) {
      const double *m = &inverse[6 * p];
      const double *v = &r[3 * p];
      for (int row = 0; row < 3; ++row)
        z[3 * p + row] =
            m[kPacked[row][0]] * v[0] + m[kPacked[row][1]] * v[1] + m[kPacked[row][2]] * v[2];
    }
  };
  std::vector<double> b(3 * npix), x(3 * npix, 0.0), r(3 * npix), z(3 * npix), p(3 * npix),
      q(3 * npix);
  system.apply(nullptr, b);
  r = b;
  apply_preconditioner(r, z);
  p = z;
  double sums[2] = {space.local_dot(b, b), space.local_dot(r, z)};
  space.allreduce(sums, 2);
  const double norm_b = std::sqrt(sums[0]);
  double rz = sums[1];
  space.take_comm_seconds();
  result.stop_reason = "max-iter";
  if (norm_b == 0) {
    result.converged = true;
    result.stop_reason = "zero right-hand side";
  }
  for (int it = 0; it < options.max_iter && !result.converged; ++it) {
    const double t0 = MPI_Wtime();
    system.apply(p.data(), q);
    double pq = space.local_dot(p, q);
    space.allreduce(&pq, 1);
    if (!(pq > 0)) {
      result.stop_reason = "breakdown (p^T A p <= 0)";
      break;
    }
    const double alpha = rz / pq;
    for (std::size_t i = 0; i < 3 * npix; ++i) {
      x[i] += alpha * p[i];
      r[i] -= alpha * q[i];
    }
    apply_preconditioner(r, z);
    double dots[2] = {space.local_dot(r, r), space.local_dot(r, z)};
    space.allreduce(dots, 2);
    const double residual = std::sqrt(dots[0]) / norm_b;
    result.residuals.push_back(residual);
    result.iterations = it + 1;
    if (residual <= options.tol) {
      result.converged = true;
      result.stop_reason = "tolerance";
    } else {
      const double beta = dots[1] / rz;
      rz = dots[1];
      for (std::size_t i = 0; i < 3 * npix; ++i) p[i] = z[i] + beta * p[i];
    }
    result.comm_seconds.push_back(space.take_comm_seconds());
    result.iteration_seconds.push_back(MPI_Wtime() - t0);
  }
  PETACOMM_APP_MPI(MPI_Barrier(comm));
  petacomm_prof_end("solve");
  const int n = result.iterations;
  if (n > 0) {
    PETACOMM_APP_MPI(
        MPI_Allreduce(MPI_IN_PLACE, result.iteration_seconds.data(), n, MPI_DOUBLE, MPI_MAX, comm));
    PETACOMM_APP_MPI(
        MPI_Allreduce(MPI_IN_PLACE, result.comm_seconds.data(), n, MPI_DOUBLE, MPI_MAX, comm));
  }
  result.map = std::move(x);
  return result;
}

}  // namespace petacomm::apps::mapmaker
