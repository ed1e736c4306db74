// The parts of BLACS, PBLAS, ScaLAPACK and LAPACK MADbench calls (Fortran symbols with a
// trailing underscore, as gfortran-built ScaLAPACK and MKL both export them), and the
// block-cyclic distribution of an N x N matrix over a process grid.
#pragma once

#include <cstdint>
#include <vector>

extern "C" {
void Cblacs_get(int context, int what, int *value);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridmap(int *context, int *usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
             const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
             double *c, const int *ic, const int *jc, const int *descc);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja,
              const int *desca, int *info);
void pdpotri_(const char *uplo, const int *n, double *a, const int *ia, const int *ja,
              const int *desca, int *info);
void pdtran_(const int *m, const int *n, const double *alpha, const double *a, const int *ia,
             const int *ja, const int *desca, const double *beta, double *c, const int *ic,
             const int *jc, const int *descc);
void pdgemr2d_(const int *m, const int *n, const double *a, const int *ia, const int *ja,
               const int *desca, double *b, const int *ib, const int *jb, const int *descb,
               const int *ictxt);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info);
}

namespace petacomm::apps::madbench {

// A BLACS process grid. ranks[r * cols + c] is the MPI_COMM_WORLD rank at (r, c).
struct Grid {
  int context = -1;  // -1 on processes outside the grid
  int rows = 0, cols = 0;
  int my_row = -1, my_col = -1;
  std::vector<int> ranks;
  bool contains_me() const { return my_row >= 0; }
  int rank_at(int r, int c) const { return ranks[static_cast<std::size_t>(r * cols + c)]; }
};

// The most square grid of p processes: rows = the largest divisor of p <= sqrt(p).
void grid_shape(int p, int &rows, int &cols);

// An N x N matrix distributed block-cyclically (nb x nb blocks, first block on (0, 0)) over
// a grid, stored column-major in a local array of lld x local_cols on each process.
struct BlockCyclic {
  const Grid *grid = nullptr;
  int n = 0, nb = 0;
  int local_rows = 0, local_cols = 0, lld = 1;
  int desc[9] = {0, -1, 0, 0, 0, 0, 0, 0, 0};

  BlockCyclic() = default;
  BlockCyclic(const Grid &g, int n, int nb);
  std::size_t local_size() const {
    return static_cast<std::size_t>(lld) * static_cast<std::size_t>(local_cols);
  }
  // Global index of local row li (column lj).
  int global_row(int li) const { return ((li / nb) * grid->rows + grid->my_row) * nb + li % nb; }
  int global_col(int lj) const { return ((lj / nb) * grid->cols + grid->my_col) * nb + lj % nb; }
};

}  // namespace petacomm::apps::madbench
