#include "fourier_filter.hpp"

#include <algorithm>
#include <cstring>

#include "agreement.hpp"
#include "array_check.hpp"
#include "json_out.hpp"
#include "options.hpp"

namespace petacomm::transpose {
namespace {

const char *variant_name(int v) {
  switch (v) {
    case PETACOMM_FFTFILTER_PLAIN:
      return "plain";
    case PETACOMM_FFTFILTER_PACKED:
      return "packed";
    default:
      return "packed-partial";
  }
}

// |index| of FFT index k of an n-point transform (the Nyquist index n/2 counts n/2).
std::int64_t wavenumber(std::int64_t k, std::int64_t n) { return std::min(k, n - k); }

}  // namespace

FourierFilter::FourierFilter(MPI_Comm comm, const std::int64_t n[3], const int grid[2],
                             const std::int64_t modes[2], int variant,
                             const petacomm_transpose_options *opts, const char *caller_error)
    : variant_(variant) {
  require_mpi_running("petacomm_fftfilter_create");
  if (comm == MPI_COMM_NULL) fail_arg("comm: MPI_COMM_NULL");
  int p = 1, rank = 0;
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &p));
  PETACOMM_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  const auto first_problem = [&]() -> std::string {
    if (n == nullptr || grid == nullptr || modes == nullptr)
      return "n, grid, modes: must not be NULL";
    if (n[0] < 1 || n[1] < 2 || n[2] < 2 || n[1] % 2 || n[2] % 2)
      return concat("n: expected n_s >= 1 and even n_chi, n_phi >= 2, got (", n[0], ", ", n[1],
                    ", ", n[2], ")");
    if (grid[0] < 1 || grid[1] < 1 || static_cast<std::int64_t>(grid[0]) * grid[1] != p)
      return concat("grid: ", grid[0], " x ", grid[1], " does not match the ", p,
                    " ranks of the communicator");
    if (modes[0] < 0 || modes[1] < 0)
      return concat("modes: M and N must be >= 0, got (", modes[0], ", ", modes[1], ")");
    if (variant < PETACOMM_FFTFILTER_PLAIN || variant > PETACOMM_FFTFILTER_PACKED_PARTIAL)
      return concat("variant: unknown variant ", variant,
                    " (expected 0 plain, 1 packed, 2 packed-partial)");
    // The plain variant transposes the field complexified.
    return size_problem("n", {n[0], n[1], n[2]}, 1, PETACOMM_TRANSPOSE_COMPLEX128);
  };
  // A binding's own finding comes first: the other arguments may be placeholders then.
  std::string problem =
      caller_error != nullptr && *caller_error != '\0' ? caller_error : first_problem();
  TransposeOptions o;
  if (problem.empty()) o = validate_options(opts, 0, false, &problem);
  if (problem.empty() && variant == PETACOMM_FFTFILTER_PACKED_PARTIAL && o.strategy != "auto" &&
      o.strategy != "partial")
    problem = concat("strategy: the packed-partial variant transposes with 'partial', got '",
                     o.strategy, "'");
  if (problem.empty() && variant != PETACOMM_FFTFILTER_PACKED_PARTIAL && o.strategy == "partial")
    problem = "strategy: 'partial' is the packed-partial variant's (it needs the mode mask)";
  std::uint64_t h = 0;
  if (problem.empty()) {
    h = fingerprint(
        o, mix(mix(mix(mix(static_cast<std::uint64_t>(n[0]), n[1]), n[2]), grid[0]), grid[1]));
    h = mix(mix(mix(h, modes[0]), modes[1]), variant);
  }
  agree_or_fail(comm, problem, h,
                "arguments differ between ranks: n, grid, modes, variant and the options must "
                "be the same on every rank");
  const double start = MPI_Wtime();
  n_s_ = n[0];
  n_chi_ = n[1];
  n_phi_ = n[2];
  m_max_ = modes[0];
  n_max_ = modes[1];
  grid_[0] = grid[0];
  grid_[1] = grid[1];
  PETACOMM_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  const int i_s = rank / grid[1], i_chi = rank % grid[1];
  PETACOMM_CHECK_MPI(MPI_Comm_split(comm_, i_s, i_chi, &chi_comm_));
  const BlockDistribution s_blocks{n_s_, grid[0]}, chi_blocks{n_chi_, grid[1]};
  s_count_ = s_blocks.count(i_s);
  s_offset_ = s_blocks.offset(i_s);
  chi_count_ = chi_blocks.count(i_chi);
  chi_offset_ = chi_blocks.offset(i_chi);
  const bool packed = variant != PETACOMM_FFTFILTER_PLAIN;
  k_total_ = packed ? n_phi_ / 2 : n_phi_;
  const BlockDistribution k_blocks{k_total_, grid[1]};
  k_count_ = k_blocks.count(i_chi);
  k_offset_ = k_blocks.offset(i_chi);
  // Forward: chi rows x k columns (batch s) -> k rows x chi columns; backward the reverse.
  Geometry forward, backward;
  forward.n_rows = n_chi_;
  forward.n_cols = k_total_;
  forward.batch = s_count_;
  forward.elem = sizeof(Complex);
  forward.in_row = k_total_;
  forward.in_batch = chi_count_ * k_total_;
  forward.out_row = n_chi_;
  forward.out_batch = k_count_ * n_chi_;
  backward = forward;
  std::swap(backward.n_rows, backward.n_cols);
  backward.in_row = n_chi_;
  backward.in_batch = k_count_ * n_chi_;
  backward.out_row = k_total_;
  backward.out_batch = chi_count_ * k_total_;
  if (variant == PETACOMM_FFTFILTER_PACKED_PARTIAL) {
    o.strategy = "partial";
    o.measure = false;
    std::vector<unsigned char> kept(k_total_);
    for (std::int64_t k = 0; k < k_total_; ++k) kept[k] = phi_mode_kept(k);
    forward.col_kept = kept;
    backward.row_kept = kept;
    // The chi FFTs and the mask skip the excluded mode lines, so the forward transpose
    // need not zero them; the backward one must (the c2r reads every mode).
    forward.zero_output_outside_mask = false;
  }
  transposer_ = std::make_unique<Transposer>(chi_comm_, forward, backward, o);
  if (packed) {
    phi_real_ = std::make_unique<PackedRealLines>(n_phi_);
  } else {
    phi_complex_ = std::make_unique<ComplexLines>(n_phi_);
  }
  chi_lines_ = std::make_unique<ComplexLines>(n_chi_);
  lines_.resize(static_cast<std::size_t>(s_count_ * chi_count_ * k_total_) * sizeof(Complex));
  modes_.resize(static_cast<std::size_t>(s_count_ * k_count_ * n_chi_) * sizeof(Complex));
  stats_.total_seconds = 0;
  description_.clear();
  setup_seconds_ = MPI_Wtime() - start;
}

FourierFilter::~FourierFilter() { release(); }

void FourierFilter::release() {
  transposer_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    if (chi_comm_ != MPI_COMM_NULL) MPI_Comm_free(&chi_comm_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  chi_comm_ = comm_ = MPI_COMM_NULL;
}

bool FourierFilter::phi_mode_kept(std::int64_t k) const {
  if (variant_ == PETACOMM_FFTFILTER_PLAIN) return wavenumber(k, n_phi_) <= n_max_;
  // Packed slot 0 carries modes 0 and n_phi/2: mode 0 is always kept.
  return k <= n_max_;
}

void FourierFilter::local(std::int64_t shape[3], std::int64_t offset[3]) const {
  shape[0] = s_count_;
  shape[1] = chi_count_;
  shape[2] = n_phi_;
  offset[0] = s_offset_;
  offset[1] = chi_offset_;
  offset[2] = 0;
}

std::size_t FourierFilter::field_bytes() const {
  return static_cast<std::size_t>(s_count_ * chi_count_ * n_phi_) * sizeof(double);
}

void FourierFilter::run(const std::string &problem, const double *in, double *out) {
  agree_or_fail(comm_, problem);
  filter(in, out);
}

void FourierFilter::apply(const double *in, double *out) {
  require_mpi_running("petacomm_fftfilter_apply");
  run(check_buffers(in, field_bytes(), out, field_bytes()), in, out);
}

void FourierFilter::apply_array(const petacomm_transpose_array *in,
                                const petacomm_transpose_array *out) {
  require_mpi_running("petacomm_fftfilter_apply_array");
  const std::vector<std::int64_t> shape{s_count_, chi_count_, n_phi_};
  std::string problem = check_array("in", in, shape, PETACOMM_TRANSPOSE_FLOAT64, false);
  if (problem.empty()) problem = check_array("out", out, shape, PETACOMM_TRANSPOSE_FLOAT64, true);
  if (problem.empty()) problem = check_buffers(in->data, field_bytes(), out->data, field_bytes());
  if (!problem.empty()) {
    run(problem, nullptr, nullptr);
    return;
  }
  run(problem, static_cast<const double *>(in->data), static_cast<double *>(out->data));
}

void FourierFilter::filter(const double *in, double *out) {
  const double start = MPI_Wtime();
  auto *lines = reinterpret_cast<Complex *>(lines_.data());
  const std::int64_t phi_lines = s_count_ * chi_count_;
  // 1. Along phi: r2c packed, or the complexified field's c2c.
  double t = MPI_Wtime();
  if (phi_real_) {
    phi_real_->forward(in, lines, phi_lines);
  } else {
    for (std::int64_t k = 0; k < phi_lines * n_phi_; ++k) lines[k] = Complex(in[k], 0.0);
    phi_complex_->forward(lines, phi_lines);
  }
  stats_.fft_phi_seconds += MPI_Wtime() - t;
  // 2. chi <-> modes.
  t = MPI_Wtime();
  transposer_->execute(Direction::kForward, lines_.data(), modes_.data());
  stats_.transpose_seconds += MPI_Wtime() - t;
  // 3. Along chi. packed-partial skips the lines of excluded phi modes (the partial
  // transpose delivered zeros); the other variants transform every line, then mask.
  t = MPI_Wtime();
  chi_pass(true);
  stats_.fft_chi_seconds += MPI_Wtime() - t;
  t = MPI_Wtime();
  mask_modes();
  stats_.mask_seconds += MPI_Wtime() - t;
  t = MPI_Wtime();
  chi_pass(false);
  stats_.fft_chi_seconds += MPI_Wtime() - t;
  // 4. Back: modes <-> chi, then along phi.
  t = MPI_Wtime();
  transposer_->execute(Direction::kBackward, modes_.data(), lines_.data());
  stats_.transpose_seconds += MPI_Wtime() - t;
  t = MPI_Wtime();
  if (phi_real_) {
    phi_real_->backward(lines, out, phi_lines);
  } else {
    phi_complex_->backward(lines, phi_lines);
    const double scale = 1.0 / static_cast<double>(n_phi_);
    for (std::int64_t k = 0; k < phi_lines * n_phi_; ++k) out[k] = lines[k].real() * scale;
  }
  stats_.fft_phi_seconds += MPI_Wtime() - t;
  stats_.bytes_sent +=
      transposer_->bytes(Direction::kForward) + transposer_->bytes(Direction::kBackward);
  stats_.messages_sent +=
      transposer_->messages(Direction::kForward) + transposer_->messages(Direction::kBackward);
  stats_.applications += 1;
  stats_.total_seconds += MPI_Wtime() - start;
}

// The chi FFTs over runs of consecutive lines (one FFTW call per run).
void FourierFilter::chi_pass(bool forward) {
  auto *modes = reinterpret_cast<Complex *>(modes_.data());
  const bool skip = variant_ == PETACOMM_FFTFILTER_PACKED_PARTIAL;
  for (std::int64_t s = 0; s < s_count_; ++s) {
    std::int64_t first = 0;
    while (first < k_count_) {
      if (skip && !phi_mode_kept(k_offset_ + first)) {
        ++first;
        continue;
      }
      std::int64_t last = first + 1;
      while (last < k_count_ && (!skip || phi_mode_kept(k_offset_ + last))) ++last;
      Complex *run = modes + (s * k_count_ + first) * n_chi_;
      if (forward) {
        chi_lines_->forward(run, last - first);
      } else {
        chi_lines_->backward(run, last - first);
      }
      first = last;
    }
  }
}

// Zeroes the modes outside |m| <= M (chi) and |n| <= N (phi), and scales the kept ones by
// 1/n_chi (the chi inverse is unnormalised; the phi inverse normalises itself).
void FourierFilter::mask_modes() {
  auto *modes = reinterpret_cast<Complex *>(modes_.data());
  const double scale = 1.0 / static_cast<double>(n_chi_);
  const bool packed = variant_ != PETACOMM_FFTFILTER_PLAIN;
  for (std::int64_t s = 0; s < s_count_; ++s)
    for (std::int64_t kk = 0; kk < k_count_; ++kk) {
      Complex *line = modes + (s * k_count_ + kk) * n_chi_;
      const std::int64_t k = k_offset_ + kk;
      if (!phi_mode_kept(k)) {
        // packed-partial never reads these lines (its backward transpose skips them); the
        // other variants transpose them back, so zero them.
        if (variant_ != PETACOMM_FFTFILTER_PACKED_PARTIAL)
          std::fill(line, line + n_chi_, Complex(0.0, 0.0));
        continue;
      }
      if (packed && k == 0 && n_max_ < n_phi_ / 2) {
        // Slot 0 is A + iB with A (mode 0) and B (mode n_phi/2) real along chi, so their
        // chi transforms satisfy A[-m] = conj(A[m]): keep A = (Z[m] + conj(Z[-m])) / 2,
        // drop B.
        std::vector<Complex> a(n_chi_);
        for (std::int64_t m = 0; m < n_chi_; ++m)
          a[m] = 0.5 * (line[m] + std::conj(line[(n_chi_ - m) % n_chi_]));
        std::copy(a.begin(), a.end(), line);
      }
      for (std::int64_t m = 0; m < n_chi_; ++m)
        line[m] = wavenumber(m, n_chi_) <= m_max_ ? line[m] * scale : Complex(0.0, 0.0);
    }
}

const std::string &FourierFilter::describe() {
  JsonOut j;
  j.begin_object();
  j.value("kind", "fftfilter").value("variant", variant_name(variant_));
  j.begin_array("n").value(nullptr, n_s_).value(nullptr, n_chi_).value(nullptr, n_phi_);
  j.end_array();
  j.begin_array("grid").value(nullptr, grid_[0]).value(nullptr, grid_[1]).end_array();
  j.begin_array("modes").value(nullptr, m_max_).value(nullptr, n_max_).end_array();
  j.value("transposed_columns", k_total_);
  j.value("bytes_per_application",
          transposer_->bytes(Direction::kForward) + transposer_->bytes(Direction::kBackward));
  j.value("setup_seconds", setup_seconds_);
  j.raw("transpose", transposer_->describe_json());
  j.end_object();
  description_ = j.str();
  return description_;
}

}  // namespace petacomm::transpose
