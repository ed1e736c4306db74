// Source iteration around the KBA sweep: q = q_ext + sigma_s phi, sweep all 8 octants
// through a transport, repeat a fixed number of times or until the relative change of the
// scalar flux, max|phi_new - phi_old| / max|phi_new| over all cells, is below a tolerance.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "decomposition.hpp"
#include "kernel.hpp"
#include "transport.hpp"

namespace petacomm::apps::sweep3d {

struct SolveSetup {
  ProblemSize size;
  Physics physics;
  Iteration iteration;
  ProcessGrid grid;
  std::string transport;  // a name in transports()
  TransportOptions transport_options;
  // Under SimGrid SMPI (PETACOMM_SMPI), > 0: every block's compute is charged as these
  // simulated seconds (the calibrated block) with smpi_execute, and the simulation times
  // no host computation, so that simulated times do not move with the host's load and
  // caches (host-timed, one 1024-rank iteration simulated in 5.0 to 11.1 ms over 5 runs).
  double simulated_block_seconds = 0;
};

struct SolveResult {
  Subdomain sub;
  LocalCells cells;  // phi: the scalar flux of the last sweep
  int iterations = 0;
  bool converged = false;        // only meaningful with a tolerance
  double flux_change = 0;        // relative change in the last iteration
  std::int64_t fixups = 0;       // cell-directions fixed in the last iteration, all ranks
  double total_seconds = 0;      // this rank: all iterations, wall
  double compute_seconds = 0;    // this rank: in the kernel
  double transport_seconds = 0;  // this rank: in transport calls (waiting for and sending faces)
  double reduce_seconds = 0;     // this rank: the convergence allreduce
  TransportCounters counters;    // this rank, per sweep
  FaceShape shape;
};

// ERR_ARG naming --mk when a face would not fit in one MPI message (int count).
void check_message_sizes(const ProblemSize &size, const ProcessGrid &grid);

// The cells of this rank with the external source and cross-sections filled in.
LocalCells local_cells(const Subdomain &sub, const Physics &physics);

// Collective over comm (size Px * Py).
SolveResult solve(const SolveSetup &setup, MPI_Comm comm);

// Collective: the compute time of one block of the largest subdomain (max_nx x max_ny x mk
// planes x mmi directions): rank 0 sweeps its whole subdomain without messages (all blocks
// of all octants, best of repeated sweeps) while the other ranks wait without spinning;
// the same value is returned on every rank.
double calibrate_block_seconds(const SolveSetup &setup, MPI_Comm comm);

}  // namespace petacomm::apps::sweep3d
