// The logical process grid of a halo exchange and each rank's neighbours, with the
// conventions of petacomm's pattern language (python/petacomm/topology/pattern.py): ranks
// in row-major order (last coordinate fastest), star offsets +e_0..+e_{d-1} then
// -e_0..-e_{d-1}, box offsets in lexicographic order of (-1, 0, 1)^d without 0; a
// neighbour off a non-periodic edge does not exist.
#pragma once

#include <string>
#include <vector>

namespace petacomm::apps::halo {

using Offset = std::vector<int>;

struct LogicalGrid {
  std::vector<int> dims;
  std::vector<bool> periodic;
  int ranks() const;
  std::vector<int> coordinates(int rank) const;
  int rank_of(const std::vector<int> &coords) const;
  // The rank at `coords + offset` (wrapped on periodic dimensions), -1 when off the grid.
  int shifted(int rank, const Offset &offset) const;
  std::string dims_text() const;      // "4x2"
  std::string periodic_text() const;  // "periodic", "open" or "periodic=1,0"
};

std::vector<Offset> stencil_offsets(int ndim, const std::string &stencil);

// What rank `rank` exchanges: face k goes to send_to[k] (the rank at +offset k) and face k
// arrives from recv_from[k] (the rank at -offset k, which sends its own face k); -1 where
// the neighbour does not exist.
struct Neighbours {
  std::vector<Offset> offsets;
  std::vector<int> send_to, recv_from;
};

Neighbours neighbours(const LogicalGrid &grid, const std::string &stencil, int rank);

// The description in petacomm's pattern language ("grid2d 4x2 periodic star 1024"), read
// back by `petacomm map --pattern-file`.
std::string pattern_text(const LogicalGrid &grid, const std::string &stencil, long long bytes);

}  // namespace petacomm::apps::halo
