#include "neighbourhood.hpp"

namespace petacomm::apps::halo {

int LogicalGrid::ranks() const {
  int n = 1;
  for (int d : dims) n *= d;
  return n;
}

std::vector<int> LogicalGrid::coordinates(int rank) const {
  std::vector<int> coords(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    coords[d] = rank % dims[d];
    rank /= dims[d];
  }
  return coords;
}

int LogicalGrid::rank_of(const std::vector<int> &coords) const {
  int rank = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) rank = rank * dims[d] + coords[d];
  return rank;
}

int LogicalGrid::shifted(int rank, const Offset &offset) const {
  std::vector<int> coords = coordinates(rank);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    int c = coords[d] + offset[d];
    if (c < 0 || c >= dims[d]) {
      if (!periodic[d]) return -1;
      c = ((c % dims[d]) + dims[d]) % dims[d];
    }
    coords[d] = c;
  }
  return rank_of(coords);
}

std::string LogicalGrid::dims_text() const {
  std::string text;
  for (std::size_t d = 0; d < dims.size(); ++d) text += (d ? "x" : "") + std::to_string(dims[d]);
  return text;
}

std::string LogicalGrid::periodic_text() const {
  bool all = true, none = true;
  for (bool p : periodic) {
    all = all && p;
    none = none && !p;
  }
  if (all) return "periodic";
  if (none) return "open";
  std::string flags = "periodic=";
  for (std::size_t d = 0; d < periodic.size(); ++d)
    flags += std::string(d ? "," : "") + (periodic[d] ? "1" : "0");
  return flags;
}

std::vector<Offset> stencil_offsets(int ndim, const std::string &stencil) {
  std::vector<Offset> offsets;
  if (stencil == "star") {
    for (int sign : {+1, -1})
      for (int d = 0; d < ndim; ++d) {
        Offset o(static_cast<std::size_t>(ndim), 0);
        o[static_cast<std::size_t>(d)] = sign;
        offsets.push_back(o);
      }
    return offsets;
  }
  // box: every vector of (-1, 0, 1)^ndim but zero, first coordinate slowest.
  int total = 1;
  for (int d = 0; d < ndim; ++d) total *= 3;
  for (int code = 0; code < total; ++code) {
    Offset o(static_cast<std::size_t>(ndim));
    bool zero = true;
    for (int d = ndim - 1, rest = code; d >= 0; --d, rest /= 3) {
      o[static_cast<std::size_t>(d)] = rest % 3 - 1;
      zero = zero && o[static_cast<std::size_t>(d)] == 0;
    }
    if (!zero) offsets.push_back(o);
  }
  return offsets;
}

Neighbours neighbours(const LogicalGrid &grid, const std::string &stencil, int rank) {
  Neighbours n;
  n.offsets = stencil_offsets(static_cast<int>(grid.dims.size()), stencil);
  for (const Offset &o : n.offsets) {
    Offset back(o.size());
    for (std::size_t d = 0; d < o.size(); ++d) back[d] = -o[d];
    n.send_to.push_back(grid.shifted(rank, o));
    n.recv_from.push_back(grid.shifted(rank, back));
  }
  return n;
}

std::string pattern_text(const LogicalGrid &grid, const std::string &stencil, long long bytes) {
  return "grid" + std::to_string(grid.dims.size()) + "d " + grid.dims_text() + " " +
         grid.periodic_text() + " " + stencil + " " + std::to_string(bytes);
}

}  // namespace petacomm::apps::halo
