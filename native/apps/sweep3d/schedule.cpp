#include "schedule.hpp"

namespace petacomm::apps::sweep3d {

const std::array<Octant, 8> &octant_order() {
  static const std::array<Octant, 8> order{{{+1, +1, +1},
                                            {+1, +1, -1},
                                            {+1, -1, +1},
                                            {+1, -1, -1},
                                            {-1, +1, +1},
                                            {-1, +1, -1},
                                            {-1, -1, +1},
                                            {-1, -1, -1}}};
  return order;
}

std::vector<SweepStep> sweep_schedule(const ProcessGrid &grid, const Subdomain &sub,
                                      const ProblemSize &size) {
  std::vector<SweepStep> steps;
  const int k_blocks = size.K / size.mk, angle_blocks = size.angles / size.mmi;
  const auto &order = octant_order();
  for (int o = 0; o < 8; ++o) {
    const Octant &oct = order[static_cast<std::size_t>(o)];
    for (int a = 0; a < angle_blocks; ++a)
      for (int b = 0; b < k_blocks; ++b) {
        const int block = oct.dk > 0 ? b : k_blocks - 1 - b;
        steps.push_back(SweepStep{o, a, block * size.mk, sub.neighbour(grid, -oct.di, 0),
                                  sub.neighbour(grid, 0, -oct.dj), sub.neighbour(grid, oct.di, 0),
                                  sub.neighbour(grid, 0, oct.dj)});
      }
  }
  return steps;
}

}  // namespace petacomm::apps::sweep3d
