/* petacomm transpose: distributed transposes (2-D slabs and 3-D pencils), the packed
 * half-complex real FFT and the Fourier filter of gyrokinetic codes (the NEMORB kernel).
 *
 * Slab layout. A global n0 x n1 array (each element `howmany` interleaved values of one
 * dtype) is distributed by rows over the p ranks of a communicator: rank r holds rows
 * offset(n0, r) .. offset(n0, r) + count(n0, r) - 1, row-major, where
 *   count(n, r) = n / p + (r < n % p ? 1 : 0),  offset(n, r) = r (n / p) + min(r, n % p)
 * (the first n mod p ranks hold one more row). A forward transpose produces the n1 x n0
 * transposed array distributed the same way (rows count(n1, r) from offset(n1, r)); a
 * backward transpose is its exact inverse. When p divides n0 and n1 this is FFTW-MPI's
 * fftw_mpi_plan_many_transpose layout (FFTW's default blocks differ when p does not).
 *
 *   petacomm_transpose_plan plan;
 *   petacomm_transpose_plan_create(MPI_COMM_WORLD, n0, n1, 1, PETACOMM_TRANSPOSE_COMPLEX128,
 *                                  NULL, &plan);                                (collective)
 *   petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, in, out);     (collective)
 *   petacomm_transpose_plan_free(&plan);                                       (collective)
 *
 * in == out transposes in place (the buffer must hold max(local input, local output)
 * elements: petacomm_transpose_local's alloc_elements). Strategies (alltoall, alltoallv,
 * alltoallw, xor, pairwise, pipelined, partial, two-level) are listed by
 * petacomm_transpose_strategy_count/_info; "auto" lets the planner choose from the cost
 * model, or with planner "measure" by timing every applicable strategy on the caller's
 * buffers at the first execution (max over ranks, so all ranks choose the same).
 *
 * Every function returns a petacomm_status; on failure petacomm_last_error() names the
 * argument and the value at fault. Collective calls check their arguments on every rank
 * first and fail on all ranks together (nothing sent, output untouched) when any rank's
 * arguments are invalid; the message names the rank at fault.
 */
#ifndef PETACOMM_TRANSPOSE_H
#define PETACOMM_TRANSPOSE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "petacomm/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum petacomm_transpose_dtype {
  PETACOMM_TRANSPOSE_FLOAT32 = 0,
  PETACOMM_TRANSPOSE_FLOAT64 = 1,
  PETACOMM_TRANSPOSE_COMPLEX64 = 2,  /* two float32: real, imaginary */
  PETACOMM_TRANSPOSE_COMPLEX128 = 3, /* two float64 */
} petacomm_transpose_dtype;

typedef enum petacomm_transpose_direction {
  PETACOMM_TRANSPOSE_FORWARD = 0,  /* n0 x n1 by rows -> n1 x n0 by rows */
  PETACOMM_TRANSPOSE_BACKWARD = 1, /* the inverse */
} petacomm_transpose_direction;

/* Cost parameters of the planner (seconds, seconds per byte). Defaults
 * (petacomm_transpose_options_default): 0.5 us and 8 GB/s between ranks of one node, 1.5 us
 * and 10 GB/s between nodes, 12.5 GB/s per node link, MPI_Alltoall(v,w) 1.5 us per
 * message and 8 GB/s, local copies 10 GB/s, blocked transposes 5 GB/s, MPI's datatype
 * engine on element-sized pieces 1.5 GB/s. The Python binding fills them from the
 * measured machine model. docs/transpose.md gives each strategy's formula. */
typedef struct petacomm_transpose_cost_params {
  double p2p_alpha, p2p_beta;           /* a message between two ranks of one node */
  double net_alpha, net_beta;           /* a message between ranks of different nodes */
  double node_link_beta;                /* through one node's network link (contention) */
  double alltoall_alpha, alltoall_beta; /* per message and byte inside MPI_Alltoall(v,w) */
  double copy_beta;                     /* contiguous local copy */
  double transpose_beta;                /* local cache-blocked transpose (packing) */
  double datatype_beta;                 /* MPI datatype engine, element-sized pieces */
} petacomm_transpose_cost_params;

typedef struct petacomm_transpose_options {
  const char *strategy; /* "auto" (default) or a strategy name */
  const char *planner;  /* "estimate" (default: cost model) or "measure" */
  /* Filter-aware transposes: NULL (default), or mask_length == n1 flags, mask[j] != 0 when
   * column j of the forward input (row j of the backward input) may be nonzero. Columns
   * outside the mask are treated as zero: every strategy writes zeros there; `partial`
   * skips them in the exchange and skips the pairs that carry nothing. */
  const unsigned char *mask;
  int64_t mask_length;
  int window;       /* pipelined: messages in flight each way (default 4) */
  int measure_reps; /* planner "measure": timed executions per candidate (default 3), 1 to
                       PETACOMM_MAX_REPS (core.h, 10^6); checked whatever the planner */
  /* Ranks per node for two-level and the cost model: 0 (default) = the ranks sharing
   * memory (MPI_Comm_split_type), split further into nodes of k ranks when the environment
   * sets PETACOMM_NODE_SIZE=k; k > 0 = nodes of k consecutive ranks of one machine. */
  int node_size;
  petacomm_transpose_cost_params cost;
} petacomm_transpose_options;

/* Fills opts with the defaults documented above. */
petacomm_status petacomm_transpose_options_default(petacomm_transpose_options *opts);

/* ---- the strategy registry ---- */
petacomm_status petacomm_transpose_strategy_count(int *count);
petacomm_status petacomm_transpose_strategy_info(int index, petacomm_strategy_info *info);

/* ---- 2-D slab transposes ---- */
typedef struct petacomm_transpose_plan_s *petacomm_transpose_plan;

/* Collective. n0, n1 >= 1, howmany >= 1 values of dtype per element. opts may be NULL.
 * The plan keeps its own duplicate of comm. The _f variant takes a Fortran handle. */
petacomm_status petacomm_transpose_plan_create(MPI_Comm comm, int64_t n0, int64_t n1,
                                               int64_t howmany, petacomm_transpose_dtype dtype,
                                               const petacomm_transpose_options *opts,
                                               petacomm_transpose_plan *plan);
petacomm_status petacomm_transpose_plan_create_f(MPI_Fint comm, int64_t n0, int64_t n1,
                                                 int64_t howmany, petacomm_transpose_dtype dtype,
                                                 const petacomm_transpose_options *opts,
                                                 petacomm_transpose_plan *plan);

/* Creation for language bindings: caller_error (optional, NULL or "") is an argument error
 * the binding found on this rank before calling (a shape of three extents, say). The call
 * still takes part in the collective argument check, so every rank fails together (this one
 * with caller_error as its message, the others naming this rank) instead of the others
 * waiting forever; the other arguments are not read then. */
petacomm_status petacomm_transpose_plan_create_ext(MPI_Comm comm, int64_t n0, int64_t n1,
                                                   int64_t howmany, petacomm_transpose_dtype dtype,
                                                   const petacomm_transpose_options *opts,
                                                   const char *caller_error,
                                                   petacomm_transpose_plan *plan);
petacomm_status petacomm_transpose_plan_create_ext_f(MPI_Fint comm, int64_t n0, int64_t n1,
                                                     int64_t howmany,
                                                     petacomm_transpose_dtype dtype,
                                                     const petacomm_transpose_options *opts,
                                                     const char *caller_error,
                                                     petacomm_transpose_plan *plan);

/* Collective. Sets *plan to NULL; freeing NULL is a no-op; safe after MPI_Finalize. */
petacomm_status petacomm_transpose_plan_free(petacomm_transpose_plan *plan);

/* This rank's part of the layouts (local). Elements count `howmany` values each. */
typedef struct petacomm_transpose_local {
  int64_t rows_in, row0_in;   /* forward input: rows_in x n1 from global row row0_in */
  int64_t rows_out, row0_out; /* forward output: rows_out x n0 from global row row0_out */
  int64_t alloc_elements;     /* an in-place buffer: max(rows_in n1, rows_out n0) */
} petacomm_transpose_local;
petacomm_status petacomm_transpose_plan_local(petacomm_transpose_plan plan,
                                              petacomm_transpose_local *local);

/* Collective: transposes in (this rank's part of the direction's input) into out. in == out
 * is in place; any other overlap is an error. */
petacomm_status petacomm_transpose_execute(petacomm_transpose_plan plan,
                                           petacomm_transpose_direction direction, const void *in,
                                           void *out);

/* An array as bindings see it (numpy): data, shape, strides in bytes, dtype. */
typedef struct petacomm_transpose_array {
  void *data;
  int ndim; /* 0..4 */
  int64_t shape[4];
  int64_t strides[4]; /* bytes */
  petacomm_transpose_dtype dtype;
  int writeable;
} petacomm_transpose_array;

/* Collective: execute with the arrays checked on every rank (shape == the local shape of
 * the direction: (rows, cols) or (rows, cols, howmany) when howmany > 1; C-contiguous;
 * the plan's dtype; out writeable) before anything is sent. */
petacomm_status petacomm_transpose_execute_array(petacomm_transpose_plan plan,
                                                 petacomm_transpose_direction direction,
                                                 const petacomm_transpose_array *in,
                                                 const petacomm_transpose_array *out);

/* Name of the strategy the plan uses (static string; "auto" choices are resolved, except
 * with planner "measure" before the first execution, which names "measure-pending"). */
petacomm_status petacomm_transpose_plan_strategy(petacomm_transpose_plan plan, const char **name);

/* JSON: layout, problem statistics, every candidate's predicted (and measured) cost, the
 * choice and the reason. Local. Writes at most buflen bytes including the NUL and sets
 * *needed to the full length + 1. */
petacomm_status petacomm_transpose_plan_describe(petacomm_transpose_plan plan, char *buf,
                                                 size_t buflen, size_t *needed);

typedef struct petacomm_transpose_minavgmax {
  double min, avg, max;
} petacomm_transpose_minavgmax;

/* Per forward execution, over the ranks of the plan: messages and bytes this rank sends
 * (exact for point-to-point; the MPI_Alltoall(v,w) figures count every non-empty block
 * to another rank as one message), memory the plan holds (buffers, schedules). */
typedef struct petacomm_transpose_stats {
  petacomm_transpose_minavgmax messages;
  petacomm_transpose_minavgmax bytes;
  petacomm_transpose_minavgmax memory_bytes;
  double setup_seconds; /* plan creation, max over ranks */
} petacomm_transpose_stats;

/* Collective (three small reductions: the argument check, then the statistics); stats NULL
 * on any rank fails every rank together. */
petacomm_status petacomm_transpose_plan_stats(petacomm_transpose_plan plan,
                                              petacomm_transpose_stats *stats);

/* ---- offline planner (no MPI): what plan creation decides from these statistics ---- */
typedef struct petacomm_transpose_problem {
  int64_t ranks;             /* p */
  int64_t n0, n1;            /* global rows (distributed in the input) and columns */
  int64_t batch;             /* outer batch (pencil swaps: the third axis' local extent) */
  int64_t elem_bytes;        /* bytes per element (dtype size x howmany) */
  int64_t ranks_per_node;    /* nodes of this many consecutive ranks */
  const unsigned char *mask; /* NULL or n1 flags, as in the options */
  int64_t mask_length;
} petacomm_transpose_problem;

/* The planner's decision as JSON: {"choice", "reason", "candidates": [{"name",
 * "applicable", "not_applicable_because", "predicted_seconds", "messages", "bytes",
 * "steps", "node_link_bytes"}]}; buffer convention as petacomm_transpose_plan_describe.
 * cost NULL: the defaults. ERR_ARG naming the argument or field ("problem.mask",
 * "cost.net_beta", "buf"), nothing written, when problem is NULL or one of its counts is
 * out of range, mask is NULL with a nonzero mask_length or given with mask_length != n1, a
 * cost parameter is negative, infinite or NaN, or buf is NULL with a nonzero buflen. */
petacomm_status petacomm_transpose_model_decide(const petacomm_transpose_problem *problem,
                                                const petacomm_transpose_cost_params *cost,
                                                char *buf, size_t buflen, size_t *needed);

/* ---- 3-D pencils ---- */
/* A global n[0] x n[1] x n[2] array on a grid[0] x grid[1] process grid (rank = i0 grid[1]
 * + i1, as MPI_Cart_create orders it; grid[0] grid[1] == p). Three layouts, named by the
 * axis held whole on every rank, each stored row-major in the order given:
 *   Z (axis 2 whole): [n0 block over grid[0]][n1 block over grid[1]][n2]
 *   Y (axis 1 whole): [n0 block over grid[0]][n2 block over grid[1]][n1]
 *   X (axis 0 whole): [n2 block over grid[1]][n1 block over grid[0]][n0]
 * Z <-> Y swaps run on the row communicator (grid[1] ranks sharing i0), Y <-> X on the
 * column communicator (grid[0] ranks sharing i1): the z -> y -> x sequence of a 3-D FFT. */
typedef enum petacomm_pencil_layout {
  PETACOMM_PENCIL_Z = 0,
  PETACOMM_PENCIL_Y = 1,
  PETACOMM_PENCIL_X = 2,
} petacomm_pencil_layout;

typedef struct petacomm_transpose_pencil_s *petacomm_transpose_pencil;

/* Collective. The options (strategy, planner, window, node_size, cost) apply to both
 * swaps; a mask is not accepted. */
petacomm_status petacomm_transpose_pencil_create(MPI_Comm comm, const int64_t n[3],
                                                 const int grid[2], int64_t howmany,
                                                 petacomm_transpose_dtype dtype,
                                                 const petacomm_transpose_options *opts,
                                                 petacomm_transpose_pencil *pencil);
petacomm_status petacomm_transpose_pencil_create_f(MPI_Fint comm, const int64_t n[3],
                                                   const int grid[2], int64_t howmany,
                                                   petacomm_transpose_dtype dtype,
                                                   const petacomm_transpose_options *opts,
                                                   petacomm_transpose_pencil *pencil);
/* As petacomm_transpose_plan_create_ext: caller_error, a binding's argument error. */
petacomm_status petacomm_transpose_pencil_create_ext(MPI_Comm comm, const int64_t n[3],
                                                     const int grid[2], int64_t howmany,
                                                     petacomm_transpose_dtype dtype,
                                                     const petacomm_transpose_options *opts,
                                                     const char *caller_error,
                                                     petacomm_transpose_pencil *pencil);
petacomm_status petacomm_transpose_pencil_create_ext_f(MPI_Fint comm, const int64_t n[3],
                                                       const int grid[2], int64_t howmany,
                                                       petacomm_transpose_dtype dtype,
                                                       const petacomm_transpose_options *opts,
                                                       const char *caller_error,
                                                       petacomm_transpose_pencil *pencil);
petacomm_status petacomm_transpose_pencil_free(petacomm_transpose_pencil *pencil);

/* Local storage shape of a layout (in storage order) and the global index of its first
 * element along each of those axes. */
petacomm_status petacomm_transpose_pencil_local(petacomm_transpose_pencil pencil,
                                                petacomm_pencil_layout layout, int64_t shape[3],
                                                int64_t offset[3]);

/* Collective: from -> to must be adjacent (Z<->Y or Y<->X). in == out is in place (the
 * buffer must hold both layouts). */
petacomm_status petacomm_transpose_pencil_execute(petacomm_transpose_pencil pencil,
                                                  petacomm_pencil_layout from,
                                                  petacomm_pencil_layout to, const void *in,
                                                  void *out);
petacomm_status petacomm_transpose_pencil_execute_array(petacomm_transpose_pencil pencil,
                                                        petacomm_pencil_layout from,
                                                        petacomm_pencil_layout to,
                                                        const petacomm_transpose_array *in,
                                                        const petacomm_transpose_array *out);
petacomm_status petacomm_transpose_pencil_describe(petacomm_transpose_pencil pencil, char *buf,
                                                   size_t buflen, size_t *needed);

/* ---- the packed half-complex real FFT (FFTW3 underneath) ---- */
/* count lines of n real values (n even, >= 2) -> count lines of n/2 complex values
 * (interleaved doubles): slot 0 holds mode 0 in its real part and mode n/2 (also real) in
 * its imaginary part, slot k (1 <= k < n/2) mode k. Unnormalised, like FFTW's r2c. */
petacomm_status petacomm_rfft_packed(int64_t n, int64_t count, const double *in, double *out);
/* The exact inverse, normalised by 1/n: irfft_packed(rfft_packed(x)) == x to rounding. */
petacomm_status petacomm_irfft_packed(int64_t n, int64_t count, const double *in, double *out);

/* ---- the Fourier filter (NEMORB) ---- */
/* A real field f(s, chi, phi), n = {n_s, n_chi, n_phi} (n_chi, n_phi even), distributed over
 * s and chi on a grid[0] x grid[1] process grid (rank = i_s grid[1] + i_chi): rank holds
 * [n_s block][n_chi block][n_phi], row-major. apply() keeps the Fourier modes (m along chi,
 * n along phi) with |m| <= modes[0] and |n| <= modes[1] and zeroes the rest (|m| is
 * min(k, n_chi - k) for index k; the Nyquist mode n_chi/2 counts as n_chi/2). Variants:
 *   PLAIN: complexify, c2c along phi, full transposes, c2c along chi, mask, inverse;
 *   PACKED: r2c along phi with the packed half-complex format (half the transposed bytes);
 *   PACKED_PARTIAL: PACKED with filter-aware transposes that skip the modes |n| > modes[1]
 *   (and the chi FFTs of lines that are zero). */
typedef enum petacomm_fftfilter_variant {
  PETACOMM_FFTFILTER_PLAIN = 0,
  PETACOMM_FFTFILTER_PACKED = 1,
  PETACOMM_FFTFILTER_PACKED_PARTIAL = 2,
} petacomm_fftfilter_variant;

typedef struct petacomm_fftfilter_s *petacomm_fftfilter;

/* Collective. opts: the transposes' strategy, planner, window, node_size and cost (no
 * mask: the variant decides). */
petacomm_status petacomm_fftfilter_create(MPI_Comm comm, const int64_t n[3], const int grid[2],
                                          const int64_t modes[2],
                                          petacomm_fftfilter_variant variant,
                                          const petacomm_transpose_options *opts,
                                          petacomm_fftfilter *filter);
petacomm_status petacomm_fftfilter_create_f(MPI_Fint comm, const int64_t n[3], const int grid[2],
                                            const int64_t modes[2],
                                            petacomm_fftfilter_variant variant,
                                            const petacomm_transpose_options *opts,
                                            petacomm_fftfilter *filter);
/* As petacomm_transpose_plan_create_ext: caller_error, a binding's argument error. */
petacomm_status petacomm_fftfilter_create_ext(MPI_Comm comm, const int64_t n[3], const int grid[2],
                                              const int64_t modes[2],
                                              petacomm_fftfilter_variant variant,
                                              const petacomm_transpose_options *opts,
                                              const char *caller_error, petacomm_fftfilter *filter);
petacomm_status petacomm_fftfilter_create_ext_f(MPI_Fint comm, const int64_t n[3],
                                                const int grid[2], const int64_t modes[2],
                                                petacomm_fftfilter_variant variant,
                                                const petacomm_transpose_options *opts,
                                                const char *caller_error,
                                                petacomm_fftfilter *filter);
petacomm_status petacomm_fftfilter_free(petacomm_fftfilter *filter);

/* This rank's block: shape {s, chi, phi} and global offsets. */
petacomm_status petacomm_fftfilter_local(petacomm_fftfilter filter, int64_t shape[3],
                                         int64_t offset[3]);

/* Collective: filters in into out (float64, the local shape; in == out allowed). */
petacomm_status petacomm_fftfilter_apply(petacomm_fftfilter filter, const double *in, double *out);
petacomm_status petacomm_fftfilter_apply_array(petacomm_fftfilter filter,
                                               const petacomm_transpose_array *in,
                                               const petacomm_transpose_array *out);

/* This rank's totals over all applications so far (local): seconds per phase, bytes and
 * messages its transposes sent. */
typedef struct petacomm_fftfilter_stats {
  int64_t applications;
  double fft_phi_seconds;   /* r2c (or c2c) along phi and its inverse, packing included */
  double transpose_seconds; /* both transposes */
  double fft_chi_seconds;   /* c2c along chi and its inverse */
  double mask_seconds;      /* zeroing the modes outside the square */
  double total_seconds;     /* whole applications */
  double bytes_sent;        /* by this rank's transposes */
  double messages_sent;
} petacomm_fftfilter_stats;
petacomm_status petacomm_fftfilter_stats_get(petacomm_fftfilter filter,
                                             petacomm_fftfilter_stats *stats);
petacomm_status petacomm_fftfilter_describe(petacomm_fftfilter filter, char *buf, size_t buflen,
                                            size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* PETACOMM_TRANSPOSE_H */
