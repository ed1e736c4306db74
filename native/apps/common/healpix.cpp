#include "healpix.hpp"

#include <cmath>

namespace petacomm::apps::healpix {
namespace {

constexpr double kHalfPi = 1.57079632679489661923;
constexpr double kPi = 3.14159265358979323846;
constexpr double kTwoThirds = 2.0 / 3.0;

// v1 mod v2 in [0, v2) for v2 > 0.
double positive_modulo(double v1, double v2) {
  if (v1 >= 0) return v1 < v2 ? v1 : std::fmod(v1, v2);
  const double r = std::fmod(v1, v2) + v2;
  return r == v2 ? 0.0 : r;
}

std::int64_t isqrt(std::int64_t v) {
  auto r = static_cast<std::int64_t>(std::sqrt(static_cast<double>(v) + 0.5));
  while (r * r > v) --r;
  while ((r + 1) * (r + 1) <= v) ++r;
  return r;
}

// z = cos(theta), phi; sth = sin(theta), used near the poles (|z| > 0.99) for precision.
std::int64_t loc2pix(std::int64_t nside, double z, double phi, double sth, bool have_sth) {
  const double za = std::fabs(z);
  const double tt = positive_modulo(phi / kHalfPi, 4.0);  // in [0, 4)
  if (za <= kTwoThirds) {                                 // equatorial belt
    const std::int64_t nl4 = 4 * nside;
    const double t1 = nside * (0.5 + tt);
    const double t2 = nside * z * 0.75;
    const auto jp = static_cast<std::int64_t>(t1 - t2);  // ascending edge line
    const auto jm = static_cast<std::int64_t>(t1 + t2);  // descending edge line
    const std::int64_t ir = nside + 1 + jp - jm;         // ring from z = 2/3, in [1, 2 nside + 1]
    const std::int64_t kshift = 1 - (ir & 1);
    const std::int64_t t = jp + jm - nside + kshift + 1 + 2 * nl4;
    const std::int64_t ip = (t >> 1) % nl4;
    return 2 * nside * (nside - 1) + (ir - 1) * nl4 + ip;
  }
  // Polar caps.
  const double tp = tt - static_cast<double>(static_cast<std::int64_t>(tt));
  const double tmp =
      have_sth ? nside * sth / std::sqrt((1.0 + za) / 3.0) : nside * std::sqrt(3.0 * (1.0 - za));
  const auto jp = static_cast<std::int64_t>(tp * tmp);
  const auto jm = static_cast<std::int64_t>((1.0 - tp) * tmp);
  const std::int64_t ir = jp + jm + 1;  // ring counted from the nearest pole
  std::int64_t ip = static_cast<std::int64_t>(tt * ir);
  if (ip >= 4 * ir) ip = 4 * ir - 1;  // tt just below 4 rounding up
  return z > 0 ? 2 * ir * (ir - 1) + ip : npix(nside) - 2 * ir * (ir + 1) + ip;
}

}  // namespace

bool valid_nside(std::int64_t nside) {
  return nside >= 1 && nside <= kMaxNside && (nside & (nside - 1)) == 0;
}

double resolution(std::int64_t nside) {
  return std::sqrt(4.0 * kPi / static_cast<double>(npix(nside)));
}

std::int64_t vec2pix_ring(std::int64_t nside, double x, double y, double z) {
  const double inv_length = 1.0 / std::sqrt(x * x + y * y + z * z);
  const double phi = (x == 0.0 && y == 0.0) ? 0.0 : std::atan2(y, x);
  const double nz = z * inv_length;
  if (std::fabs(nz) > 0.99)
    return loc2pix(nside, nz, phi, std::sqrt(x * x + y * y) * inv_length, true);
  return loc2pix(nside, nz, phi, 0.0, false);
}

void pix2vec_ring(std::int64_t nside, std::int64_t pix, double vec[3]) {
  const std::int64_t total = npix(nside);
  const std::int64_t ncap = 2 * nside * (nside - 1);
  const double fact2 = 4.0 / static_cast<double>(total);
  double z = 0, phi = 0, sth = 0;
  bool have_sth = false;
  if (pix < ncap) {  // north polar cap
    const std::int64_t iring = (1 + isqrt(1 + 2 * pix)) >> 1;
    const std::int64_t iphi = (pix + 1) - 2 * iring * (iring - 1);
    const double tmp = static_cast<double>(iring * iring) * fact2;
    z = 1.0 - tmp;
    if (z > 0.99) {
      sth = std::sqrt(tmp * (2.0 - tmp));
      have_sth = true;
    }
    phi = (static_cast<double>(iphi) - 0.5) * kHalfPi / static_cast<double>(iring);
  } else if (pix < total - ncap) {  // equatorial belt
    const std::int64_t nl4 = 4 * nside;
    const std::int64_t ip = pix - ncap;
    const std::int64_t tmp = ip / nl4;
    const std::int64_t iring = tmp + nside;
    const std::int64_t iphi = ip - nl4 * tmp + 1;
    const double fodd = ((iring + nside) & 1) ? 1.0 : 0.5;
    const double fact1 = static_cast<double>(2 * nside) * fact2;
    z = static_cast<double>(2 * nside - iring) * fact1;
    phi = (static_cast<double>(iphi) - fodd) * kPi * 0.75 * fact1;
  } else {  // south polar cap
    const std::int64_t ip = total - pix;
    const std::int64_t iring = (1 + isqrt(2 * ip - 1)) >> 1;
    const std::int64_t iphi = 4 * iring + 1 - (ip - 2 * iring * (iring - 1));
    const double tmp = static_cast<double>(iring * iring) * fact2;
    z = tmp - 1.0;
    if (z < -0.99) {
      sth = std::sqrt(tmp * (2.0 - tmp));
      have_sth = true;
    }
    phi = (static_cast<double>(iphi) - 0.5) * kHalfPi / static_cast<double>(iring);
  }
  if (!have_sth) sth = std::sqrt((1.0 - z) * (1.0 + z));
  vec[0] = sth * std::cos(phi);
  vec[1] = sth * std::sin(phi);
  vec[2] = z;
}

}  // namespace petacomm::apps::healpix
