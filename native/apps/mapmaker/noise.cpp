#include "noise.hpp"

#include <algorithm>
#include <cmath>
#include <new>

#include "counter_rng.hpp"

namespace petacomm::apps::mapmaker {

FourierPair::FourierPair(std::int64_t length) : length_(length) {
  real_ = fftw_alloc_real(static_cast<std::size_t>(length));
  spectrum_ = fftw_alloc_complex(static_cast<std::size_t>(length / 2 + 1));
  if (!real_ || !spectrum_) throw std::bad_alloc();
  // FFTW_ESTIMATE: the plan (and so the rounding) is the same on every rank and every run.
  forward_ = fftw_plan_dft_r2c_1d(static_cast<int>(length), real_, spectrum_, FFTW_ESTIMATE);
  backward_ = fftw_plan_dft_c2r_1d(static_cast<int>(length), spectrum_, real_, FFTW_ESTIMATE);
}

FourierPair::~FourierPair() {
  fftw_destroy_plan(forward_);
  fftw_destroy_plan(backward_);
  fftw_free(real_);
  fftw_free(spectrum_);
}

void FourierPair::filter(double *x, const std::vector<double> &gain) {
  std::copy(x, x + length_, real_);
  fftw_execute(forward_);
  for (std::int64_t k = 0; k <= length_ / 2; ++k) {
    spectrum_[k][0] *= gain[k];
    spectrum_[k][1] *= gain[k];
  }
  fftw_execute(backward_);
  const double scale = 1.0 / static_cast<double>(length_);
  for (std::int64_t i = 0; i < length_; ++i) x[i] = real_[i] * scale;
}

std::vector<double> NoiseModel::spectrum(std::int64_t length) const {
  std::vector<double> p(static_cast<std::size_t>(length / 2 + 1));
  const double s2 = params_.sigma * params_.sigma;
  for (std::int64_t k = 0; k <= length / 2; ++k) {
    const std::int64_t kk = std::max<std::int64_t>(k, 1);  // P(f_0) = P(f_1)
    const double f = static_cast<double>(kk) * params_.sample_rate / static_cast<double>(length);
    p[k] = params_.fknee > 0 ? s2 * (1.0 + std::pow(params_.fknee / f, params_.alpha)) : s2;
  }
  return p;
}

FourierPair &NoiseModel::transforms(std::int64_t length) {
  auto &slot = transforms_[length];
  if (!slot) slot = std::make_unique<FourierPair>(length);
  return *slot;
}

const std::vector<double> &NoiseModel::gains(std::int64_t length, bool inverse) {
  auto &g = gains_[{length, inverse}];
  if (g.empty()) {
    g = spectrum(length);
    for (double &v : g) v = inverse ? 1.0 / v : std::sqrt(v);
  }
  return g;
}

void NoiseModel::generate(std::uint64_t seed, int detector, std::int64_t start, std::int64_t stop,
                          double *out) {
  const CounterStream normals(seed, kStreamNoise, static_cast<std::uint64_t>(detector));
  if (params_.kind == NoiseKind::kNone) {
    std::fill(out, out + (stop - start), 0.0);
    return;
  }
  if (params_.kind == NoiseKind::kWhite) {
    for (std::int64_t t = start; t < stop; ++t)
      out[t - start] = params_.sigma * normals.normal(static_cast<std::uint64_t>(t));
    return;
  }
  // 1/f: colour the white normals of each whole interval, keep the part in [start, stop).
  const std::int64_t L = params_.interval;
  std::vector<double> buffer;
  for (std::int64_t first = (start / L) * L; first < stop; first += L) {
    const std::int64_t last = std::min(first + L, params_.total_samples);
    buffer.resize(static_cast<std::size_t>(last - first));
    for (std::int64_t t = first; t < last; ++t)
      buffer[t - first] = normals.normal(static_cast<std::uint64_t>(t));
    const std::int64_t length = last - first;
    transforms(length).filter(buffer.data(), gains(length, false));
    for (std::int64_t t = std::max(first, start); t < std::min(last, stop); ++t)
      out[t - start] = buffer[t - first];
  }
}

void NoiseModel::apply_inverse(std::int64_t start, std::int64_t stop, double *x) {
  if (!params_.filter_one_over_f) {
    const double w = white_weight();
    for (std::int64_t i = 0; i < stop - start; ++i) x[i] *= w;
    return;
  }
  const std::int64_t L = params_.interval;
  for (std::int64_t first = start; first < stop; first += L) {
    const std::int64_t length = std::min(L, stop - first);
    transforms(length).filter(x + (first - start), gains(length, true));
  }
}

}  // namespace petacomm::apps::mapmaker
