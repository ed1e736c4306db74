#include "kernel.hpp"

#include <cmath>

namespace petacomm::apps::sweep3d {
namespace {

// Re-solves a cell whose outgoing fluxes went negative (see kernel.hpp); returns psi and
// leaves the outgoing fluxes in out[3].
double fix_negative(double q, double sigma_t, const double c[3], const double in[3],
                    double out[3]) {
  bool fixed[3] = {false, false, false};
  double psi = 0;
  for (;;) {
    double numerator = q, denominator = sigma_t;
    for (int d = 0; d < 3; ++d) {
      if (fixed[d]) {
        numerator += 0.5 * c[d] * in[d];
      } else {
        numerator += c[d] * in[d];
        denominator += c[d];
      }
    }
    psi = numerator / denominator;
    bool changed = false;
    for (int d = 0; d < 3; ++d) {
      if (fixed[d]) continue;
      out[d] = 2.0 * psi - in[d];
      if (out[d] < 0) {
        out[d] = 0;
        fixed[d] = true;
        changed = true;
      }
    }
    if (!changed) return psi;
  }
}

}  // namespace

std::int64_t sweep_block(LocalCells &cells, const Octant &oct, int k0, int mk,
                         const Direction *directions, int mmi, double cell_size, bool fixup,
                         const BlockFaces &faces) {
  const int nx = cells.nx, ny = cells.ny;
  const std::size_t m_count = static_cast<std::size_t>(mmi);
  std::vector<double> cx(m_count), cy(m_count), cz(m_count), weight(m_count);
  for (std::size_t m = 0; m < m_count; ++m) {
    cx[m] = 2.0 * directions[m].mu / cell_size;
    cy[m] = 2.0 * directions[m].eta / cell_size;
    cz[m] = 2.0 * directions[m].xi / cell_size;
    weight[m] = directions[m].weight;
  }
  std::vector<double> x_line(m_count);
  std::int64_t fixups = 0;
  const std::size_t x_plane = static_cast<std::size_t>(ny) * m_count;
  const std::size_t y_plane = static_cast<std::size_t>(nx) * m_count;
  for (int ks = 0; ks < mk; ++ks) {
    const int kk = oct.dk > 0 ? ks : mk - 1 - ks;
    const int k = k0 + kk;
    // The y carry of this plane lives in the outgoing y face: it enters as y_in.
    double *y_carry = faces.y_out + static_cast<std::size_t>(kk) * y_plane;
    const double *y_in = faces.y_in + static_cast<std::size_t>(kk) * y_plane;
    for (std::size_t v = 0; v < y_plane; ++v) y_carry[v] = y_in[v];
    for (int js = 0; js < ny; ++js) {
      const int j = oct.dj > 0 ? js : ny - 1 - js;
      const std::size_t x_at =
          static_cast<std::size_t>(kk) * x_plane + static_cast<std::size_t>(j) * m_count;
      for (std::size_t m = 0; m < m_count; ++m) x_line[m] = faces.x_in[x_at + m];
      for (int is = 0; is < nx; ++is) {
        const int i = oct.di > 0 ? is : nx - 1 - is;
        const std::size_t cell = cells.index(i, j, k);
        const double q = cells.q[cell], sigma_t = cells.sigma_t[cell];
        double *y_face = y_carry + static_cast<std::size_t>(i) * m_count;
        double *z_face = faces.z + (static_cast<std::size_t>(j) * static_cast<std::size_t>(nx) +
                                    static_cast<std::size_t>(i)) *
                                       m_count;
        double flux = cells.phi[cell];  // added to angle by angle: the same order always
        for (std::size_t m = 0; m < m_count; ++m) {
          const double in_x = x_line[m], in_y = y_face[m], in_z = z_face[m];
          double psi =
              (q + cx[m] * in_x + cy[m] * in_y + cz[m] * in_z) / (sigma_t + cx[m] + cy[m] + cz[m]);
          double out_x = 2.0 * psi - in_x, out_y = 2.0 * psi - in_y, out_z = 2.0 * psi - in_z;
          if (fixup && (out_x < 0 || out_y < 0 || out_z < 0)) {
            const double c[3] = {cx[m], cy[m], cz[m]}, in[3] = {in_x, in_y, in_z};
            double out[3] = {0, 0, 0};
            psi = fix_negative(q, sigma_t, c, in, out);
            out_x = out[0];
            out_y = out[1];
            out_z = out[2];
            ++fixups;
          }
          x_line[m] = out_x;
          y_face[m] = out_y;
          z_face[m] = out_z;
          flux += weight[m] * psi;
        }
        cells.phi[cell] = flux;
      }
      for (std::size_t m = 0; m < m_count; ++m) faces.x_out[x_at + m] = x_line[m];
    }
  }
  return fixups;
}

}  // namespace petacomm::apps::sweep3d
