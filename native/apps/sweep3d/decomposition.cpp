#include "decomposition.hpp"

#include <mpi.h>

#include <cstdlib>

#include "error.hpp"

namespace petacomm::apps::sweep3d {

int Subdomain::neighbour(const ProcessGrid &grid, int dx, int dy) const {
  const int x = px + dx, y = py + dy;
  if (x < 0 || x >= grid.Px || y < 0 || y >= grid.Py) return MPI_PROC_NULL;
  return x + grid.Px * y;
}

void block_range(int n, int parts, int index, int *start, int *count) {
  const int base = n / parts, extra = n % parts;
  *count = base + (index < extra ? 1 : 0);
  *start = index * base + (index < extra ? index : extra);
}

Subdomain subdomain(const ProcessGrid &grid, const ProblemSize &size, int rank) {
  Subdomain s;
  s.px = rank % grid.Px;
  s.py = rank / grid.Px;
  block_range(size.I, grid.Px, s.px, &s.i0, &s.nx);
  block_range(size.J, grid.Py, s.py, &s.j0, &s.ny);
  s.K = size.K;
  s.max_nx = (size.I + grid.Px - 1) / grid.Px;
  s.max_ny = (size.J + grid.Py - 1) / grid.Py;
  return s;
}

std::vector<ProcessGrid> factorisations(int ranks, const ProblemSize &size) {
  std::vector<ProcessGrid> grids;
  for (int px = 1; px <= ranks; ++px)
    if (ranks % px == 0 && px <= size.I && ranks / px <= size.J)
      grids.push_back(ProcessGrid{px, ranks / px});
  return grids;
}

ProcessGrid choose_grid(int ranks, const ProblemSize &size) {
  const auto grids = factorisations(ranks, size);
  PETACOMM_CHECK_ARG(!grids.empty(), "--grid: ", size.I, "x", size.J, "x", size.K,
                     " has no Px x Py = ", ranks, " ranks with Px <= I and Py <= J");
  ProcessGrid best = grids.front();
  auto fill = [](const ProcessGrid &g) { return 2 * (g.Px - 1) + 4 * (g.Py - 1); };
  for (const auto &g : grids)
    if (fill(g) < fill(best) || (fill(g) == fill(best) && g.Px > best.Px)) best = g;
  return best;
}

ProcessGrid parse_grid(const std::string &text, int ranks, const ProblemSize &size) {
  const auto x = text.find('x');
  char *end1 = nullptr, *end2 = nullptr;
  const long px = x == std::string::npos ? 0 : std::strtol(text.c_str(), &end1, 10);
  const long py = x == std::string::npos ? 0 : std::strtol(text.c_str() + x + 1, &end2, 10);
  PETACOMM_CHECK_ARG(x != std::string::npos && end1 == text.c_str() + x && *end2 == '\0' &&
                         px >= 1 && py >= 1 && px <= (1 << 24) && py <= (1 << 24),
                     "--procs: expected PxxPy such as 4x2, got '", text, "'");
  PETACOMM_CHECK_ARG(px * py == ranks, "--procs: ", px, "x", py, " = ", px * py,
                     " ranks, but the job has ", ranks);
  PETACOMM_CHECK_ARG(px <= size.I && py <= size.J, "--procs: ", px, "x", py,
                     " leaves ranks without cells (I = ", size.I, ", J = ", size.J, ")");
  return ProcessGrid{static_cast<int>(px), static_cast<int>(py)};
}

std::string to_string(const ProcessGrid &grid) {
  return std::to_string(grid.Px) + "x" + std::to_string(grid.Py);
}

}  // namespace petacomm::apps::sweep3d
