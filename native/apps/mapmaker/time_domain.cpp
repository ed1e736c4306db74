#include "time_domain.hpp"

#include <algorithm>
#include <cmath>

#include "counter_rng.hpp"
#include "error.hpp"
#include "files.hpp"
#include "healpix.hpp"

namespace petacomm::apps::mapmaker {

Sky Sky::generated(std::int64_t nside, std::uint64_t seed) {
  Sky sky;
  sky.nside_ = nside;
  sky.seed_ = seed;
  return sky;
}

Sky Sky::from_file(const std::string &path, std::int64_t nside) {
  NpyArray array = read_npy(path, "--sky");
  const std::int64_t npix = healpix::npix(nside);
  if (array.shape.size() != 2 || array.shape[0] != 3 || array.shape[1] != npix) {
    std::string shape;
    for (auto n : array.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(n);
    fail_arg("--sky: '", path, "' has shape (", shape, "); expected (3, ", npix,
             ") = I, Q, U in RING order for nside ", nside);
  }
  Sky sky;
  sky.nside_ = nside;
  sky.maps_ = std::move(array.data);
  return sky;
}

void Sky::values(const std::vector<std::int64_t> &pixels, std::vector<double> &out) const {
  out.resize(3 * pixels.size());
  const std::int64_t npix = healpix::npix(nside_);
  for (int c = 0; c < 3; ++c) {
    const CounterStream stream(seed_, kStreamSky, static_cast<std::uint64_t>(c));
    for (std::size_t i = 0; i < pixels.size(); ++i)
      out[3 * i + c] = maps_.empty() ? kGeneratedAmplitude[c] *
                                           stream.normal(static_cast<std::uint64_t>(pixels[i]))
                                     : maps_[static_cast<std::size_t>(c * npix + pixels[i])];
  }
}

std::pair<std::int64_t, std::int64_t> sample_range(std::int64_t samples, std::int64_t interval,
                                                   bool whole_intervals, int rank, int ranks) {
  const std::int64_t units = whole_intervals ? (samples + interval - 1) / interval : samples;
  const std::int64_t base = units / ranks, extra = units % ranks;
  const std::int64_t first = rank * base + std::min<std::int64_t>(rank, extra);
  const std::int64_t last = first + base + (rank < extra ? 1 : 0);
  if (!whole_intervals) return {first, last};
  return {std::min(first * interval, samples), std::min(last * interval, samples)};
}

TimeDomain build_time_domain(const ScanParams &scan, NoiseModel &noise, const Sky &sky,
                             std::int64_t start, std::int64_t stop) {
  TimeDomain td;
  td.start = start;
  td.stop = stop;
  td.detectors = scan.detectors;
  const std::int64_t n = stop - start;
  const auto total = static_cast<std::size_t>(n * scan.detectors);
  std::vector<std::int64_t> pixel(total);
  std::vector<double> psi(total);
  for (int d = 0; d < scan.detectors; ++d)
    scan_pointing(scan, d, start, stop, pixel.data() + d * n, psi.data() + d * n);
  td.pixels = pixel;
  std::sort(td.pixels.begin(), td.pixels.end());
  td.pixels.erase(std::unique(td.pixels.begin(), td.pixels.end()), td.pixels.end());
  td.pixel_index.resize(total);
  td.cos2psi.resize(total);
  td.sin2psi.resize(total);
  for (std::size_t i = 0; i < total; ++i) {
    td.pixel_index[i] = static_cast<std::int32_t>(
        std::lower_bound(td.pixels.begin(), td.pixels.end(), pixel[i]) - td.pixels.begin());
    td.cos2psi[i] = std::cos(2 * psi[i]);
    td.sin2psi[i] = std::sin(2 * psi[i]);
  }
  std::vector<double> stokes;
  sky.values(td.pixels, stokes);
  td.data.resize(total);
  for (int d = 0; d < scan.detectors; ++d) {
    double *out = td.data.data() + d * n;
    noise.generate(scan.seed, d, start, stop, out);
    for (std::int64_t t = 0; t < n; ++t) {
      const std::size_t i = static_cast<std::size_t>(d * n + t);
      const double *s = &stokes[3 * static_cast<std::size_t>(td.pixel_index[i])];
      out[t] += s[0] + s[1] * td.cos2psi[i] + s[2] * td.sin2psi[i];
    }
  }
  return td;
}

}  // namespace petacomm::apps::mapmaker
