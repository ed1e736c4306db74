// The generalised least-squares map: (P^T N^-1 P) m = P^T N^-1 d, solved by preconditioned
// conjugate gradients with the 3x3 block-Jacobi preconditioner (one I, Q, U block per pixel,
// from the white-noise weights). Every P^T(.) ends with a sum over the ranks that observe
// each pixel: one SparseReducePlan (petacomm xchg) built once per solve, executed every
// iteration. Pixels seen fewer than min_hits times or whose block has a reciprocal
// condition number below rcond_min are flagged: their samples are left out of the solve.
#pragma once

#include <mpi.h>
#include <petacomm/xchg.h>

#include <cstdint>
#include <string>
#include <vector>

#include "noise.hpp"
#include "time_domain.hpp"

namespace petacomm::apps::mapmaker {

struct SolverOptions {
  std::string strategy = "auto";
  std::string transport = "p2p";
  bool deterministic = false;
  double tol = 1e-10;  // stop when ||r|| / ||b|| <= tol
  int max_iter = 200;
  double rcond_min = 1e-3;
  int min_hits = 3;
};

// Pixel counts over all ranks (each pixel counted once).
struct PixelCounts {
  std::int64_t observed = 0, solved = 0, flagged_hits = 0, flagged_rcond = 0;
};

struct SolveResult {
  std::string strategy;  // as the plan reports it (auto resolved)
  int iterations = 0;
  bool converged = false;
  std::string stop_reason;
  std::vector<double> residuals;          // ||r|| / ||b|| after each iteration
  std::vector<double> iteration_seconds;  // per iteration, max over ranks
  std::vector<double> comm_seconds;       // per iteration: reduction + dot products, max
  double setup_seconds = 0;               // plan, owners, preconditioner: max over ranks
  double plan_seconds = 0;                // plan creation alone, max over ranks
  petacomm_xchg_stats stats{};            // per execution of 3 float64 per pixel
  std::string plan_description;           // petacomm_xchg_plan_describe JSON
  PixelCounts pixels;
  // Per local pixel (TimeDomain::pixels): the map (3 values; 0 where flagged), the white
  // preconditioner block M_p (II, IQ, IU, QQ, QU, UU), solved and owned flags.
  std::vector<double> map, blocks;
  std::vector<char> good, owned;
};

SolveResult solve_map(const TimeDomain &td, NoiseModel &noise, const SolverOptions &options,
                      MPI_Comm comm);

// Collective: throws on every rank (naming --strategy or --transport) when a
// SparseReducePlan would refuse these options; cheap (a plan over no keys).
void check_solver_options(const SolverOptions &options, MPI_Comm comm);

// Reciprocal condition number (smallest / largest eigenvalue) of a symmetric 3x3 block
// stored as (II, IQ, IU, QQ, QU, UU); 0 for a block that is not positive definite.
double block_rcond(const double block[6]);

}  // namespace petacomm::apps::mapmaker
