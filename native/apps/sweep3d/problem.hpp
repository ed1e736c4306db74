// The transport problem Sweep3D solves: an I x J x K box of cells, one energy group,
// isotropic scattering, vacuum boundaries, a discrete-ordinates quadrature with the same
// `angles` directions in each of the 8 octants. Every input is a plain function of the
// global cell index, so any decomposition sees the same problem (docs/sweep3d.md gives the
// formulas; the tests re-implement them independently).
#pragma once

#include <cstdint>
#include <vector>

namespace petacomm::apps::sweep3d {

struct ProblemSize {
  int I = 32, J = 32, K = 32;  // global cells
  int mk = 4;                  // K planes per block (must divide K)
  int angles = 6;              // directions per octant
  int mmi = 3;                 // directions per block (must divide angles)
};

struct Physics {
  double sigma_t = 1.0;           // base total cross-section (1/cm)
  double scattering_ratio = 0.5;  // sigma_s / sigma_t
  double cell_size = 1.0;         // dx = dy = dz (cm)
  bool fixup = false;             // negative-flux fixup of the diamond difference
};

struct Iteration {
  int iterations = 10;       // fixed count when tolerance == 0
  double tolerance = 0;      // > 0: iterate until the relative flux change is below it
  int max_iterations = 100;  // cap when iterating to a tolerance
};

// One direction of the first octant (all cosines positive) and its weight; the other
// octants use the same magnitudes with signs. Weights of all 8 * angles directions sum to 1.
struct Direction {
  double mu, eta, xi, weight;
};

// Direction m of n: xi = (m + 1/2) / n, azimuth (pi/2)(m + 1/2)/n, weight 1 / (8 n).
std::vector<Direction> quadrature(int angles);

// Material and external source of global cell (i, j, k):
//   sigma_t(i,j,k) = sigma_t * (1 + 0.5 * ((i + j + k) mod 2))       (a checkerboard)
//   sigma_s = scattering_ratio * sigma_t(i,j,k)
//   q(i,j,k)  = 1 + 0.25 * ((i + 2j + 3k) mod 5)                        (per steradian-unit)
double total_cross_section(const Physics &physics, std::int64_t i, std::int64_t j, std::int64_t k);
double external_source(std::int64_t i, std::int64_t j, std::int64_t k);

// Throws ERR_ARG naming the option (--grid, --mk, --angles, --mmi, ...) when inconsistent.
void check(const ProblemSize &size, const Physics &physics, const Iteration &iteration);

}  // namespace petacomm::apps::sweep3d
