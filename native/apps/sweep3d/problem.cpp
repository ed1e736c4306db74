#include "problem.hpp"

#include <cmath>

#include "error.hpp"

namespace petacomm::apps::sweep3d {

std::vector<Direction> quadrature(int angles) {
  const double half_pi = 2.0 * std::atan(1.0);
  std::vector<Direction> directions;
  directions.reserve(static_cast<std::size_t>(angles));
  for (int m = 0; m < angles; ++m) {
    const double xi = (m + 0.5) / angles;
    const double azimuth = half_pi * (m + 0.5) / angles;
    const double s = std::sqrt(1.0 - xi * xi);
    directions.push_back(
        Direction{s * std::cos(azimuth), s * std::sin(azimuth), xi, 1.0 / (8.0 * angles)});
  }
  return directions;
}

double total_cross_section(const Physics &physics, std::int64_t i, std::int64_t j, std::int64_t k) {
  return physics.sigma_t * (1.0 + 0.5 * static_cast<double>((i + j + k) % 2));
}

double external_source(std::int64_t i, std::int64_t j, std::int64_t k) {
  return 1.0 + 0.25 * static_cast<double>((i + 2 * j + 3 * k) % 5);
}

void check(const ProblemSize &size, const Physics &physics, const Iteration &iteration) {
  PETACOMM_CHECK_ARG(size.I >= 1 && size.J >= 1 && size.K >= 1,
                     "--grid: every dimension must be >= 1, got ", size.I, "x", size.J, "x",
                     size.K);
  PETACOMM_CHECK_ARG(size.mk >= 1 && size.K % size.mk == 0, "--mk: ", size.mk,
                     " does not divide K = ", size.K, " (the K planes are swept in blocks of mk)");
  PETACOMM_CHECK_ARG(size.angles >= 1, "--angles: must be >= 1, got ", size.angles);
  PETACOMM_CHECK_ARG(size.mmi >= 1 && size.angles % size.mmi == 0, "--mmi: ", size.mmi,
                     " does not divide --angles ", size.angles,
                     " (the directions are swept in blocks of mmi)");
  PETACOMM_CHECK_ARG(physics.sigma_t > 0 && std::isfinite(physics.sigma_t),
                     "--sigma-t: must be a positive number, got ", physics.sigma_t);
  PETACOMM_CHECK_ARG(physics.scattering_ratio >= 0 && physics.scattering_ratio < 1,
                     "--scattering-ratio: must be in [0, 1) (source iteration converges only "
                     "then), got ",
                     physics.scattering_ratio);
  PETACOMM_CHECK_ARG(physics.cell_size > 0 && std::isfinite(physics.cell_size),
                     "--cell-size: must be a positive number, got ", physics.cell_size);
  PETACOMM_CHECK_ARG(iteration.iterations >= 1, "--iterations: must be >= 1, got ",
                     iteration.iterations);
  PETACOMM_CHECK_ARG(iteration.tolerance >= 0, "--tolerance: must be >= 0, got ",
                     iteration.tolerance);
  PETACOMM_CHECK_ARG(iteration.max_iterations >= 1, "--max-iterations: must be >= 1, got ",
                     iteration.max_iterations);
}

}  // namespace petacomm::apps::sweep3d
