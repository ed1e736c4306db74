// This rank's share of the time-ordered data: its samples of every detector, their pixels
// (indices into the sorted list of distinct pixels it observes: the reduction's keys),
// Stokes weights and data values d = I + Q cos 2psi + U sin 2psi + noise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "noise.hpp"
#include "scan.hpp"

namespace petacomm::apps::mapmaker {

// The input sky: I, Q, U per HEALPix RING pixel, from a .npy file or generated
// (white: I ~ 100 N(0,1), Q, U ~ 10 N(0,1), from the counter stream kStreamSky).
class Sky {
 public:
  static Sky generated(std::int64_t nside, std::uint64_t seed);
  static Sky from_file(const std::string &path, std::int64_t nside);  // (3, 12 nside^2)
  // I, Q, U of each pixel into out[3 i + c].
  void values(const std::vector<std::int64_t> &pixels, std::vector<double> &out) const;
  bool from_file() const { return !maps_.empty(); }

 private:
  std::int64_t nside_ = 0;
  std::uint64_t seed_ = 0;
  std::vector<double> maps_;  // (3, npix) when read from a file
};

constexpr double kGeneratedAmplitude[3] = {100.0, 10.0, 10.0};

struct TimeDomain {
  std::int64_t start = 0, stop = 0;  // this rank's samples [start, stop) of each detector
  int detectors = 0;
  std::vector<std::int64_t> pixels;       // distinct observed pixels, sorted
  std::vector<std::int32_t> pixel_index;  // per sample (detector-major): index into pixels
  std::vector<double> cos2psi, sin2psi, data;
  std::int64_t samples() const { return stop - start; }
};

// Samples [start, stop) of `rank`: whole stationary intervals when the solve filters 1/f
// noise (its filter needs a whole interval), else an even split (remainder to low ranks).
std::pair<std::int64_t, std::int64_t> sample_range(std::int64_t samples, std::int64_t interval,
                                                   bool whole_intervals, int rank, int ranks);

TimeDomain build_time_domain(const ScanParams &scan, NoiseModel &noise, const Sky &sky,
                             std::int64_t start, std::int64_t stop);

}  // namespace petacomm::apps::mapmaker
