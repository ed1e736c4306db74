// The simulated scan: a telescope spinning about an axis at spin_angle from the boresight,
// the spin axis precessing at precession_angle about the anti-sun direction, which turns
// around the ecliptic over year_fraction of a year during the observation; several
// detectors with polarisation angles pi d / D in the focal plane. Every sample hits one
// HEALPix RING pixel and has a polarisation angle psi.
//
// The boresight follows the same formulas (and the same counter-based random numbers) as
// the key-set generator petacomm.datasets.CmbScanKeys, so detector 0's pixels are that
// generator's keys for the same seed and parameters (tests/apps/test_mapmaker_scan.py).
// Everything is a function of the global sample index: any rank generates its own samples.
#pragma once

#include <cstdint>

namespace petacomm::apps::mapmaker {

struct ScanParams {
  std::int64_t nside = 64;
  std::int64_t samples = 1000000;  // per detector, over the whole observation
  int detectors = 4;
  std::int64_t spin_samples = 1000;  // samples per spin (one ring)
  std::int64_t precession_spins = 25;
  double spin_angle_deg = 85.0;
  double precession_angle_deg = 7.5;
  double year_fraction = 1.0;
  std::uint64_t seed = 0;
};

// Pixels and polarisation angles (radians, from north through east) of detector `detector`
// for the global samples [start, stop): pixel[t - start], psi[t - start].
void scan_pointing(const ScanParams &scan, int detector, std::int64_t start, std::int64_t stop,
                   std::int64_t *pixel, double *psi);

// Polarisation angle of detector d in the focal plane (from the scan direction): pi d / D.
double detector_angle(int detector, int detectors);

}  // namespace petacomm::apps::mapmaker
