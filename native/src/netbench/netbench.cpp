// petacomm-netbench: measures point-to-point and collective times for the machine model.
//
// Every timing is synchronised (barrier or pair handshake before each repetition) and
// repeated; per repetition the time kept is the maximum over participating ranks. Rank 0
// writes the raw repetitions as JSON; `petacomm netbench` computes statistics and fits.
// Ranks not taking part in a ping-pong wait in a sleeping non-blocking barrier so that
// they do not steal cores from the pair being timed on an oversubscribed node.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "json_out.hpp"
#include "netbench_options.hpp"

namespace {

using netbench::Options;

struct Point {
  std::uint64_t bytes;
  int iterations;
  std::vector<double> seconds;  // one per repetition: max over ranks, per operation
};

struct Series {
  std::string op;
  int participants;
  std::vector<int> peers;  // world ranks of a ping-pong pair; empty for collectives
  std::vector<Point> points;
};

// Rank 0's progress lines (--progress), read by `petacomm netbench` to draw its bar.
struct ProgressReport {
  bool enabled = false;
  int total = 0;
  int done = 0;
  void step(const std::string &op, std::uint64_t bytes) {
    ++done;
    if (!enabled) return;
    std::printf("petacomm-netbench progress %d %d %s %llu\n", done, total, op.c_str(),
                static_cast<unsigned long long>(bytes));
    std::fflush(stdout);
  }
};

// Fewer iterations for large messages so that a size costs about as much as a 64 KiB one.
int iterations_for(std::uint64_t bytes, int base) {
  const std::uint64_t knee = 64 * 1024;
  if (bytes <= knee) return base;
  const std::uint64_t scaled = static_cast<std::uint64_t>(base) * knee / bytes;
  return static_cast<int>(std::max<std::uint64_t>(scaled, 3));
}

int warmup_for(std::uint64_t bytes, int base) {
  if (base == 0) return 0;
  return std::max(1, std::min(base, iterations_for(bytes, base)));
}

void sleeping_barrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  int done = 0;
  const timespec nap{0, 200000};  // 0.2 ms
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    nanosleep(&nap, nullptr);
  }
}

// Rank `a` and rank `b` ping-pong; rank `a` returns one-way times per repetition.
Series pingpong(const Options &o, const std::vector<std::uint64_t> &sizes, int a, int b,
                const char *name, ProgressReport &progress) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Series series{name, 2, {a, b}, {}};
  if (rank == a || rank == b) {
    const int other = rank == a ? b : a;
    std::vector<char> buffer(sizes.empty() ? 1 : sizes.back(), 1);
    for (const std::uint64_t bytes : sizes) {
      const int count = static_cast<int>(bytes);
      const int iters = iterations_for(bytes, o.iterations);
      auto exchange = [&](int n) {
        for (int i = 0; i < n; ++i) {
          if (rank == a) {
            MPI_Send(buffer.data(), count, MPI_BYTE, other, 1, MPI_COMM_WORLD);
            MPI_Recv(buffer.data(), count, MPI_BYTE, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          } else {
            MPI_Recv(buffer.data(), count, MPI_BYTE, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buffer.data(), count, MPI_BYTE, other, 1, MPI_COMM_WORLD);
          }
        }
      };
      exchange(warmup_for(bytes, o.warmup));
      Point point{bytes, iters, {}};
      for (int r = 0; r < o.repetitions; ++r) {
        MPI_Sendrecv(nullptr, 0, MPI_BYTE, other, 2, nullptr, 0, MPI_BYTE, other, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        const double start = MPI_Wtime();
        exchange(iters);
        point.seconds.push_back((MPI_Wtime() - start) / (2.0 * iters));
      }
      series.points.push_back(point);
      if (rank == 0) progress.step(name, bytes);
    }
  }
  sleeping_barrier(MPI_COMM_WORLD);
  return series;
}

// Per-rank buffer bytes a collective needs for message size `bytes` on p ranks.
std::uint64_t buffer_bytes(const std::string &op, std::uint64_t bytes, int p) {
  if (op == "allgather" || op == "alltoall" || op == "alltoallv")
    return bytes * static_cast<std::uint64_t>(p);
  return bytes;
}

Series collective(const Options &o, const std::vector<std::uint64_t> &sizes, const std::string &op,
                  ProgressReport &progress) {
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  Series series{op, p, {}, {}};
  std::uint64_t largest = 0;
  for (auto bytes : sizes)
    if (buffer_bytes(op, bytes, p) <= o.max_buffer) largest = std::max(largest, bytes);
  const std::size_t capacity = std::max<std::uint64_t>(buffer_bytes(op, largest, p), 8);
  std::vector<char> send(capacity, 1), recv(capacity, 0);
  std::vector<int> counts(p), displs(p);

  // One size: measured, or skipped (buffer cap, too small for the operation).
  auto measure = [&](const std::uint64_t requested) {
    if (requested > largest) return;
    // Reductions work on doubles; reduce_scatter_block needs a whole block per rank.
    std::uint64_t bytes = requested;
    if (op == "allreduce") {
      if (bytes < 8) return;
      bytes -= bytes % 8;
    } else if (op == "reduce_scatter_block") {
      const std::uint64_t block = bytes / 8 / static_cast<std::uint64_t>(p);
      if (block == 0) return;
      bytes = block * 8 * static_cast<std::uint64_t>(p);
    }
    const int n = static_cast<int>(bytes);
    const int doubles = static_cast<int>(bytes / 8);
    auto run_once = [&]() {
      if (op == "allreduce") {
        MPI_Allreduce(send.data(), recv.data(), doubles, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      } else if (op == "bcast") {
        MPI_Bcast(send.data(), n, MPI_BYTE, 0, MPI_COMM_WORLD);
      } else if (op == "allgather") {
        MPI_Allgather(send.data(), n, MPI_BYTE, recv.data(), n, MPI_BYTE, MPI_COMM_WORLD);
      } else if (op == "alltoall") {
        MPI_Alltoall(send.data(), n, MPI_BYTE, recv.data(), n, MPI_BYTE, MPI_COMM_WORLD);
      } else if (op == "alltoallv") {
        for (int i = 0; i < p; ++i) {
          counts[i] = n;
          displs[i] = i * n;
        }
        MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_BYTE, recv.data(),
                      counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD);
      } else if (op == "reduce_scatter_block") {
        MPI_Reduce_scatter_block(send.data(), recv.data(), doubles / p, MPI_DOUBLE, MPI_SUM,
                                 MPI_COMM_WORLD);
      }
    };
    if (op == "allreduce" || op == "reduce_scatter_block") {
      // Doubles of value 1.0 keep sums finite and free of denormals however often we add.
      auto *values = reinterpret_cast<double *>(send.data());
      std::fill(values, values + capacity / 8, 1.0);
    }
    const int iters = iterations_for(bytes, o.iterations);
    for (int i = 0; i < warmup_for(bytes, o.warmup); ++i) run_once();
    Point point{bytes, iters, {}};
    for (int r = 0; r < o.repetitions; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      for (int i = 0; i < iters; ++i) run_once();
      double local = (MPI_Wtime() - start) / iters, slowest = 0;
      MPI_Reduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      point.seconds.push_back(slowest);
    }
    series.points.push_back(point);
  };
  for (const std::uint64_t requested : sizes) {
    measure(requested);
    if (rank == 0) progress.step(op, requested);
  }
  return series;
}

bool write_json(const std::string &path, const std::vector<Series> &all, int p,
                const std::vector<int> &node_of_rank, const std::vector<std::string> &hosts,
                const Options &o, std::string &error) {
  // A name of this process's own: launchers that start ranks as separate one-rank jobs
  // (mpich's mpiexec on Open MPI programs) run several writers of the same file at once,
  // and a shared temporary name made one's rename fail with ENOENT.
  const std::string temporary = path + "." + std::to_string(getpid()) + ".tmp";
  FILE *out = std::fopen(temporary.c_str(), "w");
  if (!out) {
    error = "--json: cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(library, &length);
  // Some libraries count the terminating NUL in the length, and most end with a newline.
  std::string name(library, static_cast<std::size_t>(std::max(length, 0)));
  while (!name.empty() &&
         (name.back() == '\0' || std::isspace(static_cast<unsigned char>(name.back()))))
    name.pop_back();
  std::fprintf(out, "{\n  \"tool\": \"petacomm-netbench\",\n  \"ranks\": %d,\n", p);
  std::fprintf(out, "  \"mpi_library\": %s,\n", petacomm::json_quote(name).c_str());
  std::fprintf(out, "  \"warmup\": %d,\n  \"iterations\": %d,\n  \"repetitions\": %d,\n", o.warmup,
               o.iterations, o.repetitions);
  std::fprintf(out, "  \"node_of_rank\": [");
  for (int i = 0; i < p; ++i) std::fprintf(out, "%s%d", i ? ", " : "", node_of_rank[i]);
  std::fprintf(out, "],\n  \"hosts\": [");
  for (std::size_t i = 0; i < hosts.size(); ++i)
    std::fprintf(out, "%s%s", i ? ", " : "", petacomm::json_quote(hosts[i]).c_str());
  std::fprintf(out, "],\n  \"series\": [\n");
  for (std::size_t s = 0; s < all.size(); ++s) {
    const Series &series = all[s];
    std::fprintf(out, "    {\"op\": \"%s\", \"participants\": %d, \"peers\": [", series.op.c_str(),
                 series.participants);
    for (std::size_t i = 0; i < series.peers.size(); ++i)
      std::fprintf(out, "%s%d", i ? ", " : "", series.peers[i]);
    std::fprintf(out, "], \"points\": [\n");
    for (std::size_t i = 0; i < series.points.size(); ++i) {
      const Point &point = series.points[i];
      std::fprintf(out, "      {\"bytes\": %llu, \"iterations\": %d, \"seconds\": [",
                   static_cast<unsigned long long>(point.bytes), point.iterations);
      for (std::size_t r = 0; r < point.seconds.size(); ++r)
        std::fprintf(out, "%s%.9e", r ? ", " : "", point.seconds[r]);
      std::fprintf(out, "]}%s\n", i + 1 < series.points.size() ? "," : "");
    }
    std::fprintf(out, "    ]}%s\n", s + 1 < all.size() ? "," : "");
  }
  std::fprintf(out, "  ]\n}\n");
  const bool flushed = std::fflush(out) == 0;
  if (std::fclose(out) != 0 || !flushed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "--json: cannot write '" + path + "': " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  Options options;
  std::string error;
  bool help = false;
  if (!netbench::parse_options(argc, argv, options, error, help) || help) {
    if (rank == 0) {
      if (help)
        std::fputs(netbench::usage(), stdout);
      else
        std::fprintf(stderr, "petacomm-netbench: error: %s\n%s", error.c_str(), netbench::usage());
    }
    MPI_Finalize();
    return help ? 0 : 2;
  }

  // Node of each rank = lowest world rank sharing its memory; host names for the report.
  MPI_Comm node_comm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
  int node_leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &node_leader, 1, MPI_INT, MPI_MIN, node_comm);
  MPI_Comm_free(&node_comm);
  std::vector<int> node_of_rank(p);
  MPI_Allgather(&node_leader, 1, MPI_INT, node_of_rank.data(), 1, MPI_INT, MPI_COMM_WORLD);
  char host[MPI_MAX_PROCESSOR_NAME] = {0};
  int host_length = 0;
  MPI_Get_processor_name(host, &host_length);
  std::vector<char> all_hosts(static_cast<std::size_t>(p) * MPI_MAX_PROCESSOR_NAME);
  MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all_hosts.data(), MPI_MAX_PROCESSOR_NAME,
             MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> hosts;
  for (int i = 0; i < p && rank == 0; ++i) {
    const std::string name(&all_hosts[static_cast<std::size_t>(i) * MPI_MAX_PROCESSOR_NAME]);
    if (std::find(hosts.begin(), hosts.end(), name) == hosts.end()) hosts.push_back(name);
  }

  const auto sizes = netbench::message_sizes(options);
  std::vector<Series> results;
  auto wanted = [&](const std::string &op) {
    return std::find(options.ops.begin(), options.ops.end(), op) != options.ops.end();
  };
  int intra = -1, inter = -1;
  if (wanted("pingpong") && p > 1) {
    for (int i = 1; i < p; ++i) {
      if (node_of_rank[i] == node_of_rank[0] && intra < 0) intra = i;
      if (node_of_rank[i] != node_of_rank[0] && inter < 0) inter = i;
    }
  }
  ProgressReport progress;
  progress.enabled = options.progress && rank == 0;
  int series_count = (intra > 0) + (inter > 0);
  for (const auto &op : netbench::all_operations()) series_count += op != "pingpong" && wanted(op);
  progress.total = series_count * static_cast<int>(sizes.size());
  if (intra > 0) results.push_back(pingpong(options, sizes, 0, intra, "pingpong.intra", progress));
  if (inter > 0) results.push_back(pingpong(options, sizes, 0, inter, "pingpong.inter", progress));
  for (const auto &op : netbench::all_operations())
    if (op != "pingpong" && wanted(op)) results.push_back(collective(options, sizes, op, progress));

  int status = 0;
  if (rank == 0 &&
      !write_json(options.json_path, results, p, node_of_rank, hosts, options, error)) {
    std::fprintf(stderr, "petacomm-netbench: error: %s\n", error.c_str());
    status = 2;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
