// What MADbench computes (the MADCAP power-spectrum estimator, one Newton-Raphson step):
//
//   pixels     the first NPIX pixel centres r_i of a HEALPix RING map, nside the smallest
//              power of two with 12 nside^2 >= NPIX (a cap around the north pole)
//   multipoles l = 2 .. lmax, lmax = 3 nside - 1, split into NBIN contiguous bins:
//              bin b = [2 + floor(b L / NBIN), 2 + floor((b + 1) L / NBIN)), L = lmax - 1
//   dS/dC_b    (dS/dC_b)_ij = sum over l in b of (2l + 1) / (4 pi) P_l(r_i . r_j), P_l by the
//              Legendre recursion l P_l = (2l - 1) x P_{l-1} - (l - 1) P_{l-2}
//   fiducial   C_b = 2 pi / (lc (lc + 1)), lc = the mean multipole of bin b (flat band power)
//   D          sum_b C_b dS/dC_b + sigma^2 I        (signal + white noise of variance sigma^2)
//   data       d_i = normal(seed, stream 5, i)      (counter-based, counter_rng.hpp)
//   W_b        D^-1 dS/dC_b
//   dL/dC_b    (d^T W_b D^-1 d - tr W_b) / 2
//   F_bb'      tr(W_b W_b') / 2                      (the Fisher matrix)
//   new C      C + F^-1 dL/dC
#pragma once

#include <cstdint>
#include <vector>

namespace petacomm::apps::madbench {

struct Spectrum {
  std::int64_t nside = 0;
  int lmax = 0;
  std::vector<int> first, last;  // bin b holds multipoles [first[b], last[b])
  std::vector<double> fiducial;  // C_b
};

std::int64_t nside_for_pixels(std::int64_t npix);
// Throws (naming --nbin) when a bin would hold no multipole.
Spectrum make_spectrum(std::int64_t npix, int nbin);
// Unit vectors of the first npix pixel centres, 3 per pixel.
std::vector<double> pixel_positions(std::int64_t npix, std::int64_t nside);

}  // namespace petacomm::apps::madbench
