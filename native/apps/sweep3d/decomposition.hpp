// The KBA decomposition: the I x J plane is cut over a Px x Py process grid (rank = px +
// Px * py), K stays whole on every rank. Uneven sizes are allowed: the first I mod Px
// columns of ranks get one more cell.
#pragma once

#include <string>
#include <vector>

#include "problem.hpp"

namespace petacomm::apps::sweep3d {

struct ProcessGrid {
  int Px = 1, Py = 1;
};

// Where one rank sits and which cells it owns.
struct Subdomain {
  int px = 0, py = 0;
  int i0 = 0, nx = 0;  // global first i and count
  int j0 = 0, ny = 0;
  int K = 0;
  int max_nx = 0, max_ny = 0;  // largest subdomain (the pipeline's slowest stage)
  // Rank of the neighbour at (px + dx, py + dy), MPI_PROC_NULL outside the grid.
  int neighbour(const ProcessGrid &grid, int dx, int dy) const;
};

// Start and count of block `index` of `n` cells cut into `parts`.
void block_range(int n, int parts, int index, int *start, int *count);

Subdomain subdomain(const ProcessGrid &grid, const ProblemSize &size, int rank);

// Every Px x Py with Px * Py = ranks, Px <= I and Py <= J, Px increasing.
std::vector<ProcessGrid> factorisations(int ranks, const ProblemSize &size);

// The factorisation with the fewest pipeline fill stages 2(Px-1) + 4(Py-1) (Sweep3D's
// octant order drains the j pipeline twice as often as the i one); ties: larger Px.
ProcessGrid choose_grid(int ranks, const ProblemSize &size);

// "PxxPy" parsed and checked against the rank count and the grid; ERR_ARG naming --procs.
ProcessGrid parse_grid(const std::string &text, int ranks, const ProblemSize &size);

std::string to_string(const ProcessGrid &grid);

}  // namespace petacomm::apps::sweep3d
