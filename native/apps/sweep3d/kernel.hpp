// The diamond-difference kernel: sweeps one block (mk planes x mmi directions) of a rank's
// cells in one octant. For a cell with incoming face fluxes in_x, in_y, in_z, direction
// cosines (mu, eta, xi) and c_d = 2 |cosine_d| / cell size:
//   psi = (q + c_x in_x + c_y in_y + c_z in_z) / (sigma_t + c_x + c_y + c_z)
//   out_d = 2 psi - in_d
// With the fixup, an outgoing flux below zero is set to zero and psi re-solved from the
// cell balance with that face fixed (repeated until no free face is negative):
//   psi = (q + sum_free c_d in_d + sum_fixed (c_d / 2) in_d) / (sigma_t + sum_free c_d)
// The scalar flux accumulates weight * psi.
#pragma once

#include <cstdint>
#include <vector>

#include "problem.hpp"
#include "schedule.hpp"

namespace petacomm::apps::sweep3d {

// A rank's cells; arrays are indexed (k * ny + j) * nx + i with local i, j and global k.
struct LocalCells {
  int nx = 0, ny = 0, nz = 0;
  std::vector<double> sigma_t;  // total cross-section
  std::vector<double> q;        // this iteration's source: external + sigma_s * phi
  std::vector<double> phi;      // scalar flux accumulated by the sweeps
  std::size_t index(int i, int j, int k) const {
    return (static_cast<std::size_t>(k) * static_cast<std::size_t>(ny) +
            static_cast<std::size_t>(j)) *
               static_cast<std::size_t>(nx) +
           static_cast<std::size_t>(i);
  }
};

// Face layouts (doubles): x face [kk][j][m] (mk * ny * mmi), y face [kk][i][m]
// (mk * nx * mmi), z carry [j][i][m] (ny * nx * mmi), kk = k - k0.
struct BlockFaces {
  const double *x_in, *y_in;
  double *x_out, *y_out;
  double *z;  // in: the face entering plane k0 (or k0+mk-1); out: the one leaving the block
};

// Sweeps planes [k0, k0 + mk) with directions `directions` (mmi of them, first octant
// magnitudes) in octant `oct`; returns how many cell-directions needed the fixup.
std::int64_t sweep_block(LocalCells &cells, const Octant &oct, int k0, int mk,
                         const Direction *directions, int mmi, double cell_size, bool fixup,
                         const BlockFaces &faces);

}  // namespace petacomm::apps::sweep3d
