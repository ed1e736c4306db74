#include "solver.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <thread>

#include "app_support.hpp"
#include "error.hpp"

namespace petacomm::apps::sweep3d {

LocalCells local_cells(const Subdomain &sub, const Physics &physics) {
  LocalCells cells;
  cells.nx = sub.nx;
  cells.ny = sub.ny;
  cells.nz = sub.K;
  const std::size_t n = static_cast<std::size_t>(sub.nx) * static_cast<std::size_t>(sub.ny) *
                        static_cast<std::size_t>(sub.K);
  cells.sigma_t.resize(n);
  cells.q.resize(n);
  cells.phi.assign(n, 0.0);
  for (int k = 0; k < sub.K; ++k)
    for (int j = 0; j < sub.ny; ++j)
      for (int i = 0; i < sub.nx; ++i) {
        const std::size_t c = cells.index(i, j, k);
        cells.sigma_t[c] = total_cross_section(physics, sub.i0 + i, sub.j0 + j, k);
        cells.q[c] = external_source(sub.i0 + i, sub.j0 + j, k);
      }
  return cells;
}

namespace {

FaceShape face_shape(const Subdomain &sub, const ProblemSize &size) {
  return FaceShape{static_cast<std::size_t>(size.mk) * static_cast<std::size_t>(sub.ny) *
                       static_cast<std::size_t>(size.mmi),
                   static_cast<std::size_t>(size.mk) * static_cast<std::size_t>(sub.nx) *
                       static_cast<std::size_t>(size.mmi)};
}

// The z face entering a block is the boundary (zero) at the first block of each angle
// block's K sweep, else what the previous block left.
bool first_k_block(const SweepStep &step, const Octant &oct, const ProblemSize &size) {
  return oct.dk > 0 ? step.k0 == 0 : step.k0 == size.K - size.mk;
}

}  // namespace

void check_message_sizes(const ProblemSize &size, const ProcessGrid &grid) {
  const Subdomain largest = subdomain(grid, size, 0);
  const auto values = static_cast<std::int64_t>(size.mk) * std::max(largest.nx, largest.ny) *
                      static_cast<std::int64_t>(size.mmi);
  PETACOMM_CHECK_ARG(values <= INT_MAX, "--mk: a face of ", size.mk, " planes x ",
                     std::max(largest.nx, largest.ny), " cells x ", size.mmi, " directions holds ",
                     values, " values, more than one MPI message carries (", INT_MAX,
                     ") with --procs ", to_string(grid));
}

SolveResult solve(const SolveSetup &setup, MPI_Comm comm) {
  int rank = 0;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  SolveResult r;
  r.sub = subdomain(setup.grid, setup.size, rank);
  r.cells = local_cells(r.sub, setup.physics);
  r.shape = face_shape(r.sub, setup.size);
  const std::vector<double> q_external = r.cells.q;
  const std::vector<Direction> directions = quadrature(setup.size.angles);
  const std::vector<SweepStep> steps = sweep_schedule(setup.grid, r.sub, setup.size);
  std::unique_ptr<SweepTransport> transport =
      transports().require("--transport", setup.transport).make(comm, setup.transport_options);
  transport->plan(steps, r.shape);
  r.counters = transport->counters();

  const int mmi = setup.size.mmi;
  std::vector<double> z(static_cast<std::size_t>(r.sub.nx) * static_cast<std::size_t>(r.sub.ny) *
                        static_cast<std::size_t>(mmi));
  std::vector<double> phi_old(r.cells.phi.size(), 0.0);
  const double ratio = setup.physics.scattering_ratio;
  const bool to_tolerance = setup.iteration.tolerance > 0;
  const int limit = to_tolerance ? setup.iteration.max_iterations : setup.iteration.iterations;
  const auto &order = octant_order();
  for (int it = 1; it <= limit; ++it) {
    const double started = MPI_Wtime();
    for (std::size_t c = 0; c < r.cells.q.size(); ++c) {
      r.cells.q[c] = q_external[c] + ratio * r.cells.sigma_t[c] * phi_old[c];
      r.cells.phi[c] = 0.0;
    }
    std::int64_t fixups = 0;
    double t = MPI_Wtime();
    transport->begin_sweep();
    r.transport_seconds += MPI_Wtime() - t;
    for (std::size_t s = 0; s < steps.size(); ++s) {
      const SweepStep &step = steps[s];
      const Octant &oct = order[static_cast<std::size_t>(step.octant)];
      t = MPI_Wtime();
      const IncomingFaces in = transport->receive(s);
      const OutgoingFaces out = transport->outgoing(s);
      const double computing = MPI_Wtime();
      r.transport_seconds += computing - t;
      if (first_k_block(step, oct, setup.size)) std::fill(z.begin(), z.end(), 0.0);
      fixups += sweep_block(r.cells, oct, step.k0, setup.size.mk,
                            &directions[static_cast<std::size_t>(step.angle_block * mmi)], mmi,
                            setup.physics.cell_size, setup.physics.fixup,
                            BlockFaces{in.x, in.y, out.x, out.y, z.data()});
#ifdef PETACOMM_SMPI
      // The simulation does not time the host's computation: the block costs the
      // calibrated block's seconds, the same in every run.
      if (setup.simulated_block_seconds > 0) smpi_execute(setup.simulated_block_seconds);
#endif
      t = MPI_Wtime();
      r.compute_seconds += t - computing;
      transport->send(s);
      r.transport_seconds += MPI_Wtime() - t;
    }
    t = MPI_Wtime();
    transport->end_sweep();
    const double reducing = MPI_Wtime();
    r.transport_seconds += reducing - t;

    double local[3] = {0, 0, static_cast<double>(fixups)};  // max |change|, max |phi|, fixups
    for (std::size_t c = 0; c < r.cells.phi.size(); ++c) {
      local[0] = std::max(local[0], std::fabs(r.cells.phi[c] - phi_old[c]));
      local[1] = std::max(local[1], std::fabs(r.cells.phi[c]));
    }
    double global[2] = {0, 0}, fixup_total = 0;
    PETACOMM_APP_MPI(MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, comm));
    PETACOMM_APP_MPI(MPI_Allreduce(&local[2], &fixup_total, 1, MPI_DOUBLE, MPI_SUM, comm));
    const double finished = MPI_Wtime();
    r.reduce_seconds += finished - reducing;
    r.total_seconds += finished - started;
    r.iterations = it;
    r.flux_change = global[1] > 0 ? global[0] / global[1] : 0.0;
    r.fixups = static_cast<std::int64_t>(fixup_total);
    phi_old = r.cells.phi;
    if (to_tolerance && r.flux_change < setup.iteration.tolerance) {
      r.converged = true;
      break;
    }
  }
  return r;
}

namespace {
// The calibration's clock. Under SimGrid SMPI computation is not simulated (the blocks are
// charged as the calibrated block, see SolveSetup), so MPI_Wtime would stand still there:
// the host's clock times the block, as SMPI would have (host speed = simulated speed).
double calibration_clock() {
#ifdef PETACOMM_SMPI
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#else
  return MPI_Wtime();
#endif
}
}  // namespace

double calibrate_block_seconds(const SolveSetup &setup, MPI_Comm comm) {
  int rank = 0;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  double seconds = 0;
  if (rank == 0) {
    // Rank 0 owns a largest subdomain (remainder cells go to the first ranks): it sweeps
    // all of it as in one iteration, every block of every octant, with boundary (zero)
    // inflows and no messages, so the caches see what they see in a run.
    const Subdomain sub = subdomain(setup.grid, setup.size, 0);
    LocalCells cells = local_cells(sub, setup.physics);
    const FaceShape shape = face_shape(sub, setup.size);
    const std::vector<Direction> directions = quadrature(setup.size.angles);
    const std::vector<SweepStep> steps = sweep_schedule(setup.grid, sub, setup.size);
    std::vector<double> x_in(shape.x_doubles, 0.0), y_in(shape.y_doubles, 0.0);
    std::vector<double> x_out(shape.x_doubles), y_out(shape.y_doubles);
    std::vector<double> z(static_cast<std::size_t>(sub.nx) * static_cast<std::size_t>(sub.ny) *
                          static_cast<std::size_t>(setup.size.mmi));
    const int mmi = setup.size.mmi;
    // The best of repeated sweeps (at least 3, at least 50 ms): the time without noise.
    double best = 1e30, spent = 0;
    for (int rep = 0; rep < 3 || (spent > 0 && spent < 0.05 && rep < 10000); ++rep) {
      const double t = calibration_clock();
      for (const SweepStep &step : steps) {
        const Octant &oct = octant_order()[static_cast<std::size_t>(step.octant)];
        if (first_k_block(step, oct, setup.size)) std::fill(z.begin(), z.end(), 0.0);
        sweep_block(cells, oct, step.k0, setup.size.mk,
                    &directions[static_cast<std::size_t>(step.angle_block * mmi)], mmi,
                    setup.physics.cell_size, setup.physics.fixup,
                    BlockFaces{x_in.data(), y_in.data(), x_out.data(), y_out.data(), z.data()});
      }
      const double dt = calibration_clock() - t;
      best = std::min(best, dt / static_cast<double>(steps.size()));
      spent += dt;
    }
    seconds = best;
  }
#ifdef PETACOMM_SMPI
  // Simulated ranks take no core while they wait, and a sleep between tests would cost
  // host time for every simulated test call.
  PETACOMM_APP_MPI(MPI_Barrier(comm));
#else
  // The others wait in a non-blocking barrier and sleep between tests, leaving the cores
  // to rank 0 (a blocking barrier would spin on them).
  MPI_Request request = MPI_REQUEST_NULL;
  PETACOMM_APP_MPI(MPI_Ibarrier(comm, &request));
  for (int done = 0;;) {
    PETACOMM_APP_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
#endif
  PETACOMM_APP_MPI(MPI_Bcast(&seconds, 1, MPI_DOUBLE, 0, comm));
  return seconds;
}

}  // namespace petacomm::apps::sweep3d
