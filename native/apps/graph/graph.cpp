// petacomm-graph: the messages of a traffic matrix (the src,dst,bytes CSV files that
// `petacomm map --matrix` reads and `python -m petacomm.topology.irregular_graphs` writes)
// exchanged as one phase, again and again, and timed as petacomm-halo times a halo: a
// barrier, then every rank posts all its receives and sends at once and waits for them. It
// runs an irregular pattern that `petacomm map` predicts on a real machine or, built with
// smpicxx, on a simulated one (`petacomm simulate graph`). See docs/simulate.md.
#include <mpi.h>  // under SMPI, smpi.h: SMPI_SHARED_MALLOC

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "arg_parser.hpp"
#include "files.hpp"
#include "json_out.hpp"

namespace petacomm::apps::graph {
namespace {

constexpr int kSchemaVersion = 1;
constexpr const char *kProgram = "petacomm-graph";
constexpr int kTag = 7;

struct Options {
  std::string matrix, json;
  int iterations = 20, warmup = 2;
};

// One rank's side of the matrix: what it sends and receives, by partner, bytes summed over
// the file's rows of the same pair (as `petacomm map` folds them); and counts over all ranks.
struct Traffic {
  std::vector<std::pair<int, long long>> sends, recvs;  // (partner, bytes), partner order
  long long messages = 0, bytes = 0, self_rows = 0;     // the whole matrix, per exchange;
                                                        // messages on rank 0 only (it reports)
  int highest_rank = -1;
};

bool blank_or_comment(const std::string &line) {
  const auto first = line.find_first_not_of(" \t\r");
  return first == std::string::npos || line[first] == '#';
}

// Splits "a,b,c" into exactly three trimmed cells; false otherwise.
bool three_cells(const std::string &line, std::string cells[3]) {
  std::size_t start = 0;
  for (int k = 0; k < 3; ++k) {
    const std::size_t comma = line.find(',', start);
    if ((k < 2) == (comma == std::string::npos)) return false;
    std::string cell = line.substr(start, k < 2 ? comma - start : std::string::npos);
    const auto a = cell.find_first_not_of(" \t\r"), b = cell.find_last_not_of(" \t\r");
    cells[k] = a == std::string::npos ? "" : cell.substr(a, b - a + 1);
    start = comma + 1;
  }
  return true;
}

// Every rank reads the whole file (the same checks, so every rank fails alike) and keeps
// its own rows; the errors name --matrix and the line.
Traffic read_matrix(const std::string &path, int me, int ranks) {
  std::ifstream in(path);
  PETACOMM_CHECK_ARG(in.good(), "--matrix: cannot read '", path, "'");
  Traffic t;
  std::map<int, long long> sends, recvs;
  // Distinct (src, dst) over the whole file, counted by rank 0 alone: under SMPI every rank
  // is a thread of one process, and 1,024 copies of this set would be built for one count.
  std::map<std::pair<int, int>, char> pairs;
  std::string line, cells[3];
  long long lineno = 0;
  bool header_allowed = true;
  while (std::getline(in, line)) {
    ++lineno;
    if (blank_or_comment(line)) continue;
    const std::string where = concat("--matrix: ", path, ", line ", lineno, ": ");
    PETACOMM_CHECK_ARG(three_cells(line, cells), where,
                       "expected SRC,DST,BYTES (three comma-separated cells), got '", line, "'");
    if (header_allowed && cells[0] == "src" && cells[1] == "dst" && cells[2] == "bytes") {
      header_allowed = false;
      continue;
    }
    header_allowed = false;
    int rank[2];
    for (int k = 0; k < 2; ++k) {
      char *end = nullptr;
      errno = 0;
      const long value = std::strtol(cells[k].c_str(), &end, 10);
      PETACOMM_CHECK_ARG(!cells[k].empty() && *end == '\0' && errno == 0 && value >= 0, where,
                         k ? "DST" : "SRC", ": expected a rank >= 0, got '", cells[k], "'");
      PETACOMM_CHECK_ARG(value < ranks, where, k ? "DST" : "SRC", " ", value,
                         " is not a rank of this run of ", ranks, " ranks");
      rank[k] = static_cast<int>(value);
    }
    char *end = nullptr;
    const double bytes = std::strtod(cells[2].c_str(), &end);
    PETACOMM_CHECK_ARG(!cells[2].empty() && *end == '\0' && std::isfinite(bytes) && bytes >= 0,
                       where, "BYTES: expected a number >= 0, got '", cells[2], "'");
    t.highest_rank = std::max({t.highest_rank, rank[0], rank[1]});
    if (rank[0] == rank[1]) {  // no message: petacomm map drops them too
      ++t.self_rows;
      continue;
    }
    // A row alone over an int count is refused here: rounding 1e19 to a long long wraps.
    PETACOMM_CHECK_ARG(bytes <= INT_MAX, where, "BYTES: ", cells[2],
                       " bytes exceed one MPI message's int count");
    const long long whole = std::llround(bytes);
    if (rank[0] == me) sends[rank[1]] += whole;
    if (rank[1] == me) recvs[rank[0]] += whole;
    if (me == 0 && pairs.emplace(std::make_pair(rank[0], rank[1]), 0).second) ++t.messages;
    t.bytes += whole;
  }
  PETACOMM_CHECK_ARG(!in.bad(), "--matrix: error reading '", path, "'");
  PETACOMM_CHECK_ARG(t.highest_rank >= 0, "--matrix: ", path, " holds no SRC,DST,BYTES row");
  for (const auto *side : {&sends, &recvs})
    for (const auto &[partner, bytes] : *side)
      PETACOMM_CHECK_ARG(bytes <= INT_MAX, "--matrix: ", path, ": ", bytes, " bytes between ranks ",
                         me, " and ", partner, " exceed one MPI message's int count");
  t.sends.assign(sends.begin(), sends.end());
  t.recvs.assign(recvs.begin(), recvs.end());
  return t;
}

// Byte i of the message from `src` to `dst` in exchange `e`: a receiver checks every byte,
// so data from the wrong sender, for another rank or of an earlier exchange fails.
unsigned char pattern_byte(int src, int dst, int e, long long i) {
  return static_cast<unsigned char>((src * 7 + dst * 13 + e * 29 + i) ^ 0x5A);
}

// Message buffers. Under SMPI they are SimGrid's shared memory: every simulated rank runs
// in one process, and a graph of 1 MiB messages on 1,024 ranks would need gigabytes; the
// data are then not real and are not checked.
class Buffer {
 public:
  explicit Buffer(long long bytes) : bytes_(std::max(bytes, 1LL)) {
#ifdef PETACOMM_SMPI
    data_ = static_cast<unsigned char *>(SMPI_SHARED_MALLOC(bytes_));
#else
    data_ = static_cast<unsigned char *>(std::malloc(bytes_));
#endif
    if (data_ == nullptr) throw Error(PETACOMM_ERR_NOMEM, concat("cannot allocate ", bytes_, " B"));
  }
  ~Buffer() {
#ifdef PETACOMM_SMPI
    SMPI_SHARED_FREE(data_);
#else
    std::free(data_);
#endif
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  unsigned char *data() { return data_; }

 private:
  long long bytes_;
  unsigned char *data_ = nullptr;
};

#ifdef PETACOMM_SMPI
constexpr bool kVerify = false;
#else
constexpr bool kVerify = true;
#endif

struct Result {
  double avg_us = 0;  // this rank's mean exchange
  // Under a global clock (global_span), means over the exchanges; else NaN (JSON null).
  double span_us = std::nan(""), start_spread_us = std::nan("");
  long long verified = 0;
  std::string failure;
};

Result run_exchanges(const Traffic &t, const Options &o, int me, MPI_Comm comm) {
  long long out = 0, in = 0;
  for (const auto &s : t.sends) out += s.second;
  for (const auto &r : t.recvs) in += r.second;
  Buffer send(out), recv(in);
  std::vector<MPI_Request> requests(t.sends.size() + t.recvs.size());
  Result r;
  std::vector<double> starts, ends;
  double spent = 0;
  for (int e = 0; e < o.warmup + o.iterations; ++e) {
    if (kVerify) {
      long long at = 0;
      for (const auto &[dst, bytes] : t.sends)
        for (long long i = 0; i < bytes; ++i) send.data()[at++] = pattern_byte(me, dst, e, i);
    }
    PETACOMM_APP_MPI(MPI_Barrier(comm));
    const double start = MPI_Wtime();
    std::size_t k = 0;
    long long at = 0;
    for (const auto &[src, bytes] : t.recvs) {
      PETACOMM_APP_MPI(MPI_Irecv(recv.data() + at, static_cast<int>(bytes), MPI_BYTE, src, kTag,
                                 comm, &requests[k++]));
      at += bytes;
    }
    at = 0;
    for (const auto &[dst, bytes] : t.sends) {
      PETACOMM_APP_MPI(MPI_Isend(send.data() + at, static_cast<int>(bytes), MPI_BYTE, dst, kTag,
                                 comm, &requests[k++]));
      at += bytes;
    }
    PETACOMM_APP_MPI(
        MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
    if (e >= o.warmup) {
      starts.push_back(start);
      ends.push_back(MPI_Wtime());
      spent += ends.back() - start;
    }
    if (!kVerify || !r.failure.empty()) continue;
    at = 0;
    for (const auto &[src, bytes] : t.recvs) {
      for (long long i = 0; i < bytes && r.failure.empty(); ++i)
        if (recv.data()[at + i] != pattern_byte(src, me, e, i))
          r.failure = concat("verification failed: exchange ", e, ": rank ", me,
                             ", message from rank ", src, ": byte ", i, " of ", bytes, " is wrong");
      at += bytes;
      if (r.failure.empty()) ++r.verified;
    }
  }
  r.avg_us = 1e6 * spent / o.iterations;
  if (clock_is_global()) {
    const Span span = global_span(starts, ends, comm);
    r.span_us = 1e6 * span.last_start_to_last_end;
    r.start_spread_us = 1e6 * span.start_spread;
  }
  return r;
}

ArgParser make_parser(Options &o) {
  ArgParser p(kProgram,
              "The messages of a traffic matrix exchanged as one phase: a barrier, then\n"
              "every rank posts all its receives and sends and waits (each received byte\n"
              "checked, except under SMPI). Reports one exchange's time on a rank: mean,\n"
              "minimum and maximum over ranks; on a global clock also the span from the\n"
              "last rank's start to the last rank's end.");
  p.option("--matrix", "FILE",
           "CSV of SRC,DST,BYTES rows (an optional src,dst,bytes header,\n# comments), as "
           "written by petacomm.topology.irregular_graphs;\nrepeated pairs are summed, rows "
           "from a rank to itself skipped",
           [&](const std::string &v) { o.matrix = v; });
  p.option("-i", "N", "timed exchanges (default 20)", [&](const std::string &v) {
    o.iterations = static_cast<int>(parse_int("-i", v, 1, 1000000));
  });
  p.option("-x", "N", "warm-up exchanges (default 2)", [&](const std::string &v) {
    o.warmup = static_cast<int>(parse_int("-x", v, 0, 1000000));
  });
  p.option("--json", "FILE", "results as JSON (schema petacomm.graph)",
           [&](const std::string &v) { o.json = v; });
  return p;
}

void write_json(const Options &o, int ranks, const Traffic &t, const double times[3],
                const Result &r, long long verified) {
  JsonOut j;
  j.begin_object().value("schema", "petacomm.graph").value("schema_version", kSchemaVersion);
  j.value("ranks", ranks).value("iterations", o.iterations).value("warmup", o.warmup);
  j.value("matrix", o.matrix)
      .value("matrix_ranks", t.highest_rank + 1)
      .value("messages_per_exchange", static_cast<std::int64_t>(t.messages))
      .value("bytes_per_exchange", static_cast<std::int64_t>(t.bytes))
      .value("self_rows_skipped", static_cast<std::int64_t>(t.self_rows))
      .value("max_us", times[0])
      .value("avg_us", times[1])
      .value("min_us", times[2])
      .value("clock_is_global", !std::isnan(r.span_us))
      .value("span_us", r.span_us)
      .value("start_spread_us", r.start_spread_us);
  j.value("verified", kVerify).value("messages_verified", static_cast<std::int64_t>(verified));
  j.end_object();
  write_file_atomic(o.json, j.str() + "\n", "--json");
}

int run(int argc, char **argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int me = 0, ranks = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &me));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &ranks));
  Options o;
  ArgParser parser = make_parser(o);
  std::string error;
  bool help = false;
  Traffic traffic;
  try {
    help = !parser.parse(argc, argv);
    if (!help) {
      PETACOMM_CHECK_ARG(!o.matrix.empty(), "--matrix: required (the traffic matrix to run)");
      if (me == 0) check_parent_writable(o.json, "--json");
      traffic = read_matrix(o.matrix, me, ranks);
    }
  } catch (const Error &e) {
    error = e.what();
  }
  agree_on_error(error, comm);
  if (help) {
    if (me == 0) std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  Result r = run_exchanges(traffic, o, me, comm);
  try {
    agree_on_error(r.failure, comm);
  } catch (const Error &e) {
    if (me == 0) std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return 3;
  }
  double mine[2] = {r.avg_us, -r.avg_us}, extreme[2] = {0, 0}, sum = 0;
  long long verified = 0;
  PETACOMM_APP_MPI(MPI_Reduce(mine, extreme, 2, MPI_DOUBLE, MPI_MAX, 0, comm));
  PETACOMM_APP_MPI(MPI_Reduce(&r.avg_us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm));
  PETACOMM_APP_MPI(MPI_Reduce(&r.verified, &verified, 1, MPI_LONG_LONG, MPI_SUM, 0, comm));
  if (me == 0) {
    const double times[3] = {extreme[0], sum / ranks, -extreme[1]};
    std::printf("# %s: %s on %d ranks: %lld messages, %lld B per exchange\n", kProgram,
                o.matrix.c_str(), ranks, traffic.messages, traffic.bytes);
    std::printf("%-12s %14s %14s %14s %10s\n", "exchange", "avg (us)", "min (us)", "max (us)",
                "iterations");
    std::printf("%-12s %14.2f %14.2f %14.2f %10d\n", "one phase", times[1], times[2], times[0],
                o.iterations);
    if (!std::isnan(r.span_us))
      std::printf(
          "# global clock: %.2f us from the last rank's start to the last end; the "
          "starts spread over %.2f us\n",
          r.span_us, r.start_spread_us);
    if (kVerify)
      std::printf("# us: one exchange on a rank, over ranks; verified %lld received messages\n",
                  verified);
    else
      std::printf("# us: one exchange on a rank, over ranks; data not checked (SMPI)\n");
    try {
      if (!o.json.empty()) write_json(o, ranks, traffic, times, r, verified);
    } catch (const Error &e) {
      error = e.what();
    }
  }
  agree_on_error(error, comm);
  return 0;
}

}  // namespace
}  // namespace petacomm::apps::graph

int main(int argc, char **argv) {
  return petacomm::apps::main_of_app(petacomm::apps::graph::kProgram, argc, argv,
                                     petacomm::apps::graph::run);
}
