#include "spectrum.hpp"

#include "error.hpp"
#include "healpix.hpp"

namespace petacomm::apps::madbench {

constexpr double kPi = 3.14159265358979323846;

std::int64_t nside_for_pixels(std::int64_t npix) {
  std::int64_t nside = 1;
  while (healpix::npix(nside) < npix) nside *= 2;
  return nside;
}

Spectrum make_spectrum(std::int64_t npix, int nbin) {
  Spectrum s;
  s.nside = nside_for_pixels(npix);
  s.lmax = static_cast<int>(3 * s.nside - 1);
  const int multipoles = s.lmax - 1;  // l = 2 .. lmax
  if (nbin > multipoles)
    fail_arg("--nbin: at most ", multipoles, " bins for NPIX ", npix, " (multipoles 2..", s.lmax,
             " at nside ", s.nside, "), got ", nbin);
  for (int b = 0; b < nbin; ++b) {
    s.first.push_back(2 + static_cast<int>(static_cast<std::int64_t>(b) * multipoles / nbin));
    s.last.push_back(2 + static_cast<int>(static_cast<std::int64_t>(b + 1) * multipoles / nbin));
    const double lc = 0.5 * (s.first.back() + s.last.back() - 1);
    s.fiducial.push_back(2 * kPi / (lc * (lc + 1)));
  }
  return s;
}

std::vector<double> pixel_positions(std::int64_t npix, std::int64_t nside) {
  std::vector<double> r(static_cast<std::size_t>(3 * npix));
  for (std::int64_t i = 0; i < npix; ++i) healpix::pix2vec_ring(nside, i, &r[3 * i]);
  return r;
}

}  // namespace petacomm::apps::madbench
