#include "fft_lines.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "error.hpp"

namespace petacomm::transpose {
namespace {

// About 256 KiB of lines per FFTW call: the chunk stays in L2 between the FFT and the
// packing that follows it.
std::int64_t chunk_lines(std::int64_t line_bytes) {
  return std::max<std::int64_t>(1, (256 << 10) / std::max<std::int64_t>(1, line_bytes));
}

fftw_complex *as_fftw(Complex *p) { return reinterpret_cast<fftw_complex *>(p); }

// FFTW takes lengths as int.
void check_fftw_length(std::int64_t n) {
  if (n > std::numeric_limits<int>::max())
    fail_arg("n: line length ", n, " exceeds FFTW's limit of ", std::numeric_limits<int>::max());
}

}  // namespace

FftwPlan::~FftwPlan() {
  if (plan_ != nullptr) fftw_destroy_plan(plan_);
}

FftwPlan &FftwPlan::operator=(FftwPlan &&o) noexcept {
  if (this != &o) {
    if (plan_ != nullptr) fftw_destroy_plan(plan_);
    plan_ = o.plan_;
    o.plan_ = nullptr;
  }
  return *this;
}

PackedRealLines::PackedRealLines(std::int64_t n) : n_(n) {
  if (n < 2 || n % 2 != 0) fail_arg("n: the packed format needs an even length >= 2, got ", n);
  check_fftw_length(n);
  const std::int64_t modes = n / 2 + 1;
  chunk_ = chunk_lines(n * static_cast<std::int64_t>(sizeof(double)));
  work_.resize(static_cast<std::size_t>(chunk_ * modes) * sizeof(Complex));
  Buffer real(static_cast<std::size_t>(chunk_ * n) * sizeof(double));
  const int length = static_cast<int>(n), howmany = static_cast<int>(chunk_);
  auto *modes_ptr = reinterpret_cast<fftw_complex *>(work_.data());
  auto *real_ptr = reinterpret_cast<double *>(real.data());
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  r2c_ = FftwPlan(fftw_plan_many_dft_r2c(1, &length, howmany, real_ptr, nullptr, 1, length,
                                         modes_ptr, nullptr, 1, static_cast<int>(modes), flags));
  c2r_ = FftwPlan(fftw_plan_many_dft_c2r(1, &length, howmany, modes_ptr, nullptr, 1,
                                         static_cast<int>(modes), real_ptr, nullptr, 1, length,
                                         flags | FFTW_DESTROY_INPUT));
  if (!r2c_.get() || !c2r_.get()) fail_internal("FFTW could not plan real lines of ", n);
}

void PackedRealLines::forward(const double *in, Complex *out, std::int64_t count) {
  const std::int64_t half = n_ / 2, modes = half + 1;
  auto *work = reinterpret_cast<Complex *>(work_.data());
  for (std::int64_t first = 0; first < count; first += chunk_) {
    const std::int64_t lines = std::min(chunk_, count - first);
    // FFTW plans a fixed number of lines: a short last chunk goes through the work
    // buffer's full size on a copy of its lines.
    const double *src = in + first * n_;
    Buffer tail;
    if (lines < chunk_) {
      tail.resize(static_cast<std::size_t>(chunk_ * n_) * sizeof(double));
      std::memset(tail.data(), 0, tail.size());
      std::memcpy(tail.data(), src, static_cast<std::size_t>(lines * n_) * sizeof(double));
      src = reinterpret_cast<const double *>(tail.data());
    }
    fftw_execute_dft_r2c(r2c_.get(), const_cast<double *>(src), as_fftw(work));
    for (std::int64_t l = 0; l < lines; ++l) {
      const Complex *m = work + l * modes;
      Complex *packed = out + (first + l) * half;
      packed[0] = Complex(m[0].real(), m[half].real());
      std::memcpy(packed + 1, m + 1, static_cast<std::size_t>(half - 1) * sizeof(Complex));
    }
  }
}

void PackedRealLines::backward(const Complex *in, double *out, std::int64_t count) {
  const std::int64_t half = n_ / 2, modes = half + 1;
  auto *work = reinterpret_cast<Complex *>(work_.data());
  const double scale = 1.0 / static_cast<double>(n_);
  Buffer tail;
  for (std::int64_t first = 0; first < count; first += chunk_) {
    const std::int64_t lines = std::min(chunk_, count - first);
    for (std::int64_t l = 0; l < lines; ++l) {
      const Complex *packed = in + (first + l) * half;
      Complex *m = work + l * modes;
      m[0] = Complex(packed[0].real(), 0.0);
      m[half] = Complex(packed[0].imag(), 0.0);
      std::memcpy(m + 1, packed + 1, static_cast<std::size_t>(half - 1) * sizeof(Complex));
    }
    for (std::int64_t l = lines; l < chunk_; ++l)
      std::fill(work + l * modes, work + (l + 1) * modes, Complex(0.0, 0.0));
    double *dst = out + first * n_;
    if (lines < chunk_) {
      tail.resize(static_cast<std::size_t>(chunk_ * n_) * sizeof(double));
      dst = reinterpret_cast<double *>(tail.data());
    }
    fftw_execute_dft_c2r(c2r_.get(), as_fftw(work), dst);
    for (std::int64_t k = 0; k < lines * n_; ++k) dst[k] *= scale;
    if (lines < chunk_)
      std::memcpy(out + first * n_, dst, static_cast<std::size_t>(lines * n_) * sizeof(double));
  }
}

ComplexLines::ComplexLines(std::int64_t n) : n_(n) {
  if (n < 1) fail_arg("n: line length must be >= 1, got ", n);
  check_fftw_length(n);
  chunk_ = chunk_lines(n * static_cast<std::int64_t>(sizeof(Complex)));
  Buffer lines(static_cast<std::size_t>(chunk_ * n) * sizeof(Complex));
  auto *p = reinterpret_cast<fftw_complex *>(lines.data());
  const int length = static_cast<int>(n), howmany = static_cast<int>(chunk_);
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  forward_ = FftwPlan(fftw_plan_many_dft(1, &length, howmany, p, nullptr, 1, length, p, nullptr, 1,
                                         length, FFTW_FORWARD, flags));
  backward_ = FftwPlan(fftw_plan_many_dft(1, &length, howmany, p, nullptr, 1, length, p, nullptr, 1,
                                          length, FFTW_BACKWARD, flags));
  if (!forward_.get() || !backward_.get()) fail_internal("FFTW could not plan lines of ", n);
}

void ComplexLines::run(fftw_plan chunked, int, Complex *lines, std::int64_t count) {
  Buffer tail;
  for (std::int64_t first = 0; first < count; first += chunk_) {
    const std::int64_t n = std::min(chunk_, count - first);
    Complex *at = lines + first * n_;
    if (n == chunk_) {
      fftw_execute_dft(chunked, as_fftw(at), as_fftw(at));
      continue;
    }
    tail.resize(static_cast<std::size_t>(chunk_ * n_) * sizeof(Complex));
    std::memset(tail.data(), 0, tail.size());
    std::memcpy(tail.data(), at, static_cast<std::size_t>(n * n_) * sizeof(Complex));
    auto *t = reinterpret_cast<fftw_complex *>(tail.data());
    fftw_execute_dft(chunked, t, t);
    std::memcpy(at, tail.data(), static_cast<std::size_t>(n * n_) * sizeof(Complex));
  }
}

void ComplexLines::forward(Complex *lines, std::int64_t count) {
  run(forward_.get(), FFTW_FORWARD, lines, count);
}

void ComplexLines::backward(Complex *lines, std::int64_t count) {
  run(backward_.get(), FFTW_BACKWARD, lines, count);
}

}  // namespace petacomm::transpose
