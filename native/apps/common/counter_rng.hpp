// Counter-based random numbers shared by the mini-apps.
//
// The value at index i of the stream (seed, stream, sub) is a pure function of those four
// integers, so any rank can generate any sample's noise or pointing jitter without
// communication, and results do not depend on how samples are split over ranks. The same
// definition is implemented with numpy in petacomm.datasets.counter_rng (the scan generator
// of the sparse-reduce benchmark uses it; tests/apps check that both agree bit for bit):
//
//   mix(z)       the SplitMix64 finaliser
//   key          k = mix(seed + G); k = mix(k + (stream + 1) G); k = mix(k + (sub + 1) G)
//   bits(i)      mix(k + (i + 1) G)                         (G = 0x9E3779B97F4A7C15, mod 2^64)
//   uniform(i)   ((bits(i) >> 11) + 0.5) 2^-53               in (0, 1)
//   normal(i)    sqrt(-2 ln uniform(2i)) cos(2 pi uniform(2i + 1))   (Box-Muller, one branch)
#pragma once

#include <cmath>
#include <cstdint>

namespace petacomm::apps {

// Stream numbers: one per purpose, so the purposes never share random numbers.
enum RandomStream : std::uint64_t {
  kStreamScanPhases = 1,    // sub 0: the three phases of the scan
  kStreamJitter = 2,        // sub = detector: pointing jitter, index 3 t + axis
  kStreamNoise = 3,         // sub = detector: white normals of the time-ordered noise
  kStreamSky = 4,           // sub = Stokes component: the generated sky, index = pixel
  kStreamMadbenchData = 5,  // sub 0: MADbench's data map, index = pixel
};

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
constexpr double kPi = 3.14159265358979323846;

constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class CounterStream {
 public:
  CounterStream(std::uint64_t seed, std::uint64_t stream, std::uint64_t sub) {
    std::uint64_t k = mix64(seed + kGolden);
    k = mix64(k + (stream + 1) * kGolden);
    key_ = mix64(k + (sub + 1) * kGolden);
  }
  std::uint64_t bits(std::uint64_t i) const { return mix64(key_ + (i + 1) * kGolden); }
  double uniform(std::uint64_t i) const {
    return (static_cast<double>(bits(i) >> 11) + 0.5) * 0x1p-53;
  }
  double normal(std::uint64_t i) const {
    const double radius = std::sqrt(-2.0 * std::log(uniform(2 * i)));
    return radius * std::cos(2.0 * kPi * uniform(2 * i + 1));
  }

 private:
  std::uint64_t key_;
};

}  // namespace petacomm::apps
