// A rank's sweep schedule: the ordered list of blocks it computes in one source iteration
// and, for each, where the upstream faces come from and where the downstream faces go. The
// schedule is the same in every iteration, so transports plan for it once.
//
// Octant order (as Sweep3D): the four (i, j) quadrants (+,+), (+,-), (-,+), (-,-), each
// with k ascending then k descending, so the second octant of a pair starts where the first
// ended; per iteration the pipeline then fills 2(Px-1) + 4(Py-1) stages in total.
// Within an octant: angle blocks in order, and for each the K blocks in sweep direction.
#pragma once

#include <array>
#include <vector>

#include "decomposition.hpp"

namespace petacomm::apps::sweep3d {

struct Octant {
  int di, dj, dk;  // +1 or -1: the sweep direction along i, j, k
};

const std::array<Octant, 8> &octant_order();

struct SweepStep {
  int octant;       // index into octant_order()
  int angle_block;  // directions [angle_block * mmi, +mmi)
  int k0;           // planes [k0, k0 + mk)
  int up_x, up_y;   // ranks sending this block's incoming faces (MPI_PROC_NULL: boundary)
  int down_x, down_y;
};

std::vector<SweepStep> sweep_schedule(const ProcessGrid &grid, const Subdomain &sub,
                                      const ProblemSize &size);

}  // namespace petacomm::apps::sweep3d
