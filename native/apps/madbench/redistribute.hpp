// Gang mode's redistribution: matrices move between block-cyclic layouts on different
// process grids (the whole machine's grid and each gang's grid).
//
// remap_blocks is petacomm's: with the same block size on both sides a global nb x nb block
// is a whole block in both layouts, so each process computes directly which blocks it sends
// to and receives from whom, packs them in one canonical order (matrix, block column, block
// row) and moves every matrix of the batch in ONE MPI_Alltoallv of whole blocks. ScaLAPACK's
// pdgemr2d handles any pair of layouts and moves one matrix per call.
#pragma once

#include <mpi.h>

#include <vector>

#include "scalapack.hpp"

namespace petacomm::apps::madbench {

struct Transfer {
  const BlockCyclic *from = nullptr;  // layout on the source grid
  const double *source = nullptr;     // local array (nullptr when not in the source grid)
  const BlockCyclic *to = nullptr;
  double *target = nullptr;  // local array (nullptr when not in the target grid)
};

struct RemapCounts {
  long long blocks_sent = 0;  // whole nb x nb blocks this process sent (itself included)
  int partners = 0;           // other processes it sent to
};

// Collective over world: performs every transfer. All transfers share n and nb; every
// process passes the same list (with its own local arrays).
RemapCounts remap_blocks(const std::vector<Transfer> &transfers, MPI_Comm world);

// The same transfers through ScaLAPACK's pdgemr2d, one call per matrix; context is a BLACS
// context holding every process of both grids.
void pdgemr2d_transfers(const std::vector<Transfer> &transfers, int context);

}  // namespace petacomm::apps::madbench
