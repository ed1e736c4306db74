#include "scan.hpp"

#include <algorithm>
#include <cmath>

#include "counter_rng.hpp"
#include "healpix.hpp"

namespace petacomm::apps::mapmaker {

double detector_angle(int detector, int detectors) { return kPi * detector / detectors; }

void scan_pointing(const ScanParams &scan, int detector, std::int64_t start, std::int64_t stop,
                   std::int64_t *pixel, double *psi) {
  // The expressions keep numpy's evaluation order (datasets/cmb_scan.py) so that both give
  // the same doubles: same pixels except where libm rounding differs at a pixel edge.
  const CounterStream phase_stream(scan.seed, kStreamScanPhases, 0);
  const double phase[3] = {2 * kPi * phase_stream.uniform(0), 2 * kPi * phase_stream.uniform(1),
                           2 * kPi * phase_stream.uniform(2)};
  const CounterStream jitter_stream(scan.seed, kStreamJitter, static_cast<std::uint64_t>(detector));
  const double total = static_cast<double>(std::max<std::int64_t>(scan.samples, 1));
  const double precession_period = static_cast<double>(scan.spin_samples * scan.precession_spins);
  const double alpha = scan.precession_angle_deg * (kPi / 180.0);
  const double beta = scan.spin_angle_deg * (kPi / 180.0);
  const double ca = std::cos(alpha), sa = std::sin(alpha);
  const double cb = std::cos(beta), sb = std::sin(beta);
  const double jitter = healpix::resolution(scan.nside) / 3;
  const double gamma = detector_angle(detector, scan.detectors);
  const double cg = std::cos(gamma), sg = std::sin(gamma);
  for (std::int64_t i = start; i < stop; ++i) {
    const double t = static_cast<double>(i);
    const double longitude = phase[0] + 2 * kPi * scan.year_fraction * t / total;
    const double precession = phase[1] + 2 * kPi * t / precession_period;
    const double spin = phase[2] + 2 * kPi * t / static_cast<double>(scan.spin_samples);
    // Anti-sun direction a, east e (in the ecliptic plane), pole z = (0, 0, 1).
    const double a[3] = {std::cos(longitude), std::sin(longitude), 0.0};
    const double e[3] = {-std::sin(longitude), std::cos(longitude), 0.0};
    const double cp = std::cos(precession), sp = std::sin(precession);
    const double axis[3] = {ca * a[0] + sa * (sp * e[0]), ca * a[1] + sa * (sp * e[1]), sa * cp};
    double u[3] = {-axis[0] * axis[2], -axis[1] * axis[2], 1.0 - axis[2] * axis[2]};
    const double norm = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (double &c : u) c /= norm;
    const double v[3] = {axis[1] * u[2] - axis[2] * u[1], axis[2] * u[0] - axis[0] * u[2],
                         axis[0] * u[1] - axis[1] * u[0]};
    const double cs = std::cos(spin), ss = std::sin(spin);
    double b[3];
    for (int c = 0; c < 3; ++c) b[c] = cb * axis[c] + sb * (cs * u[c] + ss * v[c]);
    // Pointing jitter of a third of a pixel: the samples spread over the pixels.
    const auto base = static_cast<std::uint64_t>(3 * i);
    const double jittered[3] = {b[0] + jitter * jitter_stream.normal(base),
                                b[1] + jitter * jitter_stream.normal(base + 1),
                                b[2] + jitter * jitter_stream.normal(base + 2)};
    pixel[i - start] = healpix::vec2pix_ring(scan.nside, jittered[0], jittered[1], jittered[2]);
    // Polarisation direction: the scan direction (d b / d spin) turned by the detector's
    // angle towards the cross-scan direction b x scan; psi from north (-e_theta) to east.
    const double scan_dir[3] = {-ss * u[0] + cs * v[0], -ss * u[1] + cs * v[1],
                                -ss * u[2] + cs * v[2]};
    const double cross[3] = {b[1] * scan_dir[2] - b[2] * scan_dir[1],
                             b[2] * scan_dir[0] - b[0] * scan_dir[2],
                             b[0] * scan_dir[1] - b[1] * scan_dir[0]};
    double pol[3];
    for (int c = 0; c < 3; ++c) pol[c] = cg * scan_dir[c] + sg * cross[c];
    const double rxy = std::sqrt(b[0] * b[0] + b[1] * b[1]);
    const double cphi = b[0] / rxy, sphi = b[1] / rxy;
    const double north = -(pol[0] * b[2] * cphi + pol[1] * b[2] * sphi - pol[2] * rxy);
    const double east = -pol[0] * sphi + pol[1] * cphi;
    psi[i - start] = std::atan2(east, north);
  }
}

}  // namespace petacomm::apps::mapmaker
