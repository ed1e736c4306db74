// The node layer against MPI and hand-computed references, at every virtual node size
// (whole machine, 1, 2, 3, 4 ranks per node) in one run per rank count:
//   layout      node, local rank, leader of every rank vs an independent split
//   ordering    every pair (self, same node, other nodes): interleaved tags received in
//               another tag order, ANY_TAG, sizes 0 .. several chunks, eager/rendezvous edges
//   buffers     heap receive (put), heap send (pull), private (pipelined), remote fragments
//   flow        a slow receiver with a burst of eager messages, received out of order
//   many        hundreds of outstanding requests to random peers
//   counters    every remote message forwarded and delivered exactly once per gateway
//   collectives barrier, bcast, reduce, allreduce, gather vs MPI, both scopes; the reduce
//               order inside a node bit for bit
//   rpc         per-node file written by every rank through the servant, read back; a user
//               function; heap allocation
//   errors      bad ranks, small buffers, bad collectives on one rank, free with requests
//   memory      segment sizes vs the formula, private state independent of the job size
// Prints "node ok <checks>" on rank 0. With --huge, only a message of more than 2 GiB.
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "petacomm/node.h"

namespace {

int failures = 0;
long checks = 0;
int me = 0, nranks = 1;
int current_k = 0;
const bool verbose = std::getenv("PETACOMM_NODE_TEST_VERBOSE") != nullptr;

void step(const char *what) {
  if (verbose) std::fprintf(stderr, "rank %d node size %d: %s\n", me, current_k, what);
}

#define CHECK(cond, ...)                                                                         \
  do {                                                                                           \
    ++checks;                                                                                    \
    if (!(cond)) {                                                                               \
      if (failures < 30) {                                                                       \
        std::fprintf(stderr, "rank %d (node size %d): %s:%d: CHECK failed: %s: ", me, current_k, \
                     __FILE__, __LINE__, #cond);                                                 \
        std::fprintf(stderr, __VA_ARGS__);                                                       \
        std::fprintf(stderr, "\n");                                                              \
      }                                                                                          \
      ++failures;                                                                                \
    }                                                                                            \
  } while (0)

#define OK(call)                                                                             \
  do {                                                                                       \
    const petacomm_status rc_ = (call);                                                      \
    CHECK(rc_ == PETACOMM_SUCCESS, "%s returned %d: %s", #call, rc_, petacomm_last_error()); \
  } while (0)

// The error must be `status` and the message must contain `text`.
#define FAILS(call, status, text)                                                          \
  do {                                                                                     \
    const petacomm_status rc_ = (call);                                                    \
    CHECK(rc_ == (status) && std::strstr(petacomm_last_error(), text) != nullptr,          \
          "%s returned %d '%s', expected %d with '%s'", #call, rc_, petacomm_last_error(), \
          static_cast<int>(status), text);                                                 \
  } while (0)

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

unsigned char byte_of(std::uint64_t seed, std::int64_t j) {
  return static_cast<unsigned char>(mix(seed) + static_cast<std::uint64_t>(j) * 131);
}

void fill(unsigned char *p, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t j = 0; j < n; ++j) p[j] = byte_of(seed, j);
}

// Index of the first byte that differs from the pattern, or -1.
std::int64_t mismatch(const unsigned char *p, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t j = 0; j < n; ++j)
    if (p[j] != byte_of(seed, j)) return j;
  return -1;
}

std::uint64_t seed_of(int src, int dst, int i, int tag) {
  return (static_cast<std::uint64_t>(src) << 40) ^ (static_cast<std::uint64_t>(dst) << 20) ^
         (static_cast<std::uint64_t>(i) << 4) ^ static_cast<std::uint64_t>(tag);
}

// Independent reference of the node layout: split the shared-memory domain by hand.
struct Reference {
  std::vector<int> node, local, leader_of_node;
  int nodes = 0;
  MPI_Comm node_comm = MPI_COMM_NULL;
};

Reference reference_layout(int k) {
  Reference ref;
  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &shared);
  int srank, ssize;
  MPI_Comm_rank(shared, &srank);
  MPI_Comm_size(shared, &ssize);
  const int kk = k > 0 ? k : ssize;
  MPI_Comm_split(shared, srank / kk, srank, &ref.node_comm);
  MPI_Comm_free(&shared);
  int local;
  MPI_Comm_rank(ref.node_comm, &local);
  std::vector<int> is_leader(static_cast<std::size_t>(nranks));
  const int mine = local == 0 ? 1 : 0;
  MPI_Allgather(&mine, 1, MPI_INT, is_leader.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < nranks; ++r)
    if (is_leader[r]) ref.leader_of_node.push_back(r);
  ref.nodes = static_cast<int>(ref.leader_of_node.size());
  int leader_rank = me;
  MPI_Bcast(&leader_rank, 1, MPI_INT, 0, ref.node_comm);
  const int node_index = static_cast<int>(
      std::lower_bound(ref.leader_of_node.begin(), ref.leader_of_node.end(), leader_rank) -
      ref.leader_of_node.begin());
  ref.node.resize(static_cast<std::size_t>(nranks));
  ref.local.resize(static_cast<std::size_t>(nranks));
  MPI_Allgather(&node_index, 1, MPI_INT, ref.node.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Allgather(&local, 1, MPI_INT, ref.local.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return ref;
}

petacomm_node_options small_options(int k) {
  petacomm_node_options o;
  petacomm_node_options_default(&o);
  o.node_size = k;
  o.slots = 4;          // flow control and spilling happen often
  o.slot_bytes = 256;   // eager up to 192 bytes, so rendezvous paths run on small data
  o.descriptors = 2;    // descriptor rings fill up
  o.coll_bytes = 1024;  // collectives take several chunks
  o.heap_bytes = 8 << 20;
  o.aggregate_bytes = 1024;  // batches split
  o.max_mpi_bytes = 4096;    // large remote messages travel as several fragments
  return o;
}

// ---- cases ---------------------------------------------------------------------------

void check_layout(petacomm_node node, const Reference &ref, int k) {
  petacomm_node_layout l;
  OK(petacomm_node_get_layout(node, &l));
  CHECK(l.rank == me && l.size == nranks, "rank %d size %d", l.rank, l.size);
  CHECK(l.node == ref.node[me] && l.nodes == ref.nodes, "node %d/%d, expected %d/%d", l.node,
        l.nodes, ref.node[me], ref.nodes);
  CHECK(l.local_rank == ref.local[me], "local %d, expected %d", l.local_rank, ref.local[me]);
  CHECK(l.leader == ref.leader_of_node[ref.node[me]], "leader %d", l.leader);
  CHECK(l.node_size == k, "node_size %d", l.node_size);
  for (int r = 0; r < nranks; ++r) {
    int n = -1, loc = -1;
    OK(petacomm_node_locate(node, r, &n, &loc));
    CHECK(n == ref.node[r] && loc == ref.local[r], "locate(%d) = %d/%d", r, n, loc);
  }
  for (int n = 0; n < ref.nodes; ++n) {
    int leader = -1;
    OK(petacomm_node_leader_of(node, n, &leader));
    CHECK(leader == ref.leader_of_node[n], "leader_of(%d) = %d", n, leader);
  }
  MPI_Comm nc, lc;
  OK(petacomm_node_comms(node, &nc, &lc));
  int ns, nr;
  MPI_Comm_size(nc, &ns);
  MPI_Comm_rank(nc, &nr);
  CHECK(ns == l.local_size && nr == l.local_rank, "node comm %d/%d", nr, ns);
  CHECK((lc != MPI_COMM_NULL) == (l.local_rank == 0), "leader comm on local rank %d", nr);
  if (lc != MPI_COMM_NULL) {
    int ls, lr;
    MPI_Comm_size(lc, &ls);
    MPI_Comm_rank(lc, &lr);
    CHECK(ls == ref.nodes && lr == l.node, "leader comm %d/%d", lr, ls);
  }
}

// Every rank sends `per` messages to every rank, tags alternating 0/1/2, sizes cycling
// through `sizes`; receivers take tag 2 first, then tag 1, then tag 0 with ANY_TAG (which
// must yield them in send order), every source in turn.
void check_ordering(petacomm_node node, const std::vector<std::int64_t> &sizes, int per,
                    bool heap_recv, bool heap_send) {
  std::vector<std::vector<unsigned char>> sendbufs;
  std::vector<unsigned char *> heap_blocks;
  std::vector<petacomm_node_request> reqs;
  auto size_of = [&](int src, int dst, int i) {
    return sizes[static_cast<std::size_t>(src + 3 * dst + i) % sizes.size()];
  };
  auto buffer = [&](std::int64_t n, bool heap) -> unsigned char * {
    if (heap) {
      void *p = nullptr;
      OK(petacomm_node_alloc(node, n, &p));
      heap_blocks.push_back(static_cast<unsigned char *>(p));
      return static_cast<unsigned char *>(p);
    }
    sendbufs.emplace_back(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
    return sendbufs.back().data();
  };
  sendbufs.reserve(static_cast<std::size_t>(nranks * per * 2 + 8));
  for (int d = 0; d < nranks; ++d) {
    const int dst = (me + d) % nranks;
    for (int i = 0; i < per; ++i) {
      const int tag = i % 3;
      const std::int64_t n = size_of(me, dst, i);
      unsigned char *b = buffer(n, heap_send);
      fill(b, n, seed_of(me, dst, i, tag));
      petacomm_node_request r;
      OK(petacomm_node_isend(node, b, n, dst, tag, &r));
      reqs.push_back(r);
    }
  }
  struct Expect {
    int src, i, tag;
    std::int64_t n;
    unsigned char *buf;
  };
  std::vector<Expect> expect;
  std::vector<petacomm_node_request> rreqs;
  for (int want : {2, 1, PETACOMM_NODE_ANY_TAG}) {
    for (int s = 0; s < nranks; ++s) {
      const int src = (me + nranks - s) % nranks;
      for (int i = 0; i < per; ++i) {
        const int tag = i % 3;
        if ((want >= 0 && tag != want) || (want < 0 && tag != 0)) continue;
        const std::int64_t n = size_of(src, me, i);
        unsigned char *b = buffer(n + 5, heap_recv);  // capacity larger than the message
        std::memset(b, 0xee, static_cast<std::size_t>(n + 5));
        petacomm_node_request r;
        OK(petacomm_node_irecv(node, b, n + 5, src, want, &r));
        rreqs.push_back(r);
        expect.push_back({src, i, tag, n, b});
      }
    }
  }
  std::vector<petacomm_node_status> st(rreqs.size());
  OK(petacomm_node_waitall(node, static_cast<int>(rreqs.size()), rreqs.data(), st.data()));
  OK(petacomm_node_waitall(node, static_cast<int>(reqs.size()), reqs.data(), nullptr));
  for (std::size_t e = 0; e < expect.size(); ++e) {
    const Expect &x = expect[e];
    CHECK(st[e].source == x.src && st[e].tag == x.tag && st[e].bytes == x.n,
          "message %d from %d: status %d/%d/%lld, expected tag %d, %lld bytes", x.i, x.src,
          st[e].source, st[e].tag, static_cast<long long>(st[e].bytes), x.tag,
          static_cast<long long>(x.n));
    const std::int64_t bad = mismatch(x.buf, x.n, seed_of(x.src, me, x.i, x.tag));
    CHECK(bad < 0, "message %d (tag %d, %lld bytes) from %d differs at byte %lld", x.i, x.tag,
          static_cast<long long>(x.n), x.src, static_cast<long long>(bad));
    CHECK(x.buf[x.n] == 0xee, "byte past message %d from %d written", x.i, x.src);
  }
  for (unsigned char *b : heap_blocks) OK(petacomm_node_dealloc(node, b));
}

// A burst of eager messages to a receiver that sleeps first and then takes them in reverse
// order (every message is held while later ones arrive: the sender must stall, the receiver
// must spill, nothing may be overwritten).
void check_flow_control(petacomm_node node, int slots) {
  if (nranks < 2) return;
  const int burst = 40;
  const int receiver = 1, sender = 0;
  petacomm_node_counters before, after;
  OK(petacomm_node_get_counters(node, &before));
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_ALL));  // no burst before this
  if (me == sender) {
    std::vector<std::vector<unsigned char>> bufs(burst, std::vector<unsigned char>(100));
    std::vector<petacomm_node_request> reqs(burst);
    for (int i = 0; i < burst; ++i) {
      fill(bufs[i].data(), 100, seed_of(sender, receiver, i, i));
      OK(petacomm_node_isend(node, bufs[i].data(), 100, receiver, i, &reqs[i]));
    }
    OK(petacomm_node_waitall(node, burst, reqs.data(), nullptr));
  } else if (me == receiver) {
    usleep(30000);  // slow receiver
    for (int i = burst - 1; i >= 0; --i) {
      unsigned char b[100];
      petacomm_node_status st;
      OK(petacomm_node_recv(node, b, sizeof b, sender, i, &st));
      CHECK(st.tag == i && st.bytes == 100 && mismatch(b, 100, seed_of(sender, receiver, i, i)) < 0,
            "burst message %d corrupted (tag %d)", i, st.tag);
    }
    // On one node the sender stalled on the slots, and the receiver copied out (spilled)
    // exactly the messages whose slots the sender wanted back: all but the last `slots`.
    int node0 = -1, node1 = -2;
    OK(petacomm_node_locate(node, sender, &node0, nullptr));
    OK(petacomm_node_locate(node, receiver, &node1, nullptr));
    OK(petacomm_node_get_counters(node, &after));
    if (node0 == node1)
      CHECK(after.spilled_messages - before.spilled_messages == burst - slots,
            "%lld messages spilled, expected %d",
            static_cast<long long>(after.spilled_messages - before.spilled_messages),
            burst - slots);
  }
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_ALL));
}

// Hundreds of requests in flight to pseudo-random peers, completed with test in a loop.
void check_many(petacomm_node node) {
  const int per = 120;
  std::vector<int> to(per);
  std::vector<int> counts(static_cast<std::size_t>(nranks) * nranks, 0);
  for (int r = 0; r < nranks; ++r)
    for (int i = 0; i < per; ++i) {
      const int dst = static_cast<int>(mix(static_cast<std::uint64_t>(r) * 7919 + i) % nranks);
      if (r == me) to[i] = dst;
      ++counts[static_cast<std::size_t>(r) * nranks + dst];
    }
  std::vector<std::int64_t> vals(per), got;
  std::vector<petacomm_node_request> reqs;
  for (int i = 0; i < per; ++i) {
    vals[i] = static_cast<std::int64_t>(mix(static_cast<std::uint64_t>(me) << 20 | i));
    petacomm_node_request r;
    OK(petacomm_node_isend(node, &vals[i], 8, to[i], 7, &r));
    reqs.push_back(r);
  }
  int incoming = 0;
  for (int r = 0; r < nranks; ++r) incoming += counts[static_cast<std::size_t>(r) * nranks + me];
  got.resize(static_cast<std::size_t>(incoming));
  std::vector<int> from;
  for (int r = 0; r < nranks; ++r)
    for (int c = 0; c < counts[static_cast<std::size_t>(r) * nranks + me]; ++c) {
      petacomm_node_request q;
      OK(petacomm_node_irecv(node, &got[from.size()], 8, r, 7, &q));
      from.push_back(r);
      reqs.push_back(q);
    }
  // Complete everything with test only.
  std::size_t left = reqs.size();
  while (left > 0) {
    for (auto &q : reqs) {
      if (q == nullptr) continue;
      int done = 0;
      const petacomm_status rc = petacomm_node_test(node, &q, &done, nullptr);
      if (rc != PETACOMM_SUCCESS) {
        CHECK(false, "test: %d %s", rc, petacomm_last_error());
        q = nullptr;  // give up on this one
      }
      if (done || rc != PETACOMM_SUCCESS) --left;
    }
  }
  // Messages from r arrive in r's send order among those sent to me.
  std::vector<int> next(static_cast<std::size_t>(nranks), 0);
  for (std::size_t k = 0; k < from.size(); ++k) {
    const int r = from[k];
    int i = next[r];
    while (static_cast<int>(mix(static_cast<std::uint64_t>(r) * 7919 + i) % nranks) != me) ++i;
    next[r] = i + 1;
    const auto want = static_cast<std::int64_t>(mix(static_cast<std::uint64_t>(r) << 20 | i));
    CHECK(got[k] == want, "message %d from %d: %lld", i, r, static_cast<long long>(got[k]));
  }
}

// Every remote message sent by a node's ranks goes out through its gateway once and is
// delivered by the destination's gateway once.
void check_counters(petacomm_node node, const Reference &ref,
                    const petacomm_node_counters &before) {
  // A gateway blocked in plain MPI cannot forward: the layer's barrier first (it progresses).
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_ALL));
  petacomm_node_counters c;
  OK(petacomm_node_get_counters(node, &c));
  const std::int64_t mine[4] = {c.remote_messages - before.remote_messages,
                                c.remote_bytes - before.remote_bytes,
                                c.forwarded_messages - before.forwarded_messages,
                                c.delivered_messages - before.delivered_messages};
  std::vector<std::int64_t> all(static_cast<std::size_t>(nranks) * 4);
  MPI_Allgather(mine, 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, MPI_COMM_WORLD);
  std::int64_t node_remote = 0, forwarded = 0, delivered = 0;
  for (int r = 0; r < nranks; ++r) {
    if (ref.node[r] == ref.node[me]) node_remote += all[r * 4];
    forwarded += all[r * 4 + 2];
    delivered += all[r * 4 + 3];
    if (ref.local[r] != 0)
      CHECK(all[r * 4 + 2] == 0 && all[r * 4 + 3] == 0, "rank %d is no gateway but counted", r);
  }
  if (ref.local[me] == 0)
    CHECK(mine[2] == node_remote, "gateway forwarded %lld, its node sent %lld remote messages",
          static_cast<long long>(mine[2]), static_cast<long long>(node_remote));
  CHECK(forwarded == delivered, "forwarded %lld, delivered %lld", static_cast<long long>(forwarded),
        static_cast<long long>(delivered));
  if (ref.nodes == 1)
    CHECK(forwarded == 0, "one node but %lld forwarded", static_cast<long long>(forwarded));
}

template <typename T>
MPI_Datatype mpi_of();
template <>
MPI_Datatype mpi_of<std::int32_t>() {
  return MPI_INT32_T;
}
template <>
MPI_Datatype mpi_of<std::int64_t>() {
  return MPI_INT64_T;
}
template <>
MPI_Datatype mpi_of<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_of<double>() {
  return MPI_DOUBLE;
}

template <typename T>
petacomm_node_dtype dtype_of();
template <>
petacomm_node_dtype dtype_of<std::int32_t>() {
  return PETACOMM_NODE_INT32;
}
template <>
petacomm_node_dtype dtype_of<std::int64_t>() {
  return PETACOMM_NODE_INT64;
}
template <>
petacomm_node_dtype dtype_of<float>() {
  return PETACOMM_NODE_FLOAT32;
}
template <>
petacomm_node_dtype dtype_of<double>() {
  return PETACOMM_NODE_FLOAT64;
}

// Values whose sums and products are exact in every order (so MPI's order does not matter).
template <typename T>
std::vector<T> exact_values(std::int64_t n, int rank, petacomm_node_op op) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t h = mix(static_cast<std::uint64_t>(rank) * 1000003 + i);
    if (op == PETACOMM_NODE_PROD) {
      v[i] = static_cast<T>(h % 3 == 0 ? 2 : 1) * (h % 7 == 0 ? T(-1) : T(1));
    } else if constexpr (std::is_integral_v<T>) {
      v[i] = static_cast<T>(static_cast<std::int64_t>(h >> 1));  // sums wrap
    } else {
      v[i] = static_cast<T>(static_cast<std::int64_t>(h % 2001) - 1000);
    }
  }
  return v;
}

const petacomm_node_op kOps[] = {PETACOMM_NODE_SUM, PETACOMM_NODE_PROD, PETACOMM_NODE_MIN,
                                 PETACOMM_NODE_MAX};
MPI_Op mpi_op_of(petacomm_node_op op) {
  return op == PETACOMM_NODE_SUM    ? MPI_SUM
         : op == PETACOMM_NODE_PROD ? MPI_PROD
         : op == PETACOMM_NODE_MIN  ? MPI_MIN
                                    : MPI_MAX;
}

template <typename T>
void check_reductions(petacomm_node node, const Reference &ref, std::int64_t count) {
  for (const petacomm_node_op op : kOps) {
    const std::vector<T> in = exact_values<T>(count, me, op);
    std::vector<T> out(static_cast<std::size_t>(count) + 1), want(out.size());
    for (const petacomm_node_scope scope : {PETACOMM_NODE_SCOPE_ALL, PETACOMM_NODE_SCOPE_NODE}) {
      MPI_Comm comm = scope == PETACOMM_NODE_SCOPE_ALL ? MPI_COMM_WORLD : ref.node_comm;
      int crank, csize;
      MPI_Comm_rank(comm, &crank);
      MPI_Comm_size(comm, &csize);
      MPI_Allreduce(in.data(), want.data(), static_cast<int>(count), mpi_of<T>(), mpi_op_of(op),
                    comm);
      out.assign(out.size(), T(7));
      OK(petacomm_node_allreduce(node, in.data(), out.data(), count, dtype_of<T>(), op, scope));
      CHECK(std::equal(out.begin(), out.begin() + count, want.begin()) && out[count] == T(7),
            "allreduce op %d scope %d count %lld differs from MPI", op, scope,
            static_cast<long long>(count));
      const int root = (csize - 1) / 2 + (count % 2);
      const int root_here = std::min(root, csize - 1);
      MPI_Reduce(in.data(), want.data(), static_cast<int>(count), mpi_of<T>(), mpi_op_of(op),
                 root_here, comm);
      out.assign(out.size(), T(7));
      OK(petacomm_node_reduce(node, in.data(), crank == root_here ? out.data() : nullptr, count,
                              dtype_of<T>(), op, root_here, scope));
      if (crank == root_here)
        CHECK(std::equal(out.begin(), out.begin() + count, want.begin()) && out[count] == T(7),
              "reduce op %d scope %d root %d differs from MPI", op, scope, root_here);
    }
  }
}

void check_collectives(petacomm_node node, const Reference &ref) {
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_ALL));
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_NODE));
  for (const std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{300}}) {
    check_reductions<std::int32_t>(node, ref, count);
    check_reductions<std::int64_t>(node, ref, count);
    check_reductions<float>(node, ref, count);
    check_reductions<double>(node, ref, count);
  }
  // bcast and gather from several roots, sizes across chunk boundaries
  for (const petacomm_node_scope scope : {PETACOMM_NODE_SCOPE_ALL, PETACOMM_NODE_SCOPE_NODE}) {
    MPI_Comm comm = scope == PETACOMM_NODE_SCOPE_ALL ? MPI_COMM_WORLD : ref.node_comm;
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    for (const std::int64_t bytes : {std::int64_t{0}, std::int64_t{5}, std::int64_t{2500}}) {
      for (int root = 0; root < csize; root += std::max(1, csize / 3)) {
        std::vector<unsigned char> b(static_cast<std::size_t>(bytes) + 1, 0x11);
        if (crank == root) fill(b.data(), bytes, 99 + root);
        OK(petacomm_node_bcast(node, b.data(), bytes, PETACOMM_NODE_BYTE, root, scope));
        CHECK(mismatch(b.data(), bytes, 99 + root) < 0 && b[bytes] == 0x11,
              "bcast root %d scope %d %lld bytes", root, scope, static_cast<long long>(bytes));
        std::vector<double> mine(static_cast<std::size_t>(bytes / 8 + 1));
        for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = me * 1000.0 + i;
        const int cnt = static_cast<int>(mine.size());
        std::vector<double> got(static_cast<std::size_t>(cnt) * csize + 1, -1), want(got.size());
        MPI_Gather(mine.data(), cnt, MPI_DOUBLE, want.data(), cnt, MPI_DOUBLE, root, comm);
        OK(petacomm_node_gather(node, mine.data(), cnt, PETACOMM_NODE_FLOAT64,
                                crank == root ? got.data() : nullptr, root, scope));
        if (crank == root)
          CHECK(std::equal(got.begin(), got.end() - 1, want.begin()) && got.back() == -1,
                "gather root %d scope %d count %d differs from MPI", root, scope, cnt);
      }
    }
  }
  // Inside a node, floats are combined in local rank order: ((x0 + x1) + x2) + ... The
  // values are chosen (the same on every rank) so that this order differs bitwise from the
  // reverse order and from summing the leader last.
  int lsize, lrank;
  MPI_Comm_size(ref.node_comm, &lsize);
  MPI_Comm_rank(ref.node_comm, &lrank);
  auto value = [](std::uint64_t t, int l, int i) {
    const std::uint64_t h = mix(t * 1000003 + static_cast<std::uint64_t>(l) * 31 + i);
    return std::ldexp(1.0 + static_cast<double>(h % 1000003) / 1000003.0,
                      static_cast<int>(h % 61) - 30) *
           (h & 64 ? -1 : 1);
  };
  auto fold = [&](std::uint64_t t, int i, const std::vector<int> &order) {
    double acc = value(t, order[0], i);
    for (std::size_t k = 1; k < order.size(); ++k) acc += value(t, order[k], i);
    return acc;
  };
  std::vector<int> forward(static_cast<std::size_t>(lsize)), backward, leader_last;
  std::iota(forward.begin(), forward.end(), 0);
  backward.assign(forward.rbegin(), forward.rend());
  leader_last.assign(forward.begin() + 1, forward.end());
  leader_last.push_back(0);
  std::uint64_t t = 0;
  while (lsize >= 3 && t < 1000 &&
         (fold(t, 0, forward) == fold(t, 0, backward) ||
          fold(t, 0, forward) == fold(t, 0, leader_last)))
    ++t;
  std::vector<double> x(3), want(3), got(3);
  for (int i = 0; i < 3; ++i) {
    x[i] = value(t, lrank, i);
    want[i] = fold(t, i, forward);
  }
  OK(petacomm_node_allreduce(node, x.data(), got.data(), 3, PETACOMM_NODE_FLOAT64,
                             PETACOMM_NODE_SUM, PETACOMM_NODE_SCOPE_NODE));
  CHECK(std::memcmp(got.data(), want.data(), sizeof(double) * 3) == 0,
        "node allreduce order: %.17g vs %.17g (local rank order)", got[0], want[0]);
  double root_got = 0;
  OK(petacomm_node_reduce(node, x.data(), lrank == lsize - 1 ? &root_got : nullptr, 1,
                          PETACOMM_NODE_FLOAT64, PETACOMM_NODE_SUM, lsize - 1,
                          PETACOMM_NODE_SCOPE_NODE));
  if (lrank == lsize - 1)
    CHECK(std::memcmp(&root_got, &want[0], sizeof(double)) == 0,
          "node reduce order: %.17g vs %.17g", root_got, want[0]);
}

petacomm_status sum_function(const void *args, std::int64_t args_bytes, void *result,
                             std::int64_t capacity, std::int64_t *result_bytes, void *user) {
  const auto *v = static_cast<const std::int64_t *>(args);
  if (args_bytes % 8 != 0 || capacity < 16) {
    petacomm_node_rpc_fail("sum: arguments must be int64 and the result 16 bytes");
    return PETACOMM_ERR_ARG;
  }
  std::int64_t s = 0;
  for (std::int64_t i = 0; i < args_bytes / 8; ++i) s += v[i];
  std::int64_t out[2] = {s, *static_cast<std::int64_t *>(user)};
  std::memcpy(result, out, sizeof out);
  *result_bytes = sizeof out;
  return PETACOMM_SUCCESS;
}

void check_rpc(petacomm_node node, const Reference &ref, const std::string &dir) {
  // Every rank writes its block of the node's file through the servant.
  petacomm_node_layout l;
  petacomm_node_get_layout(node, &l);
  const std::string path = dir + "/node" + std::to_string(l.node) + ".dat";
  const std::int64_t block = 3000 + 17;  // a rendezvous-sized bulk
  petacomm_node_file f = -1;
  OK(petacomm_node_file_open(node, path.c_str(),
                             PETACOMM_NODE_FILE_READ | PETACOMM_NODE_FILE_WRITE |
                                 PETACOMM_NODE_FILE_CREATE | PETACOMM_NODE_FILE_TRUNCATE,
                             &f));
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_NODE));  // every rank has it open
  std::vector<unsigned char> mine(static_cast<std::size_t>(block));
  fill(mine.data(), block, 555 + me);
  OK(petacomm_node_file_write_at(node, f, l.local_rank * block, mine.data(), block));
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_NODE));
  // Read a neighbour's block back through the servant.
  const int other = (l.local_rank + 1) % l.local_size;
  std::vector<unsigned char> back(static_cast<std::size_t>(block) + 8, 0);
  std::int64_t got = -1;
  OK(petacomm_node_file_read_at(node, f, other * block, back.data(), block + 8, &got));
  int other_rank = -1;
  for (int r = 0; r < nranks; ++r)
    if (ref.node[r] == l.node && ref.local[r] == other) other_rank = r;
  CHECK(got == (other == l.local_size - 1 ? block : block + 8) &&
            mismatch(back.data(), block, 555 + other_rank) < 0,
        "read back %lld bytes of local rank %d", static_cast<long long>(got), other);
  // Ranges [offset, offset + bytes) beyond the largest file offset, 2^63 - 1, are refused
  // naming offset on the calling rank (the servant's pwrite and pread failed with EINVAL:
  // ERR_STATE); zero bytes at 2^63 - 1 fit. The file keeps its size (checked below).
  FAILS(petacomm_node_file_write_at(node, f, INT64_MAX, mine.data(), 1), PETACOMM_ERR_ARG,
        "offset: 9223372036854775807 + 1 bytes");
  FAILS(petacomm_node_file_write_at(node, f, INT64_MAX - 5, mine.data(), 16), PETACOMM_ERR_ARG,
        "offset: 9223372036854775802 + 16 bytes");
  FAILS(petacomm_node_file_read_at(node, f, INT64_MAX, back.data(), 8, &got), PETACOMM_ERR_ARG,
        "offset: 9223372036854775807 + 8 bytes");
  FAILS(petacomm_node_file_read_at(node, f, INT64_MAX - 5, back.data(), 16, &got), PETACOMM_ERR_ARG,
        "offset: 9223372036854775802 + 16 bytes");
  FAILS(petacomm_node_file_write_at(node, f, -1, mine.data(), 1), PETACOMM_ERR_ARG,
        "offset: must be >= 0, got -1");
  FAILS(petacomm_node_file_read_at(node, f, -1, back.data(), 1, &got), PETACOMM_ERR_ARG,
        "offset: must be >= 0, got -1");
  OK(petacomm_node_file_write_at(node, f, INT64_MAX, mine.data(), 0));
  // A write beyond the largest file allowed (EFBIG: the file system's limit, here the
  // servant's own RLIMIT_FSIZE, the same on every file system) names offset too (it was
  // ERR_STATE). Only the servant calls: its call runs in its own process.
  if (l.local_rank == 0) {
    rlimit old{}, small{};
    getrlimit(RLIMIT_FSIZE, &old);
    small = old;
    small.rlim_cur = std::min<rlim_t>(old.rlim_max, 1 << 20);
    void (*handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    const petacomm_status rc = petacomm_node_file_write_at(node, f, 1 << 21, mine.data(), 8);
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, handler);
    CHECK(rc == PETACOMM_ERR_ARG &&
              std::strstr(petacomm_last_error(), "offset: writing 8 bytes at offset 2097152"),
          "write beyond RLIMIT_FSIZE returned %d '%s'", rc, petacomm_last_error());
  }
  OK(petacomm_node_file_close(node, f));
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_NODE));
  if (l.local_rank == 0) {  // the file on disk, read independently
    std::ifstream in(path, std::ios::binary);
    std::vector<unsigned char> disk((std::istreambuf_iterator<char>(in)), {});
    CHECK(static_cast<std::int64_t>(disk.size()) == block * l.local_size, "file %s has %zu bytes",
          path.c_str(), disk.size());
    for (int r = 0; r < nranks && disk.size() == static_cast<std::size_t>(block * l.local_size);
         ++r)
      if (ref.node[r] == l.node)
        CHECK(mismatch(disk.data() + ref.local[r] * block, block, 555 + r) < 0,
              "block of rank %d in %s", r, path.c_str());
    std::remove(path.c_str());
  }
  // A user function on the servant.
  std::int64_t marker = 4242;
  int id = -1;
  OK(petacomm_node_rpc_register(node, "sum", sum_function, &marker, &id));
  std::vector<std::int64_t> args(50);
  std::iota(args.begin(), args.end(), me);
  std::int64_t result[2] = {0, 0}, produced = 0;
  OK(petacomm_node_rpc_call(node, id, args.data(), 400, result, sizeof result, &produced));
  CHECK(produced == 16 && result[0] == 50 * me + 1225 && result[1] == 4242, "rpc sum %lld %lld",
        static_cast<long long>(result[0]), static_cast<long long>(result[1]));
  FAILS(petacomm_node_rpc_call(node, id, args.data(), 4, result, sizeof result, &produced),
        PETACOMM_ERR_ARG, "sum: arguments must be int64");
  FAILS(petacomm_node_rpc_call(node, id + 5, nullptr, 0, nullptr, 0, nullptr), PETACOMM_ERR_ARG,
        "not an RPC function registered on the servant");
  FAILS(petacomm_node_file_write_at(node, 987654, 0, args.data(), 8), PETACOMM_ERR_ARG,
        "987654 is not an open file");
  FAILS(petacomm_node_file_open(node, "/nonexistent-dir/x", PETACOMM_NODE_FILE_READ, &f),
        PETACOMM_ERR_ARG, "cannot open '/nonexistent-dir/x'");
  // An ANY_TAG receive from the servant, posted before an RPC and a collective whose
  // replies come from the servant, must get only the servant's user message.
  std::int64_t user_value = -1;
  petacomm_node_request pending = nullptr;
  if (l.local_rank != 0)
    OK(petacomm_node_irecv(node, &user_value, 8, l.leader, PETACOMM_NODE_ANY_TAG, &pending));
  void *q = nullptr;
  OK(petacomm_node_alloc(node, 64, &q));
  OK(petacomm_node_dealloc(node, q));
  std::int64_t one = 1, total = 0;
  OK(petacomm_node_reduce(node, &one, &total, 1, PETACOMM_NODE_INT64, PETACOMM_NODE_SUM,
                          l.local_size - 1, PETACOMM_NODE_SCOPE_NODE));
  if (l.local_rank == l.local_size - 1)
    CHECK(total == l.local_size, "node reduce %lld", static_cast<long long>(total));
  if (l.local_rank == 0) {
    for (int r = 0; r < nranks; ++r) {
      const std::int64_t v = 9000 + ref.local[r];
      if (ref.node[r] == l.node && ref.local[r] != 0) OK(petacomm_node_send(node, &v, 8, r, 12));
    }
  } else {
    petacomm_node_status st;
    OK(petacomm_node_wait(node, &pending, &st));
    CHECK(user_value == 9000 + l.local_rank && st.tag == 12, "ANY_TAG receive got %lld tag %d",
          static_cast<long long>(user_value), st.tag);
  }
  // Heap memory: allocation by RPC, visible to the whole node at the same offset.
  void *p = nullptr;
  OK(petacomm_node_alloc(node, 1000, &p));
  std::int64_t off = -1;
  OK(petacomm_node_heap_offset(node, p, &off));
  petacomm_node_memory_space space;
  OK(petacomm_node_memory_space_of(node, p, 1000, &space));
  CHECK(space == PETACOMM_NODE_HOST_WINDOW && off % 64 == 0, "heap block at %lld",
        static_cast<long long>(off));
  OK(petacomm_node_memory_space_of(node, args.data(), 8, &space));
  CHECK(space == PETACOMM_NODE_HOST_PRIVATE, "private memory classified %d", space);
  OK(petacomm_node_dealloc(node, p));
  // A second free is refused, checked by one rank while the others do not allocate (the
  // heap is the node's: a freed offset may be handed to another rank at once).
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_NODE));
  if (l.local_rank == 0)
    FAILS(petacomm_node_dealloc(node, p), PETACOMM_ERR_ARG,
          "is not a block from petacomm_node_alloc");
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_NODE));
  FAILS(petacomm_node_alloc(node, std::int64_t{1} << 40, &p), PETACOMM_ERR_NOMEM,
        "the node heap has no free block");
  // INT64_MAX bytes (rounding it up to 64 overflowed: the call succeeded and wrecked the
  // heap, whose next allocation found no free block at all).
  FAILS(petacomm_node_alloc(node, INT64_MAX, &p), PETACOMM_ERR_NOMEM,
        "bytes: the node heap has no free block of 9223372036854775807 bytes");
  OK(petacomm_node_alloc(node, 64, &p));
  OK(petacomm_node_dealloc(node, p));
  OK(petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_ALL));
}

// Probe sees a message (source, tag, length) without receiving it; iprobe does not block
// and does not match other tags; the message is then received with the length probed.
void check_probe(petacomm_node node) {
  const int to = (me + 1) % nranks, from = (me + nranks - 1) % nranks;
  const std::int64_t n = 300 + 1000 * (me % 3);  // eager or rendezvous
  std::vector<unsigned char> out(static_cast<std::size_t>(n));
  fill(out.data(), n, seed_of(me, to, 0, 21));
  petacomm_node_request s;
  OK(petacomm_node_isend(node, out.data(), n, to, 21, &s));
  petacomm_node_status st;
  int found = 1;
  OK(petacomm_node_iprobe(node, from, 22, &found, &st));
  CHECK(found == 0, "iprobe matched tag 22");
  OK(petacomm_node_probe(node, from, PETACOMM_NODE_ANY_TAG, &st));
  const std::int64_t want = 300 + 1000 * (from % 3);
  CHECK(st.source == from && st.tag == 21 && st.bytes == want, "probe: %d %d %lld", st.source,
        st.tag, static_cast<long long>(st.bytes));
  OK(petacomm_node_iprobe(node, from, 21, &found, &st));
  CHECK(found == 1 && st.bytes == want, "iprobe after probe: %d", found);
  std::vector<unsigned char> in(static_cast<std::size_t>(st.bytes));
  OK(petacomm_node_recv(node, in.data(), st.bytes, from, 21, &st));
  CHECK(mismatch(in.data(), want, seed_of(from, me, 0, 21)) < 0, "probed message corrupted");
  OK(petacomm_node_wait(node, &s, nullptr));
  OK(petacomm_node_iprobe(node, from, 21, &found, &st));
  CHECK(found == 0, "message still probed after its receive");
}

void check_errors(petacomm_node node) {
  char buf[64];
  petacomm_node_request r = nullptr;
  FAILS(petacomm_node_irecv(node, buf, 64, nranks, 0, &r), PETACOMM_ERR_ARG,
        "is not a rank of the layer's communicator");
  FAILS(petacomm_node_recv(node, buf, 64, -1, 0, nullptr), PETACOMM_ERR_ARG, "source: -1");
  FAILS(petacomm_node_send(node, buf, 8, 0, -3), PETACOMM_ERR_ARG, "tag: must be >= 0");
  FAILS(petacomm_node_send(node, buf, -1, 0, 0), PETACOMM_ERR_ARG, "bytes: must be >= 0");
  FAILS(petacomm_node_wait(node, &r, nullptr), PETACOMM_ERR_ARG, "request: NULL");
  FAILS(petacomm_node_barrier(nullptr, PETACOMM_NODE_SCOPE_ALL), PETACOMM_ERR_ARG, "node: NULL");
  // A buffer too small: a clear error, the buffer unchanged, the next message intact.
  const int to = (me + 1) % nranks, from = (me + nranks - 1) % nranks;
  for (const std::int64_t n : {std::int64_t{100}, std::int64_t{5000}}) {
    std::vector<unsigned char> out(static_cast<std::size_t>(n)), small(64, 0x5a), next(8);
    fill(out.data(), n, 77);
    std::int64_t follow = 1234567 + n;
    petacomm_node_request s1, s2;
    OK(petacomm_node_isend(node, out.data(), n, to, 3, &s1));
    OK(petacomm_node_isend(node, &follow, 8, to, 3, &s2));
    petacomm_node_status st;
    FAILS(petacomm_node_recv(node, small.data(), 64, from, 3, &st), PETACOMM_ERR_ARG,
          "bytes, the receive buffer 64");
    CHECK(st.bytes == n &&
              std::all_of(small.begin(), small.end(), [](unsigned char c) { return c == 0x5a; }),
          "too-small receive wrote into the buffer (status bytes %lld)",
          static_cast<long long>(st.bytes));
    OK(petacomm_node_recv(node, next.data(), 8, from, 3, &st));
    std::int64_t v;
    std::memcpy(&v, next.data(), 8);
    CHECK(v == 1234567 + n, "message after a dropped one: %lld", static_cast<long long>(v));
    OK(petacomm_node_wait(node, &s1, nullptr));
    OK(petacomm_node_wait(node, &s2, nullptr));
  }
  // A collective with a bad argument on one rank fails on every rank, outputs unchanged.
  std::vector<double> in(10, 1.0), out(10, -5.0);
  const bool bad = me == nranks - 1;
  const petacomm_status rc =
      petacomm_node_allreduce(node, bad ? nullptr : in.data(), out.data(), 10,
                              PETACOMM_NODE_FLOAT64, PETACOMM_NODE_SUM, PETACOMM_NODE_SCOPE_ALL);
  CHECK(rc == PETACOMM_ERR_ARG &&
            std::strstr(petacomm_last_error(), bad ? "send: NULL" : "another rank"),
        "allreduce with a NULL on rank %d: %d %s", nranks - 1, rc, petacomm_last_error());
  CHECK(std::all_of(out.begin(), out.end(), [](double v) { return v == -5.0; }),
        "failed allreduce wrote its output");
  const petacomm_status rc2 =
      petacomm_node_gather(node, in.data(), me == 0 ? -1 : 10, PETACOMM_NODE_FLOAT64, out.data(), 0,
                           PETACOMM_NODE_SCOPE_ALL);
  CHECK(rc2 == PETACOMM_ERR_ARG, "gather with a bad count on rank 0: %d", rc2);
  FAILS(petacomm_node_bcast(node, in.data(), 1, PETACOMM_NODE_FLOAT64, nranks,
                            PETACOMM_NODE_SCOPE_ALL),
        PETACOMM_ERR_ARG, "root: ");
  // A bad root on one rank only fails every rank of the scope (the others waited in the
  // first round for ever), outputs unchanged.
  int my_node = 0, bad_node = 0;
  OK(petacomm_node_locate(node, me, &my_node, nullptr));
  OK(petacomm_node_locate(node, nranks - 1, &bad_node, nullptr));
  for (const petacomm_node_scope scope : {PETACOMM_NODE_SCOPE_ALL, PETACOMM_NODE_SCOPE_NODE}) {
    if (scope == PETACOMM_NODE_SCOPE_NODE && my_node != bad_node) {
      // This node's collectives do not involve the faulty rank: they succeed.
      double x = 0.0;
      OK(petacomm_node_bcast(node, &x, 1, PETACOMM_NODE_FLOAT64, 0, scope));
      OK(petacomm_node_reduce(node, in.data(), out.data(), 1, PETACOMM_NODE_FLOAT64,
                              PETACOMM_NODE_SUM, 0, scope));
      OK(petacomm_node_gather(node, in.data(), 1, PETACOMM_NODE_FLOAT64, out.data(), 0, scope));
      continue;
    }
    const int root = bad ? (scope == PETACOMM_NODE_SCOPE_ALL ? nranks + 3 : -1) : 0;
    const char *expect = bad ? "root: " : "another rank";
    std::fill(out.begin(), out.end(), -5.0);
    petacomm_status rcs[3] = {
        petacomm_node_bcast(node, out.data(), 10, PETACOMM_NODE_FLOAT64, root, scope),
        petacomm_node_reduce(node, in.data(), out.data(), 10, PETACOMM_NODE_FLOAT64,
                             PETACOMM_NODE_SUM, root, scope),
        petacomm_node_gather(node, in.data(), 1, PETACOMM_NODE_FLOAT64, out.data(), root, scope)};
    for (int c = 0; c < 3; ++c)
      CHECK(rcs[c] == PETACOMM_ERR_ARG, "collective %d with root %d on rank %d: %d", c, root, me,
            rcs[c]);
    CHECK(std::strstr(petacomm_last_error(), expect) != nullptr, "bad root on one rank: %s",
          petacomm_last_error());
    CHECK(std::all_of(out.begin(), out.end(), [](double v) { return v == -5.0; }),
          "a collective with a bad root wrote its output");
  }
  // Valid arguments that differ between ranks (count, op, dtype, root, the collective
  // itself) fail every rank together, outputs unchanged (they returned success with
  // mixed-up results, or waited in rounds the others never entered).
  if (nranks > 1) {
    const bool odd = me % 2 == 1;
    std::fill(out.begin(), out.end(), -5.0);
    petacomm_status rcs[5] = {
        petacomm_node_allreduce(node, in.data(), out.data(), odd ? 10 : 4, PETACOMM_NODE_FLOAT64,
                                PETACOMM_NODE_SUM, PETACOMM_NODE_SCOPE_ALL),
        petacomm_node_allreduce(node, in.data(), out.data(), 4, PETACOMM_NODE_FLOAT64,
                                odd ? PETACOMM_NODE_MAX : PETACOMM_NODE_SUM,
                                PETACOMM_NODE_SCOPE_ALL),
        petacomm_node_allreduce(node, in.data(), out.data(), 4,
                                odd ? PETACOMM_NODE_INT64 : PETACOMM_NODE_FLOAT64,
                                PETACOMM_NODE_SUM, PETACOMM_NODE_SCOPE_ALL),
        petacomm_node_bcast(node, out.data(), 4, PETACOMM_NODE_FLOAT64, odd ? 1 : 0,
                            PETACOMM_NODE_SCOPE_ALL),
        odd ? petacomm_node_barrier(node, PETACOMM_NODE_SCOPE_ALL)
            : petacomm_node_gather(node, in.data(), 1, PETACOMM_NODE_FLOAT64, out.data(), 0,
                                   PETACOMM_NODE_SCOPE_ALL)};
    for (int c = 0; c < 5; ++c)
      CHECK(rcs[c] == PETACOMM_ERR_ARG &&
                std::strstr(petacomm_last_error(), "arguments differ between ranks") != nullptr,
            "collective %d with arguments differing between ranks: %d %s", c, rcs[c],
            petacomm_last_error());
    CHECK(std::all_of(out.begin(), out.end(), [](double v) { return v == -5.0; }),
          "a collective with differing arguments wrote its output");
  }
  // An unknown scope on one rank only fails every rank (the others waited for ever).
  {
    const auto scope = bad ? static_cast<petacomm_node_scope>(5) : PETACOMM_NODE_SCOPE_ALL;
    const char *expect = bad ? "scope: unknown value 5" : "another rank";
    std::fill(out.begin(), out.end(), -5.0);
    petacomm_status rcs[5] = {
        petacomm_node_barrier(node, scope),
        petacomm_node_bcast(node, out.data(), 10, PETACOMM_NODE_FLOAT64, 0, scope),
        petacomm_node_reduce(node, in.data(), out.data(), 10, PETACOMM_NODE_FLOAT64,
                             PETACOMM_NODE_SUM, 0, scope),
        petacomm_node_allreduce(node, in.data(), out.data(), 10, PETACOMM_NODE_FLOAT64,
                                PETACOMM_NODE_SUM, scope),
        petacomm_node_gather(node, in.data(), 1, PETACOMM_NODE_FLOAT64, out.data(), 0, scope)};
    for (int c = 0; c < 5; ++c)
      CHECK(rcs[c] == PETACOMM_ERR_ARG, "collective %d with scope %d on rank %d: %d", c,
            static_cast<int>(scope), me, rcs[c]);
    CHECK(std::strstr(petacomm_last_error(), expect) != nullptr, "bad scope on one rank: %s",
          petacomm_last_error());
    CHECK(std::all_of(out.begin(), out.end(), [](double v) { return v == -5.0; }),
          "a collective with a bad scope wrote its output");
  }
  // The layer still works after all that.
  double s = 1.0, t = 0.0;
  OK(petacomm_node_allreduce(node, &s, &t, 1, PETACOMM_NODE_FLOAT64, PETACOMM_NODE_SUM,
                             PETACOMM_NODE_SCOPE_ALL));
  CHECK(t == nranks, "allreduce after errors: %g", t);
}

void check_memory(petacomm_node node, const petacomm_node_options &o) {
  petacomm_node_layout l;
  petacomm_node_memory m;
  OK(petacomm_node_get_layout(node, &l));
  OK(petacomm_node_get_memory(node, &m));
  // The formula of docs/node-layer.md, written out by hand.
  const std::int64_t n = l.local_size;
  const std::int64_t ring = 128 + ((o.descriptors * 32 + 63) / 64) * 64;
  std::int64_t want = 64 + n * (64 + o.slots * o.slot_bytes) + n * ring + 64 + o.coll_bytes;
  if (l.local_rank == 0) want += m.rank_map_bytes + o.heap_bytes;
  CHECK(m.segment_bytes == want, "segment %lld bytes, formula %lld",
        static_cast<long long>(m.segment_bytes), static_cast<long long>(want));
  CHECK(m.rank_map_bytes == ((l.nodes * 16 + 63) / 64) * 64, "rank map %lld bytes for %d nodes",
        static_cast<long long>(m.rank_map_bytes), l.nodes);
  CHECK(m.private_bytes > 0 && m.private_bytes < 64 * 1024 + 4096 * n, "private state %lld bytes",
        static_cast<long long>(m.private_bytes));
}

void run_config(int k, bool small, const std::string &dir) {
  current_k = k;
  petacomm_node_options o;
  if (small) {
    o = small_options(k);
  } else {
    petacomm_node_options_default(&o);
    o.node_size = k;
    o.heap_bytes = 16 << 20;
  }
  petacomm_node node = nullptr;
  OK(petacomm_node_create(MPI_COMM_WORLD, &o, &node));
  if (node == nullptr) return;
  const Reference ref = reference_layout(k);
  petacomm_node_counters before;
  OK(petacomm_node_get_counters(node, &before));
  step("check_layout");
  check_layout(node, ref, k);
  const std::int64_t eager = o.slot_bytes - 64;
  step("check_ordering");
  check_ordering(node, {0, 1, eager, eager + 1, 3 * o.slot_bytes + 7, 20000}, 6, false, false);
  step("check_ordering");
  check_ordering(node, {eager + 1, 70000}, 2, true, false);  // put into heap buffers
  step("check_ordering");
  check_ordering(node, {eager + 1, 70000}, 2, false, true);  // pulled from heap buffers
  step("check_flow_control");
  check_flow_control(node, o.slots);
  step("check_many");
  check_many(node);
  step("check_counters");
  check_counters(node, ref, before);
  step("check_collectives");
  check_collectives(node, ref);
  step("check_rpc");
  check_rpc(node, ref, dir);
  step("check_probe");
  check_probe(node);
  step("check_errors");
  check_errors(node);
  step("check_memory");
  check_memory(node, o);
  // Free refuses while a request is open, on every rank, and works afterwards.
  unsigned char x = 1;
  petacomm_node_request r;
  OK(petacomm_node_irecv(node, &x, 1, me, 99, &r));
  FAILS(petacomm_node_free(&node), PETACOMM_ERR_STATE, "not complete");
  CHECK(node != nullptr, "the layer was freed with a request open");
  OK(petacomm_node_send(node, &x, 1, me, 99));
  OK(petacomm_node_wait(node, &r, nullptr));
  OK(petacomm_node_free(&node));
  CHECK(node == nullptr, "free did not clear the handle");
  MPI_Comm c = ref.node_comm;
  MPI_Comm_free(&c);
}

// Options each within bounds whose window the machine cannot hold: refused on every rank
// (MPI_Win_allocate_shared aborted the job: 4096 slots of 1 GiB are 4 TiB per pair of ranks).
void check_window_too_big() {
  current_k = 0;
  for (const bool heap : {false, true}) {
    petacomm_node_options o;
    petacomm_node_options_default(&o);
    if (heap) {
      o.heap_bytes = std::int64_t{1} << 46;
    } else {
      o.slots = 4096;
      o.slot_bytes = std::int64_t{1} << 30;
    }
    petacomm_node node = nullptr;
    FAILS(petacomm_node_create(MPI_COMM_WORLD, &o, &node), PETACOMM_ERR_ARG,
          "opts: the node's window would take");
    CHECK(node == nullptr, "a failed creation returned a layer");
  }
}

// > 2^31 bytes between two ranks of one node through private buffers (pipelined chunks of
// 1 MiB slots): lengths, offsets and statuses past 32 bits. Memory: 2 x 2 GiB.
void check_huge() {
  if (nranks < 2) return;
  current_k = 0;
  petacomm_node_options o;
  petacomm_node_options_default(&o);
  o.slot_bytes = 1 << 20;
  o.slots = 4;
  petacomm_node node;
  OK(petacomm_node_create(MPI_COMM_WORLD, &o, &node));
  const std::int64_t n = (std::int64_t{1} << 31) + 4099;
  if (me < 2) {
    // malloc, not a vector: untouched pages stay unmapped (the sender's read as zeros).
    auto *b = static_cast<unsigned char *>(std::malloc(static_cast<std::size_t>(n)));
    CHECK(b != nullptr, "no memory for %lld bytes", static_cast<long long>(n));
    if (me == 0 && b) {
      for (std::int64_t j = 0; j < n; j += 4096) b[j] = static_cast<unsigned char>((j >> 12) | 1);
      b[n - 1] = 0x7b;
      OK(petacomm_node_send(node, b, n, 1, 5));
    } else if (b) {
      petacomm_node_status st;
      OK(petacomm_node_recv(node, b, n, 0, 5, &st));
      bool same = st.bytes == n && b[n - 1] == 0x7b;
      for (std::int64_t j = 0; j < n && same; j += 4096)
        same = b[j] == static_cast<unsigned char>((j >> 12) | 1) && b[j + 1] == 0;
      CHECK(same, "message of %lld bytes arrived as %lld", static_cast<long long>(n),
            static_cast<long long>(st.bytes));
    }
    std::free(b);
  }
  OK(petacomm_node_free(&node));
  if (me == 0) std::printf("huge message of %lld bytes ok\n", static_cast<long long>(n));
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  char dir_template[] = "/tmp/petacomm-node-test-XXXXXX";
  std::string dir;
  if (me == 0) dir = mkdtemp(dir_template);
  int len = static_cast<int>(dir.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  dir.resize(static_cast<std::size_t>(len));
  MPI_Bcast(dir.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (argc > 1 && std::strcmp(argv[1], "--huge") == 0) {
    check_huge();  // alone: it needs 2 x 2 GiB
  } else {
    for (const int k : {0, 1, 2, 3, 4}) run_config(k, true, dir);
    run_config(2, false, dir);  // default sizes: eager up to 8 KiB, big slots
    check_window_too_big();
  }
  // A layer used after MPI_Finalize: ERR_STATE (its window is gone: calls faulted), and
  // freeing it still works.
  petacomm_node after = nullptr;
  OK(petacomm_node_create(MPI_COMM_WORLD, nullptr, &after));
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) rmdir(dir.c_str());
  long total = 0;
  int bad = 0;
  MPI_Reduce(&checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) {
    if (bad == 0)
      std::printf("node ok %ld\n", total);
    else
      std::printf("node FAILED: %d of %ld checks\n", bad, total);
  }
  MPI_Finalize();
  const int before_finalize = failures;
  unsigned char byte = 0;
  FAILS(petacomm_node_barrier(after, PETACOMM_NODE_SCOPE_ALL), PETACOMM_ERR_STATE, "finalised");
  FAILS(petacomm_node_send(after, &byte, 1, me, 0), PETACOMM_ERR_STATE, "finalised");
  OK(petacomm_node_free(&after));
  bad += failures - before_finalize;  // this rank's checks after MPI_Finalize
  return bad == 0 ? 0 : 1;
}
