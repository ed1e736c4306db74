// HEALPix pixelisation, RING ordering (Gorski et al. 2005): pixel <-> direction.
// The formulas follow the HEALPix definition; tests/apps compare them with healpy.
#pragma once

#include <cstdint>

namespace petacomm::apps::healpix {

constexpr std::int64_t kMaxNside = std::int64_t{1} << 20;

// True when nside is a power of two in [1, 2^20].
bool valid_nside(std::int64_t nside);
inline std::int64_t npix(std::int64_t nside) { return 12 * nside * nside; }
// Mean pixel spacing in radians: sqrt(4 pi / npix) (healpy.nside2resol).
double resolution(std::int64_t nside);

// The pixel containing direction (x, y, z) (need not be normalised; not all zero).
std::int64_t vec2pix_ring(std::int64_t nside, double x, double y, double z);
// The unit vector of pixel pix's centre.
void pix2vec_ring(std::int64_t nside, std::int64_t pix, double vec[3]);

}  // namespace petacomm::apps::healpix
