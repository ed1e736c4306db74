/* petacomm node: a node-aware messaging layer (the Cell Messaging Layer idea on many-core
 * nodes). Ranks that share memory talk through one MPI-3 shared-memory window per node with
 * a receiver-initiated protocol; remote traffic goes through one gateway rank per node; the
 * gateway also serves RPCs (file I/O, window allocation) for the ranks of its node.
 * See docs/node-layer.md for the protocol, its memory use and when to use it.
 *
 *   petacomm_node node;
 *   petacomm_node_create(MPI_COMM_WORLD, NULL, &node);                      (collective)
 *   petacomm_node_send(node, buf, bytes, dest, tag);
 *   petacomm_node_recv(node, buf, capacity, source, tag, &status);
 *   petacomm_node_allreduce(node, in, out, n, PETACOMM_NODE_FLOAT64, PETACOMM_NODE_SUM,
 *                           PETACOMM_NODE_SCOPE_ALL);                          (collective)
 *   petacomm_node_free(&node);                                               (collective)
 *
 * Ranks are ranks of the communicator given to create. Nodes are the shared-memory domains
 * of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), optionally cut into virtual nodes of k
 * ranks (options.node_size or PETACOMM_NODE_SIZE=k: local rank l of a domain, counted in
 * communicator rank order, belongs to virtual node l / k of that domain). The first rank of
 * a node (local rank 0) is its leader: the gateway for remote traffic and the servant for
 * RPCs. Nodes are numbered in the order of their leaders' ranks.
 *
 * Threads: the layer needs only MPI_THREAD_SINGLE and must be called from one thread per
 * rank (or serialised by the caller). There is no progress thread: a rank makes progress,
 * and its gateway forwards and serves, only while it is inside a layer call (every blocking
 * call and every test/progress call progresses). A gateway rank that computes for long
 * without calling the layer delays its node's remote traffic and RPCs; call
 * petacomm_node_progress in such loops.
 *
 * Every function returns a petacomm_status; on failure petacomm_last_error() names the
 * argument and the value at fault. Collective calls fail on every rank together.
 */
#ifndef PETACOMM_NODE_H
#define PETACOMM_NODE_H

#include <mpi.h>
#include <stdint.h>

#include "petacomm/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct petacomm_node_s *petacomm_node;
typedef struct petacomm_node_request_s *petacomm_node_request;

/* Sizes are in bytes. Every option must agree on all ranks (create checks it), and create
 * refuses options whose node window (docs/node-layer.md) exceeds the machine's memory. */
typedef struct petacomm_node_options {
  int node_size;           /* ranks per virtual node; 0 (default): PETACOMM_NODE_SIZE if set,
                              else the whole shared-memory domain */
  int slots;               /* message slots per ordered pair of ranks in a node (default 8):
                              a sender waits when all its slots towards a receiver are full */
  int64_t slot_bytes;      /* bytes per slot, 64 of them a header (default 8192): messages up to
                              slot_bytes - 64 are sent eagerly, larger ones by rendezvous */
  int descriptors;         /* rendezvous descriptors in flight per ordered pair (default 16) */
  int64_t coll_bytes;      /* per-rank shared area of the collectives: chunk size (default
                              256 KiB) */
  int64_t heap_bytes;      /* node heap: petacomm_node_alloc and gateway staging (default
                              64 MiB per node, in the leader's segment) */
  int64_t aggregate_bytes; /* gateway: small messages to one node are batched into one MPI
                              message of at most this size (default 64 KiB) */
  int64_t max_mpi_bytes;   /* gateway: larger messages travel as fragments of at most this size
                              (default 1 GiB; keeps MPI counts below 2^31) */
} petacomm_node_options;

/* Fills opts with the defaults documented above. */
petacomm_status petacomm_node_options_default(petacomm_node_options *opts);

/* Collective over comm (the layer keeps its own duplicate). opts may be NULL (defaults).
 * The _f variant takes a Fortran handle (MPI_Comm_c2f), for Fortran and Python. */
petacomm_status petacomm_node_create(MPI_Comm comm, const petacomm_node_options *opts,
                                     petacomm_node *node);
petacomm_status petacomm_node_create_f(MPI_Fint comm, const petacomm_node_options *opts,
                                       petacomm_node *node);
/* Creation for language bindings: caller_error (optional, NULL or "") is an argument error
 * the binding found on this rank before calling (an unknown option, say). The call still
 * takes part in the collective argument check, so every rank fails together (this one with
 * caller_error as its message, the others naming this rank) instead of the others waiting
 * forever; opts is not read then. */
petacomm_status petacomm_node_create_ext(MPI_Comm comm, const petacomm_node_options *opts,
                                         const char *caller_error, petacomm_node *node);
petacomm_status petacomm_node_create_ext_f(MPI_Fint comm, const petacomm_node_options *opts,
                                           const char *caller_error, petacomm_node *node);

/* Collective. Fails on every rank (ERR_STATE, the layer kept) while any rank still has
 * incomplete requests. Messages sent but never received are discarded. Sets *node to NULL;
 * freeing NULL is a no-op; after MPI_Finalize only local memory is released. */
petacomm_status petacomm_node_free(petacomm_node *node);

/* ---- memory domains ---------------------------------------------------------------- */
typedef struct petacomm_node_layout {
  int rank, size;             /* this rank and the number of ranks (the layer's communicator) */
  int node, nodes;            /* this rank's node index and the number of nodes */
  int local_rank, local_size; /* rank within the node and ranks in the node */
  int leader;                 /* rank of this node's leader (gateway and servant) */
  int node_size;              /* virtual node size in force (0: whole shared-memory domains) */
  int domains;                /* number of real shared-memory domains */
} petacomm_node_layout;

petacomm_status petacomm_node_get_layout(petacomm_node node, petacomm_node_layout *layout);

/* Node and local rank of any rank (from the node's shared rank map; no communication). */
petacomm_status petacomm_node_locate(petacomm_node node, int rank, int *node_index,
                                     int *local_rank);
/* Rank of the leader of node node_index. */
petacomm_status petacomm_node_leader_of(petacomm_node node, int node_index, int *rank);

/* The layer's node communicator (the ranks of this node, in local rank order) and leader
 * communicator (one rank per node, in node order; MPI_COMM_NULL on other ranks). They belong
 * to the layer: use them (MPI calls on them do not disturb the layer), never free them.
 * The _f variant returns Fortran handles (MPI_Comm_c2f; MPI_COMM_NULL's on non-leaders). */
petacomm_status petacomm_node_comms(petacomm_node node, MPI_Comm *node_comm, MPI_Comm *leader_comm);
petacomm_status petacomm_node_comms_f(petacomm_node node, MPI_Fint *node_comm,
                                      MPI_Fint *leader_comm);

/* ---- window memory ----------------------------------------------------------------- */
/* Allocates bytes (>= 0; 64-byte aligned) from the node heap, which every rank of the node
 * maps: an RPC to the servant. A receive buffer allocated here is written by the sender
 * directly (one copy); a send buffer allocated here is read by the receiver directly.
 * ERR_NOMEM names the largest free block when the heap is exhausted. */
petacomm_status petacomm_node_alloc(petacomm_node node, int64_t bytes, void **ptr);
/* Returns memory from petacomm_node_alloc (an RPC); NULL is a no-op. */
petacomm_status petacomm_node_dealloc(petacomm_node node, void *ptr);
/* Node-wide name of heap memory: the offset is valid on every rank of the node. */
petacomm_status petacomm_node_heap_offset(petacomm_node node, const void *ptr, int64_t *offset);
petacomm_status petacomm_node_heap_pointer(petacomm_node node, int64_t offset, void **ptr);

/* Where a buffer lives, as the layer sees it (the device-agnostic buffer interface: the
 * space decides how data is moved; see docs/node-layer.md for device memory). */
typedef enum petacomm_node_memory_space {
  PETACOMM_NODE_HOST_PRIVATE = 0, /* process memory: moved through slots (two copies) */
  PETACOMM_NODE_HOST_WINDOW = 1,  /* the node heap: moved in one copy */
} petacomm_node_memory_space;
petacomm_status petacomm_node_memory_space_of(petacomm_node node, const void *ptr, int64_t bytes,
                                              petacomm_node_memory_space *space);

/* ---- point-to-point ---------------------------------------------------------------- */
/* Tags are >= 0; PETACOMM_NODE_ANY_TAG matches any tag in receives and probes. There is no
 * wildcard source. Messages from one source are received in the order sent (per tag, as in
 * MPI); buffers and lengths are in bytes (int64: messages above 2^31 bytes are supported).
 * A send completes when its buffer may be reused (eager messages are buffered in slots).
 * A receive whose buffer is smaller than the matched message completes with ERR_ARG naming
 * both sizes; the message is consumed, the buffer left untouched. */
#define PETACOMM_NODE_ANY_TAG (-1)

typedef struct petacomm_node_status {
  int source;    /* rank that sent the message */
  int tag;       /* its tag */
  int64_t bytes; /* its length */
} petacomm_node_status;

petacomm_status petacomm_node_send(petacomm_node node, const void *buf, int64_t bytes, int dest,
                                   int tag);
petacomm_status petacomm_node_recv(petacomm_node node, void *buf, int64_t capacity, int source,
                                   int tag, petacomm_node_status *status);
petacomm_status petacomm_node_isend(petacomm_node node, const void *buf, int64_t bytes, int dest,
                                    int tag, petacomm_node_request *request);
petacomm_status petacomm_node_irecv(petacomm_node node, void *buf, int64_t capacity, int source,
                                    int tag, petacomm_node_request *request);
/* Completes a request and sets *request to NULL; status may be NULL. A request that failed
 * (a receive buffer too small) returns its error here. */
petacomm_status petacomm_node_wait(petacomm_node node, petacomm_node_request *request,
                                   petacomm_node_status *status);
/* *done = 1 and *request = NULL once complete (its error, if any, returned then). */
petacomm_status petacomm_node_test(petacomm_node node, petacomm_node_request *request, int *done,
                                   petacomm_node_status *status);
/* Waits for all n requests (statuses may be NULL); returns the first error. */
petacomm_status petacomm_node_waitall(petacomm_node node, int n, petacomm_node_request *requests,
                                      petacomm_node_status *statuses);
/* Blocks until a message from source matching tag has arrived; does not receive it. */
petacomm_status petacomm_node_probe(petacomm_node node, int source, int tag,
                                    petacomm_node_status *status);
petacomm_status petacomm_node_iprobe(petacomm_node node, int source, int tag, int *found,
                                     petacomm_node_status *status);
/* One progress pass: receive, forward (on gateways), serve RPCs (on servants). */
petacomm_status petacomm_node_progress(petacomm_node node);

/* ---- collectives (two-level: shared memory in the node, leaders across nodes) ------- */
typedef enum petacomm_node_dtype {
  PETACOMM_NODE_BYTE = 0, /* bcast and gather only */
  PETACOMM_NODE_INT32 = 1,
  PETACOMM_NODE_INT64 = 2,
  PETACOMM_NODE_FLOAT32 = 3,
  PETACOMM_NODE_FLOAT64 = 4,
} petacomm_node_dtype;

/* Integer sum and product wrap modulo 2^bits. Within a node, contributions are combined in
 * local rank order; across nodes the leaders' MPI reduction combines the node results. */
typedef enum petacomm_node_op {
  PETACOMM_NODE_SUM = 0,
  PETACOMM_NODE_PROD = 1,
  PETACOMM_NODE_MIN = 2,
  PETACOMM_NODE_MAX = 3,
} petacomm_node_op;

/* SCOPE_ALL: every rank of the layer, roots are ranks. SCOPE_NODE: the ranks of this node
 * only (no communication between nodes), roots are local ranks. The collective, count,
 * dtype, op, root and scope must be the same on every rank of the scope: the first round
 * checks them, and every rank fails together (ERR_ARG, no buffer changed) when they differ
 * or any rank's are invalid. */
typedef enum petacomm_node_scope {
  PETACOMM_NODE_SCOPE_ALL = 0,
  PETACOMM_NODE_SCOPE_NODE = 1,
} petacomm_node_scope;

petacomm_status petacomm_node_barrier(petacomm_node node, petacomm_node_scope scope);
petacomm_status petacomm_node_bcast(petacomm_node node, void *buf, int64_t count,
                                    petacomm_node_dtype dtype, int root, petacomm_node_scope scope);
/* recv is used on root only (may be NULL elsewhere); send and recv must not overlap. */
petacomm_status petacomm_node_reduce(petacomm_node node, const void *send, void *recv,
                                     int64_t count, petacomm_node_dtype dtype, petacomm_node_op op,
                                     int root, petacomm_node_scope scope);
petacomm_status petacomm_node_allreduce(petacomm_node node, const void *send, void *recv,
                                        int64_t count, petacomm_node_dtype dtype,
                                        petacomm_node_op op, petacomm_node_scope scope);
/* recv (root only) receives count elements from every rank of the scope, in rank order (local
 * rank order for SCOPE_NODE). Across nodes count x element size must stay below 2^31 bytes. */
petacomm_status petacomm_node_gather(petacomm_node node, const void *send, int64_t count,
                                     petacomm_node_dtype dtype, void *recv, int root,
                                     petacomm_node_scope scope);

/* ---- RPC to the node's servant ------------------------------------------------------ */
/* A servant function: reads args, writes up to capacity bytes of result and sets *result_bytes;
 * returns PETACOMM_SUCCESS or an error (message through petacomm_node_rpc_fail). */
typedef petacomm_status (*petacomm_node_rpc_fn)(const void *args, int64_t args_bytes, void *result,
                                                int64_t capacity, int64_t *result_bytes,
                                                void *user_data);
/* Registers fn under name on this rank and returns its id. Register the same functions in
 * the same order on every rank (at least on the servants): ids are given in order. */
petacomm_status petacomm_node_rpc_register(petacomm_node node, const char *name,
                                           petacomm_node_rpc_fn fn, void *user_data, int *id);
/* Runs function id on this node's servant with args and waits for its result. */
petacomm_status petacomm_node_rpc_call(petacomm_node node, int id, const void *args,
                                       int64_t args_bytes, void *result, int64_t capacity,
                                       int64_t *result_bytes);
/* Inside a servant function: the error message returned to the caller. */
void petacomm_node_rpc_fail(const char *message);

/* Per-node files through the servant: positional reads and writes by any rank of the node on
 * one file the servant holds open. Opening a path that is open already shares it (TRUNCATE
 * only applies to the first open); the file closes with its last handle.
 * write_at and read_at take bytes [offset, offset + bytes): ERR_ARG naming offset (or bytes)
 * when offset or bytes is negative or offset + bytes exceeds 2^63 - 1 (INT64_MAX, the
 * largest file offset), checked on the calling rank, and when a write goes beyond the
 * largest file the servant's file system (or its RLIMIT_FSIZE) allows (EFBIG). Other I/O
 * failures of the servant are ERR_STATE with the system's message. read_at sets
 * *bytes_read below bytes at the end of the file (0 at or after it). */
enum {
  PETACOMM_NODE_FILE_READ = 1,
  PETACOMM_NODE_FILE_WRITE = 2,
  PETACOMM_NODE_FILE_CREATE = 4,
  PETACOMM_NODE_FILE_TRUNCATE = 8,
};
typedef int64_t petacomm_node_file;
petacomm_status petacomm_node_file_open(petacomm_node node, const char *path, int flags,
                                        petacomm_node_file *file);
petacomm_status petacomm_node_file_write_at(petacomm_node node, petacomm_node_file file,
                                            int64_t offset, const void *buf, int64_t bytes);
petacomm_status petacomm_node_file_read_at(petacomm_node node, petacomm_node_file file,
                                           int64_t offset, void *buf, int64_t bytes,
                                           int64_t *bytes_read);
petacomm_status petacomm_node_file_close(petacomm_node node, petacomm_node_file file);

/* ---- what it costs ------------------------------------------------------------------- */
typedef struct petacomm_node_counters {
  int64_t local_messages, local_bytes;   /* sent by this rank to ranks of its node */
  int64_t remote_messages, remote_bytes; /* sent by this rank to other nodes */
  /* gateway only (zero elsewhere): traffic of the whole node through this gateway */
  int64_t forwarded_messages, forwarded_bytes; /* messages and payload bytes sent to nodes */
  int64_t delivered_messages, delivered_bytes; /* messages and payload bytes from other nodes */
  int64_t mpi_messages_sent, mpi_bytes_sent;   /* MPI messages (batches, heads, fragments) */
  int64_t mpi_messages_received, mpi_bytes_received;
  int64_t rpc_served;       /* RPCs executed for the node */
  int64_t spilled_messages; /* eager messages copied out of their slot unmatched */
} petacomm_node_counters;
petacomm_status petacomm_node_get_counters(petacomm_node node, petacomm_node_counters *counters);

typedef struct petacomm_node_memory {
  int64_t segment_bytes;   /* this rank's share of the node window (slots, descriptors,
                              collective area; on the leader also the heap and rank map) */
  int64_t private_bytes;   /* this rank's private layer state now (queues, requests, batches) */
  int64_t heap_bytes;      /* the node heap (counted in the leader's segment_bytes) */
  int64_t heap_used_bytes; /* allocated from the heap now (servant only; 0 elsewhere) */
  int64_t rank_map_bytes;  /* the node's rank map (in the leader's segment) */
} petacomm_node_memory;
petacomm_status petacomm_node_get_memory(petacomm_node node, petacomm_node_memory *memory);

#ifdef __cplusplus
}
#endif
#endif /* PETACOMM_NODE_H */
