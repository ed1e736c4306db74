// Detector noise: generation of the time-ordered noise and the noise weighting N^-1.
//
// The noise is stationary over intervals of `interval` samples (global sample index k L to
// (k+1) L), independent between intervals and detectors. Its power spectrum on an interval
// of L samples is P(f) = sigma^2 (1 + (fknee / f)^alpha) at the discrete frequencies
// f_k = min(k, L - k) rate / L, with P(f_0) = P(f_1): the covariance on an interval is the
// circulant matrix with eigenvalues P_k, so N^-1 is applied exactly by FFT, multiplication by
// 1 / P_k and inverse FFT (FFTW3). White noise is the case fknee = 0 (N = sigma^2 I).
#pragma once

#include <fftw3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace petacomm::apps::mapmaker {

enum class NoiseKind { kNone, kWhite, kOneOverF };

struct NoiseParams {
  NoiseKind kind = NoiseKind::kOneOverF;  // what is added to the data
  bool filter_one_over_f = true;          // N^-1 of the solve: 1/f filter or white (diagonal)
  double sigma = 100.0;                   // white noise level per sample
  double fknee = 0.5;                     // Hz
  double alpha = 1.0;
  double sample_rate = 100.0;      // Hz
  std::int64_t interval = 0;       // samples per stationary interval
  std::int64_t total_samples = 0;  // per detector: the last interval ends there
};

// Real-to-complex and complex-to-real transforms of one length, with their buffers.
class FourierPair {
 public:
  explicit FourierPair(std::int64_t length);
  ~FourierPair();
  FourierPair(const FourierPair &) = delete;
  FourierPair &operator=(const FourierPair &) = delete;
  // x (length L) -> x' = (1 / L) c2r(gain_k * r2c(x)), in place.
  void filter(double *x, const std::vector<double> &gain);

 private:
  std::int64_t length_;
  double *real_;
  fftw_complex *spectrum_;
  fftw_plan forward_, backward_;
};

class NoiseModel {
 public:
  explicit NoiseModel(const NoiseParams &params) : params_(params) {}
  const NoiseParams &params() const { return params_; }

  // Noise of detector d for the global samples [start, stop) (any range), into out.
  void generate(std::uint64_t seed, int detector, std::int64_t start, std::int64_t stop,
                double *out);
  // Applies N^-1 in place to samples [start, stop) of one detector: with the 1/f filter the
  // range must be made of whole stationary intervals.
  void apply_inverse(std::int64_t start, std::int64_t stop, double *x);
  // White-noise weight 1 / sigma^2 (the preconditioner's).
  double white_weight() const { return 1.0 / (params_.sigma * params_.sigma); }
  // P_k on an interval of `length` samples (k = 0 .. length / 2).
  std::vector<double> spectrum(std::int64_t length) const;

 private:
  FourierPair &transforms(std::int64_t length);
  const std::vector<double> &gains(std::int64_t length, bool inverse);
  NoiseParams params_;
  std::map<std::int64_t, std::unique_ptr<FourierPair>> transforms_;
  std::map<std::pair<std::int64_t, bool>, std::vector<double>> gains_;
};

}  // namespace petacomm::apps::mapmaker
