/* petacomm xchg: sparse key/value reduction (the MADmap communication pattern).
 *
 * Each rank holds values for some integer keys in [0, 2^63). After an execution, every
 * position holds the reduction of its key's values over all ranks that hold the key.
 * A plan is built once, collectively, from the keys (discovery of who shares what,
 * schedules, buffers, choice of strategy) and executed many times on value arrays aligned
 * with the keys.
 *
 *   petacomm_xchg_plan plan;
 *   petacomm_xchg_plan_create(MPI_COMM_WORLD, keys, n, NULL, &plan);      (collective)
 *   petacomm_xchg_execute(plan, MPI_COMM_WORLD, values, n, 3,
 *                         PETACOMM_XCHG_FLOAT64, PETACOMM_XCHG_SUM);        (collective)
 *   petacomm_xchg_plan_free(&plan);                                          (collective)
 *
 * Values are laid out key-major: values[i*k + c] is component c of position i.
 * Repeated keys on one rank are combined once (in position order) and every copy receives
 * the reduced result: a key held twice by one rank contributes once, its two values
 * combined with the operator.
 *
 * Every function returns a petacomm_status; on failure petacomm_last_error() names the
 * argument and the value at fault and the values array is left untouched. Arguments of
 * collective calls must agree on all ranks (like MPI): plan creation and every execution
 * first check their arguments on every rank in one small reduction and, if any rank's are
 * invalid or they differ between ranks, fail on all ranks together, naming the rank at
 * fault, before anything is sent. Only wrong call sequences (a freed or NULL plan, MPI not
 * initialised) are detected on the calling rank alone.
 *
 * Strategies are listed by a registry: petacomm_xchg_strategy_count and
 * petacomm_xchg_strategy_info (core.h's petacomm_strategy_info) give their names, a
 * summary and the options each reads.
 */
#ifndef PETACOMM_XCHG_H
#define PETACOMM_XCHG_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "petacomm/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct petacomm_xchg_plan_s *petacomm_xchg_plan;

typedef enum petacomm_xchg_dtype {
  PETACOMM_XCHG_FLOAT32 = 0,
  PETACOMM_XCHG_FLOAT64 = 1,
  PETACOMM_XCHG_INT32 = 2,
  PETACOMM_XCHG_INT64 = 3,
  PETACOMM_XCHG_COMPLEX64 = 4,  /* two float32: real, imaginary */
  PETACOMM_XCHG_COMPLEX128 = 5, /* two float64 */
} petacomm_xchg_dtype;

/* Integer sum and product wrap modulo 2^bits. min/max propagate NaN in petacomm's own
 * reductions; complex values allow only sum, prod and user operators. */
typedef enum petacomm_xchg_op {
  PETACOMM_XCHG_SUM = 0,
  PETACOMM_XCHG_PROD = 1,
  PETACOMM_XCHG_MIN = 2,
  PETACOMM_XCHG_MAX = 3,
  PETACOMM_XCHG_USER = 4, /* see petacomm_xchg_execute_user */
} petacomm_xchg_op;

/* A user-defined associative operator on elements of one dtype.
 * combine(inout, in, count, user_data) sets inout[i] = inout[i] (+) in[i] for count
 * elements, where inout holds the contributions of lower ranks (or earlier positions): the
 * operator need not be commutative, petacomm always combines in rank order.
 * identity points to one element e with e (+) x == x (+) e == x. */
typedef struct petacomm_xchg_user_op {
  void (*combine)(void *inout, const void *in, int64_t count, void *user_data);
  const void *identity;
  void *user_data;
} petacomm_xchg_user_op;

/* Cost parameters of the planner (seconds and seconds per byte). The cost of one message of
 * m bytes between two ranks is p2p_alpha + m * p2p_beta. Collective costs use the usual
 * formulas with effective parameters:
 *   allreduce of N bytes on p ranks:   2 ceil(log2 p) allreduce_alpha + 2 (p-1)/p N allreduce_beta
 *   allgather of n bytes per rank:     ceil(log2 p) allgather_alpha + (p-1) n allgather_beta
 *   alltoallv sending b bytes:         (p-1) alltoallv_alpha + b alltoallv_beta
 * local_beta is the time per byte of local packing and reducing. Defaults
 * (petacomm_xchg_options_default): a commodity cluster, 2 us latency and 5 GB/s links,
 * 2 GB/s effective allreduce, 10 GB/s local memory work. The Python binding fills these
 * from the measured machine model. */
typedef struct petacomm_xchg_cost_params {
  double p2p_alpha, p2p_beta;
  double allreduce_alpha, allreduce_beta;
  double allgather_alpha, allgather_beta;
  double alltoallv_alpha, alltoallv_beta;
  double local_beta;
} petacomm_xchg_cost_params;

/* Point-to-point cost by message size, a piecewise fit of ping-pong times such as petacomm
 * netbench measures: a message of m bytes costs alpha[i] + m beta[i], where i is the last
 * piece with from_bytes[i] <= m (piece 0 below from_bytes[0]); from_bytes ascending. The
 * planner prices each point-to-point exchange at the piece covering its mean message size
 * (bytes / messages of the rank). pieces == 0: cost.p2p_alpha and cost.p2p_beta at every
 * size (what petacomm_xchg_plan_create uses). */
#define PETACOMM_XCHG_P2P_PIECES 8
typedef struct petacomm_xchg_p2p_curve {
  int pieces; /* 0 .. PETACOMM_XCHG_P2P_PIECES */
  double from_bytes[PETACOMM_XCHG_P2P_PIECES];
  double alpha[PETACOMM_XCHG_P2P_PIECES]; /* seconds */
  double beta[PETACOMM_XCHG_P2P_PIECES];  /* seconds per byte */
} petacomm_xchg_p2p_curve;

typedef struct petacomm_xchg_options {
  /* "auto" (default) or a registered strategy: "dense-allreduce", "allgather", "directory",
   * "owner", "hub-split" today (petacomm_xchg_strategy_info lists them). */
  const char *strategy;
  /* How directory, owner and hub-split exchange with their partners: "p2p" (persistent
   * point-to-point, default), "neighbor" (neighbourhood collective on a distributed graph)
   * or "alltoallv". The allgather strategy always uses MPI_Alltoallv, like the study. */
  const char *transport;
  int64_t chunk_keys;             /* dense-allreduce (and hub) buffer in keys; default 65536 */
  int64_t allgather_keys;         /* allgather discovery buffer in keys per rank; default 65536 */
  int hub_threshold;              /* hub-split: keys on more than this many ranks are hubs;
                                     0 = chosen by the planner (default) */
  int deterministic;              /* 1: fixed reduction order by rank, bitwise-identical floats
                                     across strategies (default 0) */
  int autotune;                   /* N > 0: time every candidate strategy for N executions;
                                     0 (default) to PETACOMM_MAX_REPS (core.h, 10^6) */
  int send_window;                /* point-to-point rounds (p2p transport, discovery): at most
                                     this many sends in flight per rank, posted in rotated
                                     order; 0 = all at once (default) */
  petacomm_xchg_dtype plan_dtype; /* element the planner and autotuner assume: dtype ... */
  int plan_k;                     /* ... and components per key (default float64, 1) */
  petacomm_xchg_cost_params cost;
} petacomm_xchg_options;

/* Fills opts with the defaults documented above. */
petacomm_status petacomm_xchg_options_default(petacomm_xchg_options *opts);

/* The strategy registry (local, no MPI): *count strategies, index 0 .. count-1 in registry
 * order, each with its name, a one-sentence summary and the options it reads (static
 * strings). */
petacomm_status petacomm_xchg_strategy_count(int *count);
petacomm_status petacomm_xchg_strategy_info(int index, petacomm_strategy_info *info);

/* Collective over comm. keys: n values in [0, 2^63), any order, repeats allowed; keys may be
 * NULL when n == 0. opts may be NULL (defaults). The plan keeps its own duplicate of comm.
 * The _f variant takes a Fortran handle (MPI_Comm_c2f), for Fortran and Python. */
petacomm_status petacomm_xchg_plan_create(MPI_Comm comm, const int64_t *keys, int64_t n,
                                          const petacomm_xchg_options *opts,
                                          petacomm_xchg_plan *plan);
petacomm_status petacomm_xchg_plan_create_f(MPI_Fint comm, const int64_t *keys, int64_t n,
                                            const petacomm_xchg_options *opts,
                                            petacomm_xchg_plan *plan);

/* Plan creation with two extras, both optional (NULL):
 *   p2p: the point-to-point cost by message size (see petacomm_xchg_p2p_curve); it must be
 *        the same on every rank, like opts;
 *   caller_error: an argument error a language binding found on this rank before calling
 *        (a key array of floats, say). The call still takes part in the collective argument
 *        check, so every rank fails together (this one with caller_error as its message, the
 *        others naming this rank) instead of the others waiting forever. keys and n are not
 *        read when caller_error is non-empty. */
petacomm_status petacomm_xchg_plan_create_ext(MPI_Comm comm, const int64_t *keys, int64_t n,
                                              const petacomm_xchg_options *opts,
                                              const petacomm_xchg_p2p_curve *p2p,
                                              const char *caller_error, petacomm_xchg_plan *plan);
petacomm_status petacomm_xchg_plan_create_ext_f(MPI_Fint comm, const int64_t *keys, int64_t n,
                                                const petacomm_xchg_options *opts,
                                                const petacomm_xchg_p2p_curve *p2p,
                                                const char *caller_error, petacomm_xchg_plan *plan);

/* Collective. Sets *plan to NULL; freeing NULL is a no-op. Safe after MPI_Finalize (then
 * only local memory is released). */
petacomm_status petacomm_xchg_plan_free(petacomm_xchg_plan *plan);

/* Collective over the plan's communicator: reduces values (n positions x k components of
 * dtype) in place. comm must be the communicator the plan was created on. Any dtype and k
 * may be executed (the plan's plan_dtype and plan_k only inform the planner), but they and
 * op must agree on all ranks: on more than one rank the execution starts with one small
 * MPI_Allreduce that checks every rank's arguments (n against the plan, dtype, k, op, comm)
 * and that dtype, k and op agree, and fails on all ranks together otherwise. */
petacomm_status petacomm_xchg_execute(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                      int64_t n, int k, petacomm_xchg_dtype dtype,
                                      petacomm_xchg_op op);
/* Same with a user-defined operator (op = PETACOMM_XCHG_USER). */
petacomm_status petacomm_xchg_execute_user(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                           int64_t n, int k, petacomm_xchg_dtype dtype,
                                           const petacomm_xchg_user_op *user);

/* Non-blocking halves: begin reads values (they may be read, not written, until end),
 * starts the communication and returns; end completes it and writes the results into the
 * values array given to begin. user is required when op == PETACOMM_XCHG_USER, ignored
 * otherwise; it must stay valid until end. One execution at a time per plan. */
petacomm_status petacomm_xchg_execute_begin(petacomm_xchg_plan plan, MPI_Comm comm, void *values,
                                            int64_t n, int k, petacomm_xchg_dtype dtype,
                                            petacomm_xchg_op op, const petacomm_xchg_user_op *user);
petacomm_status petacomm_xchg_execute_end(petacomm_xchg_plan plan);

/* Fortran-handle variants of execute_begin (execute = begin + end). */
petacomm_status petacomm_xchg_execute_begin_f(petacomm_xchg_plan plan, MPI_Fint comm, void *values,
                                              int64_t n, int k, petacomm_xchg_dtype dtype,
                                              petacomm_xchg_op op);

/* execute_begin with caller_error (NULL if none): an argument error a language binding found
 * on this rank (say, values of an unsupported type); the call still takes part in the
 * execution's argument check so that every rank fails together. values, n, k, dtype and op
 * are not read when caller_error is non-empty. */
petacomm_status petacomm_xchg_execute_begin_ext(petacomm_xchg_plan plan, MPI_Comm comm,
                                                void *values, int64_t n, int k,
                                                petacomm_xchg_dtype dtype, petacomm_xchg_op op,
                                                const petacomm_xchg_user_op *user,
                                                const char *caller_error);
petacomm_status petacomm_xchg_execute_begin_ext_f(petacomm_xchg_plan plan, MPI_Fint comm,
                                                  void *values, int64_t n, int k,
                                                  petacomm_xchg_dtype dtype, petacomm_xchg_op op,
                                                  const char *caller_error);

/* Name of the strategy the plan uses (static string). Local. */
petacomm_status petacomm_xchg_plan_strategy(petacomm_xchg_plan plan, const char **name);

/* Number of key positions the plan was created with on this rank. Local. */
petacomm_status petacomm_xchg_plan_size(petacomm_xchg_plan plan, int64_t *n);

/* JSON text: plan statistics, predicted (and, with autotune, measured) cost per strategy,
 * the choice and the reason. Local (computed at creation). Writes at most buflen bytes
 * including the NUL and sets *needed to the full length + 1. */
petacomm_status petacomm_xchg_plan_describe(petacomm_xchg_plan plan, char *buf, size_t buflen,
                                            size_t *needed);

typedef struct petacomm_xchg_minavgmax {
  double min, avg, max;
} petacomm_xchg_minavgmax;

/* Per execution and per rank, over the ranks of the plan's communicator. Messages and bytes
 * of point-to-point and all-to-all exchanges are exact; those of MPI_Allreduce are the
 * Rabenseifner figures (2 ceil(log2 p) messages, 2 (p-1)/p N bytes) since MPI chooses the
 * algorithm. memory_bytes: index, schedules and buffers held by the plan. */
typedef struct petacomm_xchg_stats {
  petacomm_xchg_minavgmax messages;
  petacomm_xchg_minavgmax bytes;
  petacomm_xchg_minavgmax memory_bytes;
  double setup_seconds; /* plan creation (wall time), max over ranks */
  /* Plan creation over ranks: wall time; compute = this rank's thread CPU time outside the
   * MPI calls that wait or poll for other ranks (insensitive to oversubscription); mpi = wall
   * time inside those calls. */
  petacomm_xchg_minavgmax setup_wall_seconds;
  petacomm_xchg_minavgmax setup_compute_seconds;
  petacomm_xchg_minavgmax setup_mpi_seconds;
} petacomm_xchg_stats;

/* Collective (two small reductions: the argument check, then the statistics): statistics for
 * elements of (dtype, k) and setup times. dtype and k must agree on all ranks; a bad or
 * differing argument on any rank (stats NULL included) fails every rank together. */
petacomm_status petacomm_xchg_plan_stats(petacomm_xchg_plan plan, petacomm_xchg_dtype dtype, int k,
                                         petacomm_xchg_stats *stats);

/* ---- Offline cost model (no MPI): what the planner predicts from plan statistics. ---- */

#define PETACOMM_XCHG_HUB_LEVELS 32

/* Sharing statistics of one rank. d(key) = number of ranks holding the key. Hub level b
 * means threshold T = 2^b: keys with d > T are hubs. */
typedef struct petacomm_xchg_rank_stats {
  int64_t n_local;       /* key positions */
  int64_t n_unique;      /* distinct keys */
  int64_t n_shared;      /* distinct keys with d >= 2 */
  int64_t pair_partners; /* ranks sharing at least one key with this rank */
  int64_t pair_values;   /* sum over shared keys of (d - 1) */
  int64_t owner_sends;   /* owners (other than me) of my shared keys */
  int64_t owner_send_values;
  int64_t owner_recvs; /* other ranks holding keys I own */
  int64_t owner_recv_values;
  int64_t owned_keys;   /* shared keys owned by this rank */
  int64_t dense_chunks; /* touched chunks in which this rank has keys */
  int64_t hub_pair_partners[PETACOMM_XCHG_HUB_LEVELS]; /* partners through keys d <= 2^b */
  int64_t hub_pair_values[PETACOMM_XCHG_HUB_LEVELS];   /* sum (d-1) over keys 2 <= d <= 2^b */
  int64_t hub_keys[PETACOMM_XCHG_HUB_LEVELS];          /* my keys with d > 2^b */
  int64_t directory_send_msgs, directory_send_keys;    /* discovery: to homes */
  int64_t directory_reply_ints;                        /* discovery: replies received */
  /* Nodes (strategy node-aware; 0 when the plan did not look at nodes). The leader's fields
   * are 0 on the other ranks of its node. */
  int64_t nodes;              /* nodes of the plan's communicator */
  int64_t node_ranks;         /* ranks on this rank's node */
  int64_t node_leader;        /* 1 on the node's leader (its lowest rank), else 0 */
  int64_t node_members;       /* leader: other ranks of its node holding shared keys */
  int64_t node_member_values; /* leader: their shared keys (values in, and results out) */
  int64_t node_union_keys;    /* leader: distinct shared keys held on its node */
  int64_t node_partners;      /* leader: other nodes holding one of those keys */
  int64_t node_send_values;   /* leader: values sent to the other leaders per execution */
  int64_t node_recv_values;   /* leader: values received from them */
} petacomm_xchg_rank_stats;

typedef struct petacomm_xchg_global_stats {
  int64_t ranks;
  int64_t distinct_keys;
  int64_t key_min, key_max; /* -1 when no rank has keys */
  int64_t dense_chunks;     /* chunks touched by any rank; when they span 2^23 chunks or
                               more (and reach beyond the first 4096): min(chunks spanned,
                               distinct keys), an upper bound */
  int64_t chunk_keys;
  int64_t allgather_keys;
  int64_t max_unique;                                 /* max over ranks of n_unique */
  int64_t multiplicity[PETACOMM_XCHG_HUB_LEVELS + 1]; /* distinct keys with d in
                                   (2^(b-1), 2^b]; bucket 0: d == 1 */
} petacomm_xchg_global_stats;

typedef struct petacomm_xchg_prediction {
  const char *strategy;   /* static name */
  double execute_seconds; /* per execution, max over ranks */
  double setup_seconds;   /* discovery and schedule */
  double messages;        /* per execution, max over ranks */
  double bytes;           /* per execution, max over ranks */
  int hub_threshold;      /* hub-split: best threshold T (keys on > T ranks are hubs) */
  int64_t hub_keys;       /* hub-split: number of hub keys at that threshold */
} petacomm_xchg_prediction;

/* The planner without MPI: predicts every registered strategy (out[i] for registry index i,
 * capacity >= petacomm_xchg_strategy_count entries) from the statistics of all nranks
 * ranks for elements of elem_bytes bytes, and decides as strategy "auto" would. The same
 * code the planner runs inside a plan (where ranks are combined by MPI reductions).
 * cost and p2p may be NULL (defaults; one alpha and beta at every size). decision, if not
 * NULL, receives JSON text (at most decision_len bytes including the NUL; *needed, if not
 * NULL, is set to the full length + 1): {"choice", "reason", "candidates": [{"name",
 * "candidate", "not_a_candidate_because", "predicted_execute_seconds"}]}.
 * ERR_ARG, naming the argument or field ("ranks[3].pair_values", "global.key_min"), with
 * nothing written, unless: ranks, global and out are not NULL; nranks >= 1 and equal to
 * global->ranks; capacity is enough; elem_bytes >= 1; decision is NULL only with
 * decision_len 0; every count of every ranks[r] and of global is >= 0 (chunk_keys and
 * allgather_keys >= 1); key_min and key_max are both -1 (no keys) or 0 <= key_min <=
 * key_max; the multiplicity buckets sum to distinct_keys; cost, p2p and transport are as
 * plan creation takes them. */
petacomm_status petacomm_xchg_model_decide(const petacomm_xchg_rank_stats *ranks, int64_t nranks,
                                           const petacomm_xchg_global_stats *global,
                                           const petacomm_xchg_cost_params *cost,
                                           const petacomm_xchg_p2p_curve *p2p, int64_t elem_bytes,
                                           const char *transport, petacomm_xchg_prediction *out,
                                           int capacity, char *decision, size_t decision_len,
                                           size_t *needed);

/* petacomm_xchg_model_decide without p2p curve and decision. out must have room for
 * petacomm_xchg_strategy_count entries (it grows when a strategy is added). */
petacomm_status petacomm_xchg_model_predict(const petacomm_xchg_rank_stats *ranks, int64_t nranks,
                                            const petacomm_xchg_global_stats *global,
                                            const petacomm_xchg_cost_params *cost,
                                            int64_t elem_bytes, const char *transport,
                                            petacomm_xchg_prediction *out);

#ifdef __cplusplus
}
#endif
#endif /* PETACOMM_XCHG_H */
