// Batched 1-D FFTs (FFTW3) over contiguous lines, and the packed half-complex format: a
// real line of n values has n/2 + 1 complex modes, of which modes 0 and n/2 are real; the
// packed line stores mode 0 in the real part and mode n/2 in the imaginary part of slot 0,
// so it holds exactly n/2 complex numbers and loses nothing.
#pragma once

#include <fftw3.h>

#include <complex>
#include <cstdint>

#include "mpi_resources.hpp"

namespace petacomm::transpose {

using Complex = std::complex<double>;

// FFTW plans over `chunk` lines at a time (cache-sized), applied to any arrays of lines.
class FftwPlan {
 public:
  FftwPlan() = default;
  explicit FftwPlan(fftw_plan p) : plan_(p) {}
  ~FftwPlan();
  FftwPlan(FftwPlan &&o) noexcept : plan_(o.plan_) { o.plan_ = nullptr; }
  FftwPlan &operator=(FftwPlan &&o) noexcept;
  FftwPlan(const FftwPlan &) = delete;
  FftwPlan &operator=(const FftwPlan &) = delete;
  fftw_plan get() const { return plan_; }

 private:
  fftw_plan plan_ = nullptr;
};

// Real lines of n (even) values <-> packed lines of n/2 complex values.
class PackedRealLines {
 public:
  explicit PackedRealLines(std::int64_t n);
  // count lines: in[count][n] -> out[count][n/2] (unnormalised).
  void forward(const double *in, Complex *out, std::int64_t count);
  // The inverse, normalised by 1/n: out[count][n] (may not alias in).
  void backward(const Complex *in, double *out, std::int64_t count);

 private:
  std::int64_t n_, chunk_;
  Buffer work_;  // chunk lines of n/2 + 1 modes
  FftwPlan r2c_, c2r_;
};

// Complex lines of n values, transformed in place.
class ComplexLines {
 public:
  explicit ComplexLines(std::int64_t n);
  void forward(Complex *lines, std::int64_t count);
  void backward(Complex *lines, std::int64_t count);  // unnormalised, like FFTW

 private:
  void run(fftw_plan chunked, int sign, Complex *lines, std::int64_t count);
  std::int64_t n_, chunk_;
  FftwPlan forward_, backward_;
};

}  // namespace petacomm::transpose
