// petacomm-node-bench: the node layer against MPI send/recv on the same two ranks, and a
// single-threaded memcpy of the same sizes, measured side by side in one run; rank 0 writes
// the raw repetitions as JSON and `petacomm bench node` computes medians and ratios.
//
//   intra  ranks 0 and 1 in one node (the whole machine is one node): one-way latency
//          (ping-pong / 2) and bandwidth (a window of non-blocking sends, then an
//          acknowledgement), layer with private buffers (pipelined through slots) and with
//          node-heap buffers (one copy), MPI, memcpy.
//   inter  two ranks on different virtual nodes (node size --inter-node-size): every message
//          goes sender -> its gateway -> the other gateway -> receiver; the gateways' message
//          and byte counters for that phase are reported.
// Every series is measured once per repetition, all series interleaved per repetition.
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "petacomm/node.h"

namespace {

struct Options {
  std::int64_t min_size = 1, max_size = 4 << 20;
  int iterations = 200;  // latency round trips for small messages (fewer for large ones)
  int reps = 5;
  int window = 32;
  int inter_node_size = 0;  // 0: half the ranks (at least 1)
  std::string json;
};

void usage() {
  std::printf(
      "usage: petacomm-node-bench --json FILE [--sizes MIN:MAX] [--iterations N] [--reps R]\n"
      "                           [--window W] [--inter-node-size K]\n"
      "  --sizes MIN:MAX       message sizes in bytes, powers of two (default 1:4194304)\n"
      "  --iterations N        round trips per latency point for small messages (default 200)\n"
      "  --reps R              repetitions of every series (default 5)\n"
      "  --window W            messages in flight per bandwidth round (default 32)\n"
      "  --inter-node-size K   virtual node size of the inter-node phase (default ranks/2)\n"
      "Needs at least 2 ranks. Rank 0 writes the raw times (seconds) to FILE.\n");
}

bool parse_int(const char *text, std::int64_t low, std::int64_t high, std::int64_t *out) {
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < low || v > high) return false;
  *out = v;
  return true;
}

// "" or the problem with argv, naming the flag and value.
std::string parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return "help";
    if (i + 1 >= argc) return a + ": missing value";
    const char *v = argv[++i];
    std::int64_t n = 0;
    if (a == "--json") {
      o.json = v;
    } else if (a == "--sizes") {
      const char *colon = std::strchr(v, ':');
      std::int64_t lo = 0, hi = 0;
      if (!colon || !parse_int(std::string(v, colon).c_str(), 0, std::int64_t{1} << 30, &lo) ||
          !parse_int(colon + 1, 1, std::int64_t{1} << 30, &hi) || lo > hi)
        return std::string("--sizes: expected MIN:MAX bytes (0 <= MIN <= MAX <= 2^30), got '") + v +
               "'";
      o.min_size = lo;
      o.max_size = hi;
    } else if (a == "--iterations" && parse_int(v, 1, 1000000, &n)) {
      o.iterations = static_cast<int>(n);
    } else if (a == "--reps" && parse_int(v, 1, 1000, &n)) {
      o.reps = static_cast<int>(n);
    } else if (a == "--window" && parse_int(v, 1, 4096, &n)) {
      o.window = static_cast<int>(n);
    } else if (a == "--inter-node-size" && parse_int(v, 1, 1 << 20, &n)) {
      o.inter_node_size = static_cast<int>(n);
    } else {
      return a + ": unknown flag or invalid value '" + v + "'";
    }
  }
  if (o.json.empty()) return "--json: required";
  return "";
}

std::vector<std::int64_t> sizes_of(const Options &o) {
  std::vector<std::int64_t> sizes;
  if (o.min_size == 0) sizes.push_back(0);
  for (std::int64_t s = std::max<std::int64_t>(o.min_size, 1); s <= o.max_size; s *= 2)
    sizes.push_back(s);
  return sizes;
}

// Fewer repetitions for large messages: about the cost of a 64 KiB point.
int scaled(std::int64_t bytes, int base) {
  const std::int64_t knee = 64 << 10;
  if (bytes <= knee) return base;
  return static_cast<int>(std::max<std::int64_t>(base * knee / bytes, 3));
}

void must(petacomm_status rc, const char *what) {
  if (rc == PETACOMM_SUCCESS) return;
  std::fprintf(stderr, "petacomm-node-bench: %s: %s\n", what, petacomm_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// One transport: the layer or MPI, between ranks a and b.
struct Pair {
  petacomm_node node = nullptr;  // nullptr: MPI
  int a = 0, b = 1, me = 0;

  void send(const void *buf, std::int64_t n, int to) const {
    if (node) {
      must(petacomm_node_send(node, buf, n, to, 1), "send");
    } else {
      MPI_Send(buf, static_cast<int>(n), MPI_BYTE, to, 1, MPI_COMM_WORLD);
    }
  }
  void recv(void *buf, std::int64_t n, int from) const {
    if (node) {
      must(petacomm_node_recv(node, buf, n, from, 1, nullptr), "recv");
    } else {
      MPI_Recv(buf, static_cast<int>(n), MPI_BYTE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }

  // One-way latency in seconds (rank a's view), -1 elsewhere.
  double latency(char *buf, std::int64_t n, int iterations) const {
    if (me != a && me != b) return -1;
    send_or_recv_warmup(buf, n);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) {
      if (me == a) {
        send(buf, n, b);
        recv(buf, n, b);
      } else {
        recv(buf, n, a);
        send(buf, n, a);
      }
    }
    return (MPI_Wtime() - t0) / iterations / 2;
  }

  void send_or_recv_warmup(char *buf, std::int64_t n) const {
    if (me == a) {
      send(buf, n, b);
      recv(buf, n, b);
    } else {
      recv(buf, n, a);
      send(buf, n, a);
    }
  }

  // Bytes per second from a to b: `rounds` windows of `window` messages, each acknowledged.
  double bandwidth(char *sbuf, char *rbuf, std::int64_t n, int window, int rounds) const {
    if (me != a && me != b) return -1;
    std::vector<petacomm_node_request> lr(static_cast<std::size_t>(window));
    std::vector<MPI_Request> mr(static_cast<std::size_t>(window));
    char ack = 0;
    auto round = [&] {
      for (int w = 0; w < window; ++w) {
        if (node) {
          if (me == a)
            must(petacomm_node_isend(node, sbuf, n, b, 2, &lr[w]), "isend");
          else
            must(petacomm_node_irecv(node, rbuf, n, a, 2, &lr[w]), "irecv");
        } else if (me == a) {
          MPI_Isend(sbuf, static_cast<int>(n), MPI_BYTE, b, 2, MPI_COMM_WORLD, &mr[w]);
        } else {
          MPI_Irecv(rbuf, static_cast<int>(n), MPI_BYTE, a, 2, MPI_COMM_WORLD, &mr[w]);
        }
      }
      if (node) {
        must(petacomm_node_waitall(node, window, lr.data(), nullptr), "waitall");
      } else {
        MPI_Waitall(window, mr.data(), MPI_STATUSES_IGNORE);
      }
      if (me == a)
        recv(&ack, 1, b);
      else
        send(&ack, 1, a);
    };
    round();  // warm-up
    const double t0 = MPI_Wtime();
    for (int r = 0; r < rounds; ++r) round();
    const double t = MPI_Wtime() - t0;
    return static_cast<double>(n) * window * rounds / t;
  }
};

double memcpy_bandwidth(char *dst, const char *src, std::int64_t n, int count) {
  std::memcpy(dst, src, static_cast<std::size_t>(n));  // warm-up
  const double t0 = MPI_Wtime();
  for (int i = 0; i < count; ++i) {
    std::memcpy(dst, src, static_cast<std::size_t>(n));
    asm volatile("" : : "r"(dst) : "memory");  // keep every copy
  }
  return static_cast<double>(n) * count / (MPI_Wtime() - t0);
}

struct Series {
  std::string name;
  std::vector<std::vector<double>> values;  // [size][rep]
};

void write_series(FILE *f, const std::vector<Series> &all) {
  std::fprintf(f, "{");
  for (std::size_t s = 0; s < all.size(); ++s) {
    std::fprintf(f, "%s\n      \"%s\": [", s ? "," : "", all[s].name.c_str());
    for (std::size_t i = 0; i < all[s].values.size(); ++i) {
      std::fprintf(f, "%s[", i ? ", " : "");
      for (std::size_t r = 0; r < all[s].values[i].size(); ++r)
        std::fprintf(f, "%s%.9g", r ? ", " : "", all[s].values[i][r]);
      std::fprintf(f, "]");
    }
    std::fprintf(f, "]");
  }
  std::fprintf(f, "}");
}

void write_sizes(FILE *f, const std::vector<std::int64_t> &sizes) {
  std::fprintf(f, "[");
  for (std::size_t i = 0; i < sizes.size(); ++i)
    std::fprintf(f, "%s%lld", i ? ", " : "", static_cast<long long>(sizes[i]));
  std::fprintf(f, "]");
}

petacomm_node make_layer(int node_size, std::int64_t heap) {
  petacomm_node_options o;
  petacomm_node_options_default(&o);
  o.node_size = node_size;
  o.heap_bytes = heap;
  petacomm_node node = nullptr;
  must(petacomm_node_create(MPI_COMM_WORLD, &o, &node), "create");
  return node;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  const std::string problem = parse(argc, argv, o);
  if (problem == "help") {
    usage();
    return 0;
  }
  MPI_Init(&argc, &argv);
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string refused = problem;
  if (refused.empty() && size < 2) refused = "needs at least 2 ranks";
  // One virtual node holds every rank: the inter-node phase measured a pair inside it.
  if (refused.empty() && o.inter_node_size >= size)
    refused = "--inter-node-size: " + std::to_string(o.inter_node_size) +
              " ranks per node leave all " + std::to_string(size) +
              " ranks on one node; the inter-node phase needs two (at most " +
              std::to_string(size - 1) + ")";
  if (!refused.empty()) {
    if (me == 0) std::fprintf(stderr, "petacomm-node-bench: %s\n", refused.c_str());
    MPI_Finalize();
    return 2;
  }
  const std::vector<std::int64_t> sizes = sizes_of(o);
  const std::int64_t biggest = sizes.back();
  // Ranks 0 and 1 each hold a send and a receive buffer in the heap.
  const std::int64_t heap = 4 * ((biggest + 64 + 63) / 64 * 64 + 64) + (8 << 20);

  // ---- intra: the whole machine is one node ----
  petacomm_node intra = make_layer(0, heap);
  petacomm_node_layout layout;
  must(petacomm_node_get_layout(intra, &layout), "layout");
  const bool same_node = layout.domains == 1;
  std::vector<char> p1(static_cast<std::size_t>(biggest) + 64, 1), p2(p1.size(), 2);
  void *h1 = nullptr, *h2 = nullptr;
  if (me < 2) {
    must(petacomm_node_alloc(intra, biggest + 64, &h1), "alloc");
    must(petacomm_node_alloc(intra, biggest + 64, &h2), "alloc");
    std::memset(h1, 1, static_cast<std::size_t>(biggest));
  }
  const Pair layer{intra, 0, 1, me}, mpi{nullptr, 0, 1, me};
  std::vector<Series> in = {{"layer_latency", {}},   {"mpi_latency", {}}, {"layer_bw_private", {}},
                            {"layer_bw_window", {}}, {"mpi_bw", {}},      {"memcpy_bw", {}}};
  for (Series &s : in) s.values.assign(sizes.size(), {});
  for (int rep = 0; rep < o.reps; ++rep) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::int64_t n = sizes[i];
      const int lat = scaled(n, o.iterations), rounds = std::max(2, scaled(n * o.window, 8));
      in[0].values[i].push_back(layer.latency(p1.data(), n, lat));
      in[1].values[i].push_back(mpi.latency(p1.data(), n, lat));
      in[2].values[i].push_back(layer.bandwidth(p1.data(), p2.data(), n, o.window, rounds));
      in[3].values[i].push_back(
          layer.bandwidth(static_cast<char *>(h1), static_cast<char *>(h2), n, o.window, rounds));
      in[4].values[i].push_back(mpi.bandwidth(p1.data(), p2.data(), n, o.window, rounds));
      in[5].values[i].push_back(
          me == 0 ? memcpy_bandwidth(p2.data(), p1.data(), n, o.window * rounds) : -1);
    }
  }
  // Idle ranks wait here (in the layer, yielding) rather than in a spinning MPI call.
  must(petacomm_node_barrier(intra, PETACOMM_NODE_SCOPE_ALL), "barrier");
  petacomm_node_memory memory;
  must(petacomm_node_get_memory(intra, &memory), "memory");
  std::int64_t mem_mine[3] = {memory.segment_bytes, memory.private_bytes, layout.local_rank};
  std::vector<std::int64_t> mem_all(static_cast<std::size_t>(size) * 3);
  MPI_Gather(mem_mine, 3, MPI_INT64_T, mem_all.data(), 3, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (h1) must(petacomm_node_dealloc(intra, h1), "dealloc");
  if (h2) must(petacomm_node_dealloc(intra, h2), "dealloc");
  must(petacomm_node_barrier(intra, PETACOMM_NODE_SCOPE_ALL), "barrier");
  must(petacomm_node_free(&intra), "free");

  // ---- inter: two virtual nodes (or more); the pair are the last ranks of the first two ----
  const int k = o.inter_node_size > 0 ? o.inter_node_size : std::max(1, size / 2);
  petacomm_node inter = make_layer(k, 16 << 20);
  int a = 0, b = 0;
  for (int r = 0; r < size; ++r) {
    int node = 0;
    must(petacomm_node_locate(inter, r, &node, nullptr), "locate");
    if (node == 0) a = r;
    if (node == 1) b = r;
  }
  std::vector<Series> out = {
      {"layer_latency", {}}, {"mpi_latency", {}}, {"layer_bw", {}}, {"mpi_bw", {}}};
  for (Series &s : out) s.values.assign(sizes.size(), {});
  petacomm_node_counters before, after;
  must(petacomm_node_get_counters(inter, &before), "counters");
  std::int64_t layer_messages = 0;
  const Pair layer2{inter, a, b, me}, mpi2{nullptr, a, b, me};
  if (b != a) {
    for (int rep = 0; rep < o.reps; ++rep) {
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::int64_t n = sizes[i];
        const int lat = scaled(n, o.iterations), rounds = std::max(2, scaled(n * o.window, 8));
        out[0].values[i].push_back(layer2.latency(p1.data(), n, lat));
        out[1].values[i].push_back(mpi2.latency(p1.data(), n, lat));
        out[2].values[i].push_back(layer2.bandwidth(p1.data(), p2.data(), n, o.window, rounds));
        out[3].values[i].push_back(mpi2.bandwidth(p1.data(), p2.data(), n, o.window, rounds));
        // Messages the pair sent through the layer in this point (warm-ups included).
        layer_messages += 2 * (lat + 1) + (rounds + 1) * (o.window + 1);
      }
    }
  }
  // Everyone waits in the layer: the gateways forward until the pair is done.
  must(petacomm_node_barrier(inter, PETACOMM_NODE_SCOPE_ALL), "barrier");
  must(petacomm_node_get_counters(inter, &after), "counters");
  petacomm_node_layout l2;
  must(petacomm_node_get_layout(inter, &l2), "layout");
  const std::int64_t gw[10] = {l2.local_rank == 0 ? 1 : 0,
                               l2.node,
                               after.forwarded_messages - before.forwarded_messages,
                               after.forwarded_bytes - before.forwarded_bytes,
                               after.delivered_messages - before.delivered_messages,
                               after.delivered_bytes - before.delivered_bytes,
                               after.mpi_messages_sent - before.mpi_messages_sent,
                               after.mpi_bytes_sent - before.mpi_bytes_sent,
                               after.remote_messages - before.remote_messages,
                               after.remote_bytes - before.remote_bytes};
  std::vector<std::int64_t> gw_all(static_cast<std::size_t>(size) * 10);
  MPI_Gather(gw, 10, MPI_INT64_T, gw_all.data(), 10, MPI_INT64_T, 0, MPI_COMM_WORLD);
  must(petacomm_node_free(&inter), "free");

  // Rank a measured the latencies and bandwidths of the inter phase: bring them to rank 0.
  if (a != 0 && b != a) {
    for (Series &s : out)
      for (auto &v : s.values) {
        std::vector<double> tmp(v.size());
        if (me == a)
          MPI_Send(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
        if (me == 0) {
          MPI_Recv(tmp.data(), static_cast<int>(tmp.size()), MPI_DOUBLE, a, 9, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          v = tmp;
        }
      }
  }
  if (me == 0) {
    FILE *f = std::fopen(o.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "petacomm-node-bench: --json: cannot write '%s': %s\n", o.json.c_str(),
                   std::strerror(errno));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    std::fprintf(f, "{\n  \"schema\": \"petacomm-node-bench-raw\",\n  \"schema_version\": 1,\n");
    std::fprintf(f,
                 "  \"ranks\": %d,\n  \"one_machine\": %s,\n  \"units\": {\"latency\": "
                 "\"s\", \"bandwidth\": \"B/s\", \"memory\": \"B\"},\n",
                 size, same_node ? "true" : "false");
    std::fprintf(f, "  \"intra\": {\n    \"pair\": [0, 1],\n    \"sizes\": ");
    write_sizes(f, sizes);
    std::fprintf(f, ",\n    \"series\": ");
    write_series(f, in);
    std::fprintf(f,
                 "\n  },\n  \"inter\": {\n    \"pair\": [%d, %d],\n    \"node_size\": %d,\n"
                 "    \"layer_messages\": %lld,\n    \"sizes\": ",
                 a, b, k, static_cast<long long>(layer_messages));
    write_sizes(f, b != a ? sizes : std::vector<std::int64_t>{});
    std::fprintf(f, ",\n    \"series\": ");
    write_series(f, out);
    std::fprintf(f, ",\n    \"ranks\": [");
    const char *names[] = {"forwarded_messages", "forwarded_bytes",   "delivered_messages",
                           "delivered_bytes",    "mpi_messages_sent", "mpi_bytes_sent",
                           "remote_messages",    "remote_bytes"};
    for (int r = 0; r < size; ++r) {
      const std::int64_t *g = &gw_all[static_cast<std::size_t>(r) * 10];
      std::fprintf(f, "%s\n      {\"rank\": %d, \"gateway\": %s, \"node\": %lld", r ? "," : "", r,
                   g[0] ? "true" : "false", static_cast<long long>(g[1]));
      for (int c = 0; c < 8; ++c)
        std::fprintf(f, ", \"%s\": %lld", names[c], static_cast<long long>(g[c + 2]));
      std::fprintf(f, "}");
    }
    std::fprintf(f, "]\n  },\n  \"memory\": [");
    for (int r = 0; r < size; ++r)
      std::fprintf(f,
                   "%s\n    {\"rank\": %d, \"local_rank\": %lld, \"segment_bytes\": %lld, "
                   "\"private_bytes\": %lld}",
                   r ? "," : "", r, static_cast<long long>(mem_all[r * 3 + 2]),
                   static_cast<long long>(mem_all[r * 3]),
                   static_cast<long long>(mem_all[r * 3 + 1]));
    std::fprintf(f, "]\n}\n");
    std::fclose(f);
  }
  MPI_Finalize();
  return 0;
}
