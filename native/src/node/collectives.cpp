#include "collectives.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "buffer.hpp"
#include "error.hpp"
#include "options.hpp"

namespace petacomm::node {

std::int64_t dtype_bytes(petacomm_node_dtype dtype) {
  switch (dtype) {
    case PETACOMM_NODE_BYTE:
      return 1;
    case PETACOMM_NODE_INT32:
    case PETACOMM_NODE_FLOAT32:
      return 4;
    case PETACOMM_NODE_INT64:
    case PETACOMM_NODE_FLOAT64:
      return 8;
  }
  return 0;
}

namespace {

MPI_Datatype mpi_type(petacomm_node_dtype dtype) {
  switch (dtype) {
    case PETACOMM_NODE_INT32:
      return MPI_INT32_T;
    case PETACOMM_NODE_INT64:
      return MPI_INT64_T;
    case PETACOMM_NODE_FLOAT32:
      return MPI_FLOAT;
    case PETACOMM_NODE_FLOAT64:
      return MPI_DOUBLE;
    default:
      return MPI_BYTE;
  }
}

MPI_Op mpi_op(petacomm_node_op op) {
  switch (op) {
    case PETACOMM_NODE_PROD:
      return MPI_PROD;
    case PETACOMM_NODE_MIN:
      return MPI_MIN;
    case PETACOMM_NODE_MAX:
      return MPI_MAX;
    default:
      return MPI_SUM;
  }
}

template <typename T>
void combine_typed(T *acc, const T *in, std::int64_t n, petacomm_node_op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wrap, never overflow
    if (op == PETACOMM_NODE_SUM) {
      for (std::int64_t i = 0; i < n; ++i)
        acc[i] = static_cast<T>(static_cast<U>(acc[i]) + static_cast<U>(in[i]));
      return;
    }
    if (op == PETACOMM_NODE_PROD) {
      for (std::int64_t i = 0; i < n; ++i)
        acc[i] = static_cast<T>(static_cast<U>(acc[i]) * static_cast<U>(in[i]));
      return;
    }
  } else {
    if (op == PETACOMM_NODE_SUM) {
      for (std::int64_t i = 0; i < n; ++i) acc[i] += in[i];
      return;
    }
    if (op == PETACOMM_NODE_PROD) {
      for (std::int64_t i = 0; i < n; ++i) acc[i] *= in[i];
      return;
    }
  }
  if (op == PETACOMM_NODE_MIN) {
    for (std::int64_t i = 0; i < n; ++i) acc[i] = in[i] < acc[i] ? in[i] : acc[i];
  } else {
    for (std::int64_t i = 0; i < n; ++i) acc[i] = acc[i] < in[i] ? in[i] : acc[i];
  }
}

// Round status bits: some rank's argument is bad; the ranks' arguments differ.
constexpr std::int32_t kBadArgument = 1, kArgumentsDiffer = 2;
// Which collective, in the fingerprint of a call's arguments.
enum : std::int64_t { kBarrier = 1, kBcast, kReduce, kAllreduce, kGather };

// "" or the first problem with a collective's element arguments.
std::string check_elements(const char *call, std::int64_t count, petacomm_node_dtype dtype,
                           bool reduction, petacomm_node_op op) {
  const std::int64_t elem = dtype_bytes(dtype);
  if (elem == 0) return concat(call, ": dtype: unknown value ", static_cast<int>(dtype));
  if (reduction && dtype == PETACOMM_NODE_BYTE)
    return concat(call, ": dtype: PETACOMM_NODE_BYTE cannot be reduced");
  if (reduction && (op < PETACOMM_NODE_SUM || op > PETACOMM_NODE_MAX))
    return concat(call, ": op: unknown value ", static_cast<int>(op));
  if (count < 0) return concat(call, ": count: must be >= 0, got ", count);
  if (count > std::numeric_limits<std::int64_t>::max() / elem)
    return concat(call, ": count: ", count, " elements of ", elem, " bytes overflow 64 bits");
  return "";
}

}  // namespace

void combine(void *acc, const void *in, std::int64_t n, petacomm_node_dtype dtype,
             petacomm_node_op op) {
  switch (dtype) {
    case PETACOMM_NODE_INT32:
      combine_typed(static_cast<std::int32_t *>(acc), static_cast<const std::int32_t *>(in), n, op);
      break;
    case PETACOMM_NODE_INT64:
      combine_typed(static_cast<std::int64_t *>(acc), static_cast<const std::int64_t *>(in), n, op);
      break;
    case PETACOMM_NODE_FLOAT32:
      combine_typed(static_cast<float *>(acc), static_cast<const float *>(in), n, op);
      break;
    case PETACOMM_NODE_FLOAT64:
      combine_typed(static_cast<double *>(acc), static_cast<const double *>(in), n, op);
      break;
    default:
      fail_internal("combine on dtype ", static_cast<int>(dtype));
  }
}

Collectives::Collectives(const Domain &domain, Engine &engine, Progressor &progress)
    : domain_(domain), engine_(engine), progress_(progress) {}

// ---- rounds ---------------------------------------------------------------------------

void Collectives::arrive(std::uint64_t s, std::int32_t status) {
  CollControl *c = domain_.coll_control(domain_.local_rank());
  c->status.store(status, std::memory_order_relaxed);
  c->args.store(args_, std::memory_order_relaxed);
  c->arrive.store(s, std::memory_order_release);  // after the area and the status
}

std::int32_t Collectives::await_release(std::uint64_t s) {
  CollControl *leader = domain_.coll_control(0);
  progress_.wait_until([&] { return leader->release.load(std::memory_order_acquire) >= s; });
  // The leader writes its status again only after this rank arrives at a later round.
  return leader->status.load(std::memory_order_relaxed);
}

std::int32_t Collectives::await_arrivals(std::uint64_t s) {
  std::int32_t status = 0;
  for (int l = 1; l < domain_.local_size(); ++l) {
    CollControl *c = domain_.coll_control(l);
    progress_.wait_until([&] { return c->arrive.load(std::memory_order_acquire) >= s; });
    status |= c->status.load(std::memory_order_relaxed);
    if (c->args.load(std::memory_order_relaxed) != args_) status |= kArgumentsDiffer;
  }
  return status;
}

void Collectives::release(std::uint64_t s, std::int32_t status) {
  CollControl *c = domain_.coll_control(0);
  c->status.store(status, std::memory_order_relaxed);
  c->release.store(s, std::memory_order_release);  // after the area and the status
}

void Collectives::wait_mpi(MPI_Request *request) {
  progress_.wait_until([&] {
    int done = 0;
    PETACOMM_CHECK_MPI(MPI_Test(request, &done, MPI_STATUS_IGNORE));
    return done != 0;
  });
}

std::int32_t Collectives::leaders_agree(std::int32_t status) {
  // One MIN reduction: 0 where any node found a bad argument or a difference, and the
  // smallest fingerprint with the complement of the largest (equal exactly when every node's
  // fingerprint is the same).
  const std::uint64_t mine[4] = {(status & kBadArgument) ? 0u : 1u,
                                 (status & kArgumentsDiffer) ? 0u : 1u, args_, ~args_};
  std::uint64_t low[4];
  MPI_Request request;
  PETACOMM_CHECK_MPI(
      MPI_Iallreduce(mine, low, 4, MPI_UINT64_T, MPI_MIN, domain_.leader_comm(), &request));
  wait_mpi(&request);
  return (low[0] == 0 ? kBadArgument : 0) |
         (low[1] == 0 || low[2] != ~low[3] ? kArgumentsDiffer : 0);
}

bool Collectives::across_nodes(petacomm_node_scope scope) const {
  return scope == PETACOMM_NODE_SCOPE_ALL && domain_.nodes() > 1;
}

std::int32_t Collectives::agree(std::int32_t status, petacomm_node_scope scope) {
  const std::uint64_t s = next_step();
  if (!domain_.is_leader()) {
    arrive(s, status);
    return await_release(s);
  }
  status |= await_arrivals(s);
  if (across_nodes(scope)) status = leaders_agree(status);
  release(s, status);
  return status;
}

void Collectives::report(std::int32_t status, const std::string &problem, const char *call) const {
  if (status == 0) return;
  if (!problem.empty()) fail_arg(problem);
  if (status & kBadArgument)
    fail_arg(call, ": invalid arguments on another rank (see its error); no buffer was changed");
  fail_arg(call,
           ": arguments differ between ranks (the call, count, dtype, op, root and scope must "
           "be the same on every rank of the scope); no buffer was changed");
}

void Collectives::wait_request(Request *r) {
  progress_.wait_until([&] { return r->done; });
  const petacomm_status error = r->error;
  const std::string message = r->error_message;
  engine_.release(r);
  if (error != PETACOMM_SUCCESS) fail_internal("collective transfer: ", message);
}

void Collectives::send_to(int rank, const void *data, std::int64_t bytes) {
  wait_request(engine_.post_send(data, bytes, rank, kTagCollective, domain_.rank(), true));
}

void Collectives::recv_from(int rank, void *data, std::int64_t bytes) {
  wait_request(engine_.post_recv(data, bytes, rank, kTagCollective, true));
}

petacomm_node_scope Collectives::checked_scope(const char *call, petacomm_node_scope scope,
                                               std::string *problem) {
  if (scope == PETACOMM_NODE_SCOPE_ALL || scope == PETACOMM_NODE_SCOPE_NODE) return scope;
  // Agreed on in the first round like any other argument: a rank that failed alone here would
  // leave the others waiting in it. The round runs over the whole layer, as most calls do.
  if (problem->empty())
    *problem = concat(call, ": scope: unknown value ", static_cast<int>(scope),
                      " (expected PETACOMM_NODE_SCOPE_ALL or PETACOMM_NODE_SCOPE_NODE)");
  return PETACOMM_NODE_SCOPE_ALL;
}

Collectives::Root Collectives::resolve_root(const char *call, int root, petacomm_node_scope scope,
                                            std::string *problem) const {
  // A bad root is this rank's problem like any other argument's, agreed on in the first
  // round: a rank that failed alone here would leave the others waiting in it. The rounds
  // then go on with local rank 0 of this node as the root, which every rank has.
  const bool node_scope = scope == PETACOMM_NODE_SCOPE_NODE;
  const int ranks = node_scope ? domain_.local_size() : domain_.size();
  if (root < 0 || root >= ranks) {
    if (problem->empty())
      *problem = node_scope ? concat(call, ": root: ", root, " is not a local rank of this node (",
                                     ranks, " ranks)")
                            : concat(call, ": root: ", root, " is not a rank (size ", ranks, ")");
    return {domain_.leader(), domain_.node(), 0, true};
  }
  if (node_scope) return {domain_.rank_of_local(root), domain_.node(), root, true};
  const Location where = domain_.locate(root);
  return {root, where.node, where.local, where.node == domain_.node()};
}

// ---- the collectives --------------------------------------------------------------------

void Collectives::barrier(petacomm_node_scope scope) {
  const char *call = "petacomm_node_barrier";
  std::string problem;
  scope = checked_scope(call, scope, &problem);
  args_ = hash_values({kBarrier, scope});
  report(agree(problem.empty() ? 0 : 1, scope), problem, call);
}

void Collectives::bcast(void *buf, std::int64_t count, petacomm_node_dtype dtype, int root,
                        petacomm_node_scope scope) {
  const char *call = "petacomm_node_bcast";
  std::string problem;
  scope = checked_scope(call, scope, &problem);
  args_ = hash_values({kBcast, count, dtype, root, scope});
  const Root r = resolve_root(call, root, scope, &problem);
  if (problem.empty()) problem = check_elements(call, count, dtype, false, PETACOMM_NODE_SUM);
  if (problem.empty() && buf == nullptr && count > 0) problem = concat(call, ": buf: NULL");
  report(agree(problem.empty() ? 0 : 1, scope), problem, call);
  const std::int64_t bytes = count * dtype_bytes(dtype);
  char *data = static_cast<char *>(buf);
  const bool leader = domain_.is_leader();
  // The root's leader gets the data first.
  if (r.in_my_node && r.local != 0) {
    if (domain_.rank() == r.rank) send_to(domain_.leader(), data, bytes);
    if (leader) recv_from(r.rank, data, bytes);
  }
  const std::int64_t chunk = domain_.geometry().coll_bytes;
  char *area = domain_.coll_data(0);
  for (std::int64_t at = 0; at < bytes; at += chunk) {
    const std::int64_t n = std::min(chunk, bytes - at);
    const std::uint64_t s = next_step();
    if (leader) {
      if (across_nodes(scope)) {
        MPI_Request request;
        PETACOMM_CHECK_MPI(MPI_Ibcast(data + at, static_cast<int>(n), MPI_BYTE, r.node,
                                      domain_.leader_comm(), &request));
        wait_mpi(&request);
      }
      await_arrivals(s);  // everyone has read the previous chunk
      move_host(area, data + at, n);
      release(s, 0);
    } else {
      arrive(s, 0);
      await_release(s);
      if (domain_.rank() != r.rank) move_host(data + at, area, n);
    }
  }
}

void Collectives::reduce(const void *send, void *recv, std::int64_t count,
                         petacomm_node_dtype dtype, petacomm_node_op op, int root,
                         petacomm_node_scope scope, bool all) {
  const char *call = all ? "petacomm_node_allreduce" : "petacomm_node_reduce";
  std::string problem;
  scope = checked_scope(call, scope, &problem);
  args_ = hash_values({all ? kAllreduce : kReduce, count, dtype, op, all ? 0 : root, scope});
  const Root r = all ? Root{0, 0, 0, false} : resolve_root(call, root, scope, &problem);
  const bool is_root = !all && domain_.rank() == r.rank;
  if (problem.empty()) problem = check_elements(call, count, dtype, true, op);
  const std::int64_t elem = problem.empty() ? dtype_bytes(dtype) : 1;
  const std::int64_t bytes = problem.empty() ? count * elem : 0;
  if (problem.empty() && count > 0) {
    const char *s = static_cast<const char *>(send);
    const char *d = static_cast<const char *>(recv);
    if (send == nullptr) {
      problem = concat(call, ": send: NULL");
    } else if ((all || is_root) && recv == nullptr) {
      problem = concat(call, ": recv: NULL");
    } else if ((all || is_root) && s < d + bytes && d < s + bytes) {
      problem = concat(call, ": send and recv overlap (in-place reduction is not supported)");
    }
  }
  const bool leader = domain_.is_leader();
  const bool across = across_nodes(scope);
  // The root's leader keeps the whole result when the root is another rank of its node.
  std::vector<char> for_root;
  if (leader && !all && r.in_my_node && r.local != 0 && problem.empty())
    for_root.resize(static_cast<std::size_t>(bytes));
  const std::int64_t per_chunk = std::max<std::int64_t>(1, domain_.geometry().coll_bytes / elem);
  const std::int64_t chunks = std::max<std::int64_t>(1, (count + per_chunk - 1) / per_chunk);
  char *mine = domain_.coll_data(domain_.local_rank());
  char *area = domain_.coll_data(0);
  for (std::int64_t k = 0; k < chunks; ++k) {
    const std::int64_t first = k * per_chunk;
    const std::int64_t n = problem.empty() ? std::min(per_chunk, count - first) : 0;
    const std::int64_t off = first * elem, nb = n * elem;
    const std::uint64_t s = next_step();
    if (!leader) {
      // Contribution, round status (the first round carries the argument check).
      if (problem.empty()) move_host(mine, static_cast<const char *>(send) + off, nb);
      arrive(s, problem.empty() ? 0 : 1);
      report(await_release(s), problem, call);
      if (all) move_host(static_cast<char *>(recv) + off, area, nb);
      continue;
    }
    std::int32_t status = await_arrivals(s) | (problem.empty() ? 0 : 1);
    if (k == 0 && across) status = leaders_agree(status);
    if (status != 0) {
      release(s, status);
      report(status, problem, call);
    }
    // Local rank order: ((x0 op x1) op x2) op ...
    move_host(area, static_cast<const char *>(send) + off, nb);
    for (int l = 1; l < domain_.local_size(); ++l)
      combine(area, domain_.coll_data(l), n, dtype, op);
    if (across && n > 0) {
      MPI_Request request;
      if (all) {
        PETACOMM_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, area, static_cast<int>(n), mpi_type(dtype),
                                          mpi_op(op), domain_.leader_comm(), &request));
      } else if (r.node == domain_.node()) {
        PETACOMM_CHECK_MPI(MPI_Ireduce(MPI_IN_PLACE, area, static_cast<int>(n), mpi_type(dtype),
                                       mpi_op(op), r.node, domain_.leader_comm(), &request));
      } else {
        PETACOMM_CHECK_MPI(MPI_Ireduce(area, nullptr, static_cast<int>(n), mpi_type(dtype),
                                       mpi_op(op), r.node, domain_.leader_comm(), &request));
      }
      wait_mpi(&request);
    }
    if (all || is_root) move_host(static_cast<char *>(recv) + off, area, nb);
    if (!for_root.empty()) move_host(for_root.data() + off, area, nb);
    release(s, 0);
  }
  if (!all && r.in_my_node && r.local != 0) {
    if (leader) send_to(r.rank, for_root.data(), bytes);
    if (is_root) recv_from(domain_.leader(), recv, bytes);
  }
}

void Collectives::gather(const void *send, std::int64_t count, petacomm_node_dtype dtype,
                         void *recv, int root, petacomm_node_scope scope) {
  const char *call = "petacomm_node_gather";
  std::string problem;
  scope = checked_scope(call, scope, &problem);
  args_ = hash_values({kGather, count, dtype, root, scope});
  const Root r = resolve_root(call, root, scope, &problem);
  const bool is_root = domain_.rank() == r.rank;
  const bool across = across_nodes(scope);
  if (problem.empty()) problem = check_elements(call, count, dtype, false, PETACOMM_NODE_SUM);
  const std::int64_t each = problem.empty() ? count * dtype_bytes(dtype) : 0;
  const int ranks = scope == PETACOMM_NODE_SCOPE_NODE ? domain_.local_size() : domain_.size();
  if (problem.empty() && count > 0) {
    if (send == nullptr) {
      problem = concat(call, ": send: NULL");
    } else if (is_root && recv == nullptr) {
      problem = concat(call, ": recv: NULL");
    } else if (across && each > std::numeric_limits<int>::max()) {
      problem = concat(call, ": count: ", each, " bytes per rank exceed 2^31-1 across nodes");
    } else if (is_root && each > std::numeric_limits<std::int64_t>::max() / ranks) {
      problem = concat(call, ": count: ", ranks, " x ", each, " bytes overflow 64 bits");
    }
  }
  const bool leader = domain_.is_leader();
  const int local_size = domain_.local_size();
  // Where the leader assembles its node's block (local rank order): the root's buffer when
  // the block is the whole answer and the root is the leader itself.
  const bool block_is_answer = !across && r.local == 0 && r.in_my_node;
  std::vector<char> block_storage;
  char *block = nullptr;
  if (leader && problem.empty()) {
    if (block_is_answer && is_root) {
      block = static_cast<char *>(recv);
    } else {
      block_storage.resize(static_cast<std::size_t>(each * local_size));
      block = block_storage.data();
    }
  }
  const std::int64_t chunk = domain_.geometry().coll_bytes;
  const std::int64_t chunks = std::max<std::int64_t>(1, (each + chunk - 1) / chunk);
  char *mine = domain_.coll_data(domain_.local_rank());
  for (std::int64_t k = 0; k < chunks; ++k) {
    const std::int64_t off = k * chunk;
    const std::int64_t n = problem.empty() ? std::min(chunk, each - off) : 0;
    const std::uint64_t s = next_step();
    if (!leader) {
      if (problem.empty()) move_host(mine, static_cast<const char *>(send) + off, n);
      arrive(s, problem.empty() ? 0 : 1);
      report(await_release(s), problem, call);
      continue;
    }
    std::int32_t status = await_arrivals(s) | (problem.empty() ? 0 : 1);
    if (k == 0 && across) status = leaders_agree(status);
    if (status != 0) {
      release(s, status);
      report(status, problem, call);
    }
    move_host(block + off, static_cast<const char *>(send) + off, n);
    for (int l = 1; l < local_size; ++l) move_host(block + l * each + off, domain_.coll_data(l), n);
    release(s, 0);
  }
  if (!across) {
    if (r.local != 0 && r.in_my_node) {
      if (leader) send_to(r.rank, block, each * local_size);
      if (is_root) recv_from(domain_.leader(), recv, each * local_size);
    }
    return;
  }
  // Between nodes: node blocks to the root's leader, then into rank order.
  std::vector<char> gathered, ordered;
  if (leader) {
    const bool root_leader = r.node == domain_.node();
    MPI_Datatype one;
    PETACOMM_CHECK_MPI(MPI_Type_contiguous(static_cast<int>(each), MPI_BYTE, &one));
    PETACOMM_CHECK_MPI(MPI_Type_commit(&one));
    std::vector<int> counts, displs;
    if (root_leader) {
      counts.assign(static_cast<std::size_t>(domain_.nodes()), 0);
      for (int rank = 0; rank < domain_.size(); ++rank) ++counts[domain_.locate(rank).node];
      displs.resize(counts.size());
      for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
      gathered.resize(static_cast<std::size_t>(each * domain_.size()));
    }
    MPI_Request request;
    const int rc =
        MPI_Igatherv(block, each > 0 ? local_size : 0, one, gathered.data(), counts.data(),
                     displs.data(), one, r.node, domain_.leader_comm(), &request);
    if (rc == MPI_SUCCESS) wait_mpi(&request);
    MPI_Type_free(&one);
    PETACOMM_CHECK_MPI(rc);
    if (root_leader) {
      char *out = is_root ? static_cast<char *>(recv) : nullptr;
      if (!is_root) {
        ordered.resize(gathered.size());
        out = ordered.data();
      }
      for (int rank = 0; rank < domain_.size(); ++rank) {
        const Location where = domain_.locate(rank);
        move_host(out + rank * each, gathered.data() + (displs[where.node] + where.local) * each,
                  each);
      }
      if (!is_root) send_to(r.rank, ordered.data(), each * domain_.size());
    }
  } else if (is_root) {
    recv_from(domain_.leader(), recv, each * domain_.size());
  }
}

}  // namespace petacomm::node
