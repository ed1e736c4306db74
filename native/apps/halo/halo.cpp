// petacomm-halo: halo exchanges on 1-, 2- and 3-D process grids (star and box stencils,
// periodic or open) with several MPI strategies side by side, OSU-style tables, every
// received face checked after every exchange, and mapping files of `petacomm map` as
// input. See docs/halo.md.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "arg_parser.hpp"
#include "exchange.hpp"
#include "face_pattern.hpp"
#include "files.hpp"
#include "json_out.hpp"
#include "mapping_file.hpp"

namespace petacomm::apps::halo {
namespace {

constexpr int kSchemaVersion = 1;
constexpr const char *kProgram = "petacomm-halo";
constexpr long long kMaxMessage = 64LL << 20;  // x 26 faces stays within MPI's int counts
constexpr long long kMaxEdgesInJson = 1000000;
constexpr std::size_t kColumns = 100;  // terminal tables stay within this width

struct Options {
  std::vector<int> dims{2};
  std::string grid;  // explicit logical grid "4x2"
  std::vector<std::string> stencils{"star"};
  std::vector<std::string> periodic{"no"};
  std::vector<std::string> variants;  // empty: all
  std::vector<int> node_sizes{0};     // node-aware variants run once per size (0: whole node)
  std::string size_range = "8:64K", size_list;
  int iterations = 100, warmup = 10;
  bool full = false;
  std::string mapping, mapping_format = "auto", mapping_mode = "reorder";
  std::string json;
};

long long parse_bytes(const std::string &option, const std::string &text) {
  std::string digits = text;
  long long unit = 1;
  if (!digits.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    if (last == 'K' || last == 'M' || last == 'G') {
      unit = last == 'K' ? 1LL << 10 : last == 'M' ? 1LL << 20 : 1LL << 30;
      digits.pop_back();
    }
  }
  const long long n = parse_int(option, digits, 1, kMaxMessage);
  PETACOMM_CHECK_ARG(n * unit <= kMaxMessage, option, ": ", text, " is above the largest message, ",
                     kMaxMessage >> 20, "M");
  return n * unit;
}

std::vector<long long> message_sizes(const Options &o) {
  std::vector<long long> sizes;
  if (!o.size_list.empty()) {
    for (const auto &item : split_list(o.size_list)) sizes.push_back(parse_bytes("--sizes", item));
    PETACOMM_CHECK_ARG(!sizes.empty(), "--sizes: empty list");
    return sizes;
  }
  const auto colon = o.size_range.find(':');
  const long long low =
      colon == std::string::npos ? 1 : parse_bytes("-m", o.size_range.substr(0, colon));
  const long long high =
      parse_bytes("-m", colon == std::string::npos ? o.size_range : o.size_range.substr(colon + 1));
  PETACOMM_CHECK_ARG(low <= high, "-m: MIN must not exceed MAX, got '", o.size_range, "'");
  for (long long s = low; s <= high; s *= 2) sizes.push_back(s);
  return sizes;
}

ArgParser make_parser(Options &o, bool *sizes_given_twice) {
  ArgParser p(kProgram,
              "Halo exchanges on a logical process grid, MPI strategies side by side (OSU\n"
              "conventions: -m, -i, -x, -f), every received face verified after every\n"
              "exchange; a mapping written by `petacomm map` places the logical ranks.");
  p.section("pattern");
  p.option("--dims", "LIST", "grid dimensionalities, each a grid from MPI_Dims_create\n(default 2)",
           [&](const std::string &v) {
             o.dims.clear();
             for (const auto &d : split_list(v))
               o.dims.push_back(static_cast<int>(parse_int("--dims", d, 1, 3)));
             PETACOMM_CHECK_ARG(!o.dims.empty(), "--dims: empty list");
           });
  p.option("--grid", "DIMS", "one explicit logical grid such as 4x2 or 2x2x2 (row-major)",
           [&](const std::string &v) { o.grid = v; });
  p.option("--stencil", "LIST", "star (2d faces), box (3^d - 1), or both: star,box\n(default star)",
           [&](const std::string &v) {
             o.stencils = split_list(v);
             PETACOMM_CHECK_ARG(!o.stencils.empty(), "--stencil: empty list");
             for (const auto &s : o.stencils) parse_choice("--stencil", s, {"star", "box"});
           });
  p.option("--periodic", "LIST",
           "no, yes, or one 0/1 digit per dimension (10 = periodic\nalong the first); a list "
           "runs each (default no)",
           [&](const std::string &v) {
             o.periodic = split_list(v);
             PETACOMM_CHECK_ARG(!o.periodic.empty(), "--periodic: empty list");
           });
  p.section("strategies and sizes");
  p.option("--variants", "LIST",
           "sendrecv, nonblocking, neighbor-cart, neighbor-graph,\npersistent, node (default: all "
           "that apply)",
           [&](const std::string &v) {
             o.variants = split_list(v);
             PETACOMM_CHECK_ARG(!o.variants.empty(), "--variants: empty list");
             for (const auto &name : o.variants) exchanges().require("--variants", name);
           });
  p.option("--node-size", "LIST",
           "ranks per virtual node for the node variant (node.h), one\nrun each: 0 = the whole "
           "shared-memory node, k = nodes\nof k ranks (default 0)",
           [&](const std::string &v) {
             o.node_sizes.clear();
             for (const auto &item : split_list(v))
               o.node_sizes.push_back(static_cast<int>(parse_int("--node-size", item, 0, 1 << 20)));
             PETACOMM_CHECK_ARG(!o.node_sizes.empty(), "--node-size: empty list");
           });
  p.option("-m", "[MIN:]MAX", "message sizes in bytes, doubling (K, M suffixes; default\n8:64K)",
           [&](const std::string &v) {
             o.size_range = v;
             *sizes_given_twice = *sizes_given_twice || !o.size_list.empty();
           });
  p.option("--sizes", "LIST", "message sizes from a list instead, e.g. 100,1000,4K",
           [&](const std::string &v) {
             o.size_list = v;
             *sizes_given_twice = true;
           });
  p.option("-i", "N", "timed exchanges per size (default 100)", [&](const std::string &v) {
    o.iterations = static_cast<int>(parse_int("-i", v, 1, 1000000));
  });
  p.option("-x", "N", "warm-up exchanges per size (default 10)", [&](const std::string &v) {
    o.warmup = static_cast<int>(parse_int("-x", v, 0, 1000000));
  });
  p.flag("-f", "full statistics: min and max over ranks per strategy", &o.full);
  p.section("placement");
  p.option("--mapping", "FILE",
           "rank placement written by petacomm map (rankfile, slurm,\ncsv, "
           "cray, bgp, bgq)",
           [&](const std::string &v) { o.mapping = v; });
  p.option("--mapping-format", "FORMAT", "auto (default) or one of the formats above",
           [&](const std::string &v) {
             std::vector<std::string> choices;
             for (const char *const *f = kMappingFormats; *f; ++f) choices.emplace_back(*f);
             o.mapping_format = parse_choice("--mapping-format", v, choices);
           });
  p.option("--mapping-mode", "MODE",
           "reorder (default): the ranks as launched take the logical\nranks so that those the "
           "file puts on one node are\nconsecutive; launched: the job was started with the "
           "file\n(rank r = logical rank r; hosts are checked)",
           [&](const std::string &v) {
             o.mapping_mode = parse_choice("--mapping-mode", v, {"reorder", "launched"});
           });
  p.section("output");
  p.option("--json", "FILE", "write the figures and the pattern as JSON",
           [&](const std::string &v) { o.json = v; });
  return p;
}

struct Configuration {
  LogicalGrid grid;
  std::string stencil;
};

std::vector<int> parse_dims(const std::string &text, int ranks) {
  std::vector<int> dims;
  for (std::size_t at = 0;;) {
    const auto x = text.find('x', at);
    dims.push_back(static_cast<int>(
        parse_int("--grid", text.substr(at, x == std::string::npos ? std::string::npos : x - at), 1,
                  1 << 24)));
    if (x == std::string::npos) break;
    at = x + 1;
  }
  PETACOMM_CHECK_ARG(dims.size() <= 3, "--grid: at most 3 dimensions, got '", text, "'");
  const long long product =
      std::accumulate(dims.begin(), dims.end(), 1LL, [](long long a, int b) { return a * b; });
  PETACOMM_CHECK_ARG(product == ranks, "--grid: ", text, " holds ", product,
                     " ranks, but the job has ", ranks);
  return dims;
}

std::vector<bool> parse_periodic(const std::string &text, std::size_t ndim) {
  if (text == "no" || text == "open") return std::vector<bool>(ndim, false);
  if (text == "yes" || text == "periodic") return std::vector<bool>(ndim, true);
  PETACOMM_CHECK_ARG(text.size() == ndim && text.find_first_not_of("01") == std::string::npos,
                     "--periodic: expected no, yes or ", ndim, " digits 0/1 for a ", ndim,
                     "-D grid, got '", text, "'");
  std::vector<bool> flags;
  for (char c : text) flags.push_back(c == '1');
  return flags;
}

std::vector<Configuration> configurations(const Options &o, int ranks, bool dims_given) {
  std::vector<std::vector<int>> grids;
  if (!o.grid.empty()) {
    PETACOMM_CHECK_ARG(!dims_given, "--dims: not with --grid (the grid gives the dimensions)");
    grids.push_back(parse_dims(o.grid, ranks));
  } else {
    for (int d : o.dims) {
      std::vector<int> dims(static_cast<std::size_t>(d), 0);
      PETACOMM_APP_MPI(MPI_Dims_create(ranks, d, dims.data()));
      grids.push_back(dims);
    }
  }
  std::vector<Configuration> out;
  for (const auto &dims : grids)
    for (const auto &stencil : o.stencils)
      for (const auto &periodic : o.periodic)
        out.push_back({LogicalGrid{dims, parse_periodic(periodic, dims.size())}, stencil});
  return out;
}

// One strategy as run: node-aware ones once per virtual node size ("node", "node2").
struct Variant {
  std::string name;
  int node_size = -1;  // -1: the strategy knows no nodes
  std::string label() const { return node_size > 0 ? name + std::to_string(node_size) : name; }
};

// The strategies to run, in order; node-aware ones once per --node-size.
std::vector<Variant> variants_of(const Options &o, bool node_size_given) {
  std::vector<std::string> names = o.variants;
  if (names.empty())
    for (const auto *e : exchanges().entries()) names.emplace_back(e->about.name);
  std::vector<Variant> out;
  for (const std::string &name : names) {
    if (!exchanges().require("--variants", name).uses_node_size) {
      out.push_back({name});
      continue;
    }
    for (int k : o.node_sizes) out.push_back({name, k});
  }
  const bool any =
      std::any_of(out.begin(), out.end(), [](const Variant &v) { return v.node_size >= 0; });
  PETACOMM_CHECK_ARG(!node_size_given || any,
                     "--node-size: no variant of this run uses nodes (add node to --variants)");
  return out;
}

// Collective: the lowest failing rank's message (empty when no rank failed).
std::string first_failure(const std::string &local, MPI_Comm comm) {
  try {
    agree_on_error(local, comm);
  } catch (const Error &e) {
    return e.what();
  }
  return {};
}

struct Placement {
  MPI_Comm comm = MPI_COMM_NULL;  // logical rank order
  bool mapped = false;
  MappingFile file;
  std::vector<int> launched_rank;  // per logical rank: the rank it had at launch
  std::string note;
};

Placement place_ranks(const Options &o, MPI_Comm world) {
  Placement p;
  if (o.mapping.empty()) {
    PETACOMM_APP_MPI(MPI_Comm_dup(world, &p.comm));
    return p;
  }
  int rank = 0, ranks = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(world, &rank));
  PETACOMM_APP_MPI(MPI_Comm_size(world, &ranks));
  std::string error;
  try {
    p.file = read_mapping(o.mapping, o.mapping_format, world);
  } catch (const Error &e) {
    error = e.what();
  }
  agree_on_error(error, world);
  p.mapped = true;
  if (o.mapping_mode == "reorder") {
    // Launched ranks fill nodes in order; logical ranks sharing a node of the file become
    // consecutive ranks, so they share a node (or a virtual node) as the file says.
    std::vector<int> order(static_cast<std::size_t>(ranks));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
      return std::make_pair(p.file.node[ua], p.file.core[ua]) <
             std::make_pair(p.file.node[ub], p.file.core[ub]);
    });
    PETACOMM_APP_MPI(MPI_Comm_split(world, 0, order[static_cast<std::size_t>(rank)], &p.comm));
    p.launched_rank.resize(order.size());
    for (std::size_t w = 0; w < order.size(); ++w)
      p.launched_rank[static_cast<std::size_t>(order[w])] = static_cast<int>(w);
    p.note = "reordered: each node of the file holds consecutive launched ranks";
    return p;
  }
  PETACOMM_APP_MPI(MPI_Comm_dup(world, &p.comm));
  p.launched_rank.resize(static_cast<std::size_t>(ranks));
  std::iota(p.launched_rank.begin(), p.launched_rank.end(), 0);
  const std::string &want = p.file.host[static_cast<std::size_t>(rank)];
  if (want.empty()) {
    p.note = "launched with the file; its " + p.file.format + " format names no hosts to check";
    return p;
  }
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  PETACOMM_APP_MPI(MPI_Get_processor_name(name, &length));
  const std::string here(name, static_cast<std::size_t>(length));
  auto short_name = [](const std::string &h) { return h.substr(0, h.find('.')); };
  if (short_name(here) != short_name(want))
    error = "--mapping: rank " + std::to_string(rank) + " runs on host '" + here + "' but " +
            o.mapping + " places it on '" + want +
            "' (launch with the file, e.g. mpiexec --map-by rankfile:file=" + o.mapping +
            ", or use --mapping-mode reorder)";
  agree_on_error(error, world);
  p.note = "launched with the file; every rank runs on the host it names";
  return p;
}

struct Row {
  std::string variant;  // its label
  int node_size = -1;
  long long bytes = 0;
  double avg_us = 0, min_us = 0, max_us = 0;
  // Under a global clock (global_span), else NaN (JSON null).
  double span_us = std::nan(""), start_spread_us = std::nan("");
  long long faces_verified = 0;
  long long messages_in_node = -1;  // per exchange, all ranks (node-aware variants)
};

struct ConfigResult {
  Configuration config;
  std::vector<std::string> variants;  // run, in order
  std::vector<std::pair<std::string, std::string>> skipped;
  std::vector<Row> rows;
  long long messages = 0, self_messages = 0, internode_messages = 0;
  std::vector<std::pair<int, int>> edges;  // network messages of one exchange (rank 0 only)
  bool edges_complete = true;
};

// Counts of one exchange over all ranks (computed on every rank from the grid alone).
void count_messages(ConfigResult &r, const Placement &placement, int ranks) {
  const long long faces = static_cast<long long>(
      stencil_offsets(static_cast<int>(r.config.grid.dims.size()), r.config.stencil).size());
  r.edges_complete = faces * ranks <= kMaxEdgesInJson;
  for (int q = 0; q < ranks; ++q) {
    const Neighbours n = neighbours(r.config.grid, r.config.stencil, q);
    for (int to : n.send_to) {
      if (to < 0) continue;
      if (to == q) {
        ++r.self_messages;
        continue;
      }
      ++r.messages;
      if (r.edges_complete) r.edges.emplace_back(q, to);
      if (placement.mapped && placement.file.node[static_cast<std::size_t>(q)] !=
                                  placement.file.node[static_cast<std::size_t>(to)])
        ++r.internode_messages;
    }
  }
}

// Runs one strategy at one size; returns the verification failure of this rank, if any.
// After a failure the exchanges go on unchecked, so every rank makes the same collective
// calls and the failure is reported together.
std::string run_strategy(const ExchangeEntry &entry, const HaloSetup &setup, const Options &o,
                         const Neighbours &n, int me, Row &row) {
  const std::size_t faces = n.offsets.size(), bytes = setup.bytes;
  std::unique_ptr<HaloExchange> exchange = entry.make(setup);
  unsigned char *send = exchange->send_buffer(setup), *recv = exchange->recv_buffer(setup);
  double spent = 0;
  std::vector<double> starts, ends;
  std::string failure;
  const int exchanges = o.warmup + o.iterations;
  for (int e = 0; e < exchanges; ++e) {
    for (std::size_t k = 0; k < faces; ++k)
      if (n.send_to[k] >= 0) fill_face(send + k * bytes, bytes, me, static_cast<int>(k), e);
    std::fill(recv, recv + faces * bytes, kUntouched);
    exchange->synchronize(setup.comm);
    const double t = MPI_Wtime();
    exchange->exchange();
    if (e >= o.warmup) {
      starts.push_back(t);
      ends.push_back(MPI_Wtime());
      spent += ends.back() - t;
    }
    for (std::size_t k = 0; k < faces && failure.empty(); ++k) {
      const unsigned char *face = recv + k * bytes;
      std::string wrong;
      if (n.recv_from[k] >= 0) {
        wrong = check_face(face, bytes, n.recv_from[k], static_cast<int>(k), e);
        ++row.faces_verified;
      } else if (std::any_of(face, face + bytes, [](unsigned char c) { return c != kUntouched; })) {
        wrong = "written although there is no neighbour there";
      }
      if (!wrong.empty()) {
        std::string offset;
        for (int c : n.offsets[k]) offset += (offset.empty() ? "" : ",") + std::to_string(c);
        failure =
            concat("verification failed: ", entry.about.name, " at ", bytes, " B, exchange ", e,
                   ": rank ", me, ", face (", offset, ") from rank ", n.recv_from[k], ": ", wrong);
      }
    }
  }
  row.avg_us = 1e6 * spent / o.iterations;
  if (clock_is_global()) {
    const Span span = global_span(starts, ends, setup.comm);
    row.span_us = 1e6 * span.last_start_to_last_end;
    row.start_spread_us = 1e6 * span.start_spread;
  }
  const long long in_node = exchange->messages_in_node();
  row.messages_in_node = in_node < 0 ? -1 : in_node / exchanges;
  return failure;
}

void print_config(const Options &o, int ranks, const ConfigResult &r, const Placement &placement) {
  const LogicalGrid &g = r.config.grid;
  const std::size_t faces =
      stencil_offsets(static_cast<int>(g.dims.size()), r.config.stencil).size();
  std::printf("# %s: %zu-D %s halo (%zu faces), grid %s %s, %d ranks\n", kProgram, g.dims.size(),
              r.config.stencil.c_str(), faces, g.dims_text().c_str(), g.periodic_text().c_str(),
              ranks);
  std::string pattern = pattern_text(g, r.config.stencil, 0);
  pattern.replace(pattern.size() - 1, 1, "SIZE");
  std::printf("# pattern: %s\n", pattern.c_str());
  std::printf("# messages per exchange: %lld between ranks, %lld to self", r.messages,
              r.self_messages);
  if (placement.mapped)
    std::printf(", %lld between the %d nodes of the mapping", r.internode_messages,
                placement.file.nodes());
  std::printf("\n");
  for (const auto &[name, why] : r.skipped)
    std::printf("# %s: not run (%s)\n", name.c_str(), why.c_str());
  std::vector<long long> sizes;
  for (const Row &row : r.rows)
    if (std::find(sizes.begin(), sizes.end(), row.bytes) == sizes.end()) sizes.push_back(row.bytes);
  // One column per variant; as many tables as it takes to stay within kColumns.
  std::size_t first = 0;
  while (first < r.variants.size()) {
    std::size_t last = first, width = 10;
    for (; last < r.variants.size(); ++last) {
      const std::size_t column = 1 + std::max<std::size_t>(r.variants[last].size() + 4, 10);
      if (last > first && width + column > kColumns) break;
      width += column;
    }
    std::printf("%-10s", "# Size");
    for (std::size_t v = first; v < last; ++v)
      std::printf(" %*s", static_cast<int>(std::max<std::size_t>(r.variants[v].size() + 4, 10)),
                  (r.variants[v] + "(us)").c_str());
    std::printf("\n");
    for (long long size : sizes) {
      std::printf("%-10lld", size);
      for (std::size_t v = first; v < last; ++v)
        for (const Row &row : r.rows)
          if (row.bytes == size && row.variant == r.variants[v])
            std::printf(" %*.2f",
                        static_cast<int>(std::max<std::size_t>(r.variants[v].size() + 4, 10)),
                        row.avg_us);
      std::printf("\n");
    }
    first = last;
  }
  if (o.full)
    for (const auto &v : r.variants) {
      std::printf("# %s, over ranks\n%-10s %16s %16s %16s %10s\n", v.c_str(), "# Size",
                  "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations");
      for (const Row &row : r.rows)
        if (row.variant == v)
          std::printf("%-10lld %16.2f %16.2f %16.2f %10d\n", row.bytes, row.avg_us, row.min_us,
                      row.max_us, o.iterations);
    }
  for (const auto &v : r.variants)
    for (const Row &row : r.rows)
      if (row.variant == v && row.messages_in_node >= 0) {
        std::printf("# %s: %lld of the %lld messages per exchange within a node (node size %s)\n",
                    v.c_str(), row.messages_in_node, r.messages + r.self_messages,
                    row.node_size > 0 ? std::to_string(row.node_size).c_str() : "whole");
        break;
      }
  long long verified = 0;
  for (const Row &row : r.rows) verified += row.faces_verified;
  std::printf(
      "# us: time of one exchange on a rank, mean over ranks; verified %lld received "
      "faces (all)\n\n",
      verified);
}

void write_json(const Options &o, int ranks, const std::vector<ConfigResult> &results,
                const Placement &placement) {
  JsonOut j;
  j.begin_object().value("schema", "petacomm.halo").value("schema_version", kSchemaVersion);
  j.value("ranks", ranks).value("iterations", o.iterations).value("warmup", o.warmup);
  if (placement.mapped) {
    const MappingFile &m = placement.file;
    j.begin_object("mapping")
        .value("file", m.path)
        .value("format", m.format)
        .value("mode", o.mapping_mode)
        .value("note", placement.note)
        .value("nodes", m.nodes());
    j.begin_array("node_of_rank");
    for (int n : m.node) j.value(n);
    j.end_array().begin_array("core_of_rank");
    for (int c : m.core) j.value(c);
    j.end_array().begin_array("launched_rank_of_rank");
    for (int w : placement.launched_rank) j.value(w);
    j.end_array().end_object();
  } else {
    j.raw("mapping", "null");
  }
  // The whole run in the pattern language, at the largest size: one configuration as it is,
  // several as phases (they run one after the other), so `petacomm map --pattern-file`
  // maps what was measured.
  std::string whole;
  for (std::size_t c = 0; c < results.size(); ++c) {
    const ConfigResult &r = results[c];
    long long largest = 0;
    for (const Row &row : r.rows) largest = std::max(largest, row.bytes);
    const std::string one = pattern_text(r.config.grid, r.config.stencil, largest);
    whole += results.size() == 1 ? one : (c ? "; " : "") + concat("phase c", c + 1, " ", one);
  }
  j.value("pattern", whole);
  j.begin_array("configurations");
  for (const ConfigResult &r : results) {
    const LogicalGrid &g = r.config.grid;
    j.begin_object();
    j.begin_array("grid");
    for (int d : g.dims) j.value(d);
    j.end_array().begin_array("periodic");
    for (bool p : g.periodic) j.value(p ? 1 : 0);
    j.end_array();
    j.value("stencil", r.config.stencil);
    j.begin_array("offsets");
    for (const Offset &off : stencil_offsets(static_cast<int>(g.dims.size()), r.config.stencil)) {
      j.begin_array();
      for (int c : off) j.value(c);
      j.end_array();
    }
    j.end_array();
    long long largest = 0;
    for (const Row &row : r.rows) largest = std::max(largest, row.bytes);
    j.value("pattern", pattern_text(g, r.config.stencil, largest));
    j.value("messages_per_exchange", static_cast<std::int64_t>(r.messages))
        .value("self_messages_per_exchange", static_cast<std::int64_t>(r.self_messages));
    if (placement.mapped)
      j.value("internode_messages_per_exchange", static_cast<std::int64_t>(r.internode_messages));
    if (r.edges_complete) {
      j.begin_array("edges");
      for (const auto &[a, b] : r.edges) j.begin_array().value(a).value(b).end_array();
      j.end_array();
    } else {
      j.raw("edges", "null");
    }
    j.begin_array("skipped");
    for (const auto &[name, why] : r.skipped)
      j.begin_object().value("variant", name).value("reason", why).end_object();
    j.end_array().begin_array("results");
    for (const Row &row : r.rows) {
      j.begin_object()
          .value("variant", row.variant)
          .value("bytes", static_cast<std::int64_t>(row.bytes))
          .value("pattern", pattern_text(g, r.config.stencil, row.bytes))
          .value("avg_us", row.avg_us)
          .value("min_us", row.min_us)
          .value("max_us", row.max_us)
          .value("span_us", row.span_us)
          .value("start_spread_us", row.start_spread_us)
          .value("faces_verified", static_cast<std::int64_t>(row.faces_verified));
      if (row.node_size >= 0)
        j.value("node_size", row.node_size)
            .value("messages_in_node_per_exchange",
                   static_cast<std::int64_t>(row.messages_in_node));
      j.end_object();
    }
    j.end_array().end_object();
  }
  j.end_array().end_object();
  write_file_atomic(o.json, j.str() + "\n", "--json");
}

int run(int argc, char **argv) {
  MPI_Comm world = MPI_COMM_WORLD;
  int world_rank = 0, ranks = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(world, &world_rank));
  PETACOMM_APP_MPI(MPI_Comm_size(world, &ranks));
  Options o;
  bool sizes_twice = false;
  ArgParser parser = make_parser(o, &sizes_twice);
  std::string error;
  bool help = false;
  std::vector<Configuration> configs;
  std::vector<long long> sizes;
  std::vector<Variant> variants;
  try {
    help = !parser.parse(argc, argv);
    if (!help) {
      PETACOMM_CHECK_ARG(!(parser.given("-m") && parser.given("--sizes")),
                         "--sizes: not with -m (give the sizes one way)");
      sizes = message_sizes(o);
      configs = configurations(o, ranks, parser.given("--dims"));
      variants = variants_of(o, parser.given("--node-size"));
      if (world_rank == 0) check_parent_writable(o.json, "--json");
    }
  } catch (const Error &e) {
    error = e.what();
  }
  agree_on_error(error, world);
  if (help) {
    if (world_rank == 0) std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  Placement placement = place_ranks(o, world);
  MPI_Comm comm = placement.comm;
  int me = 0;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &me));
  const long long largest = *std::max_element(sizes.begin(), sizes.end());

  std::vector<ConfigResult> results;
  std::string failure;
  for (const Configuration &config : configs) {
    ConfigResult r;
    r.config = config;
    count_messages(r, placement, ranks);
    const Neighbours n = neighbours(config.grid, config.stencil, me);
    const std::size_t faces = n.offsets.size();
    std::vector<unsigned char> send(faces * static_cast<std::size_t>(largest));
    std::vector<unsigned char> recv(send.size());
    for (const Variant &variant : variants) {
      const ExchangeEntry &entry = exchanges().require("--variants", variant.name);
      HaloSetup setup{comm, &config.grid, config.stencil, &n,
                      0,    send.data(),  recv.data(),    std::max(variant.node_size, 0)};
      setup.launched = world;
      if (placement.mapped) setup.launched_rank = &placement.launched_rank;
      const std::string why = entry.not_applicable(setup);
      if (!why.empty()) {
        r.skipped.emplace_back(variant.label(), why);
        continue;
      }
      r.variants.push_back(variant.label());
      for (long long bytes : sizes) {
        setup.bytes = static_cast<std::size_t>(bytes);
        Row row;
        row.variant = variant.label();
        row.node_size = variant.node_size;
        row.bytes = bytes;
        failure = first_failure(run_strategy(entry, setup, o, n, me, row), comm);
        double mine[2] = {row.avg_us, -row.avg_us}, extreme[2] = {0, 0}, sum = 0;
        long long verified = 0;
        PETACOMM_APP_MPI(MPI_Reduce(mine, extreme, 2, MPI_DOUBLE, MPI_MAX, 0, comm));
        PETACOMM_APP_MPI(MPI_Reduce(&row.avg_us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm));
        PETACOMM_APP_MPI(
            MPI_Reduce(&row.faces_verified, &verified, 1, MPI_LONG_LONG, MPI_SUM, 0, comm));
        if (row.messages_in_node >= 0) {
          long long in_node = 0;
          PETACOMM_APP_MPI(
              MPI_Reduce(&row.messages_in_node, &in_node, 1, MPI_LONG_LONG, MPI_SUM, 0, comm));
          row.messages_in_node = in_node;
        }
        row.max_us = extreme[0];
        row.min_us = -extreme[1];
        row.avg_us = sum / ranks;
        row.faces_verified = verified;
        r.rows.push_back(row);
        if (!failure.empty()) break;
      }
      if (!failure.empty()) break;
    }
    results.push_back(std::move(r));
    if (!failure.empty()) break;
  }
  if (me == 0) {
    if (failure.empty()) {
      for (const ConfigResult &r : results) print_config(o, ranks, r, placement);
      if (placement.mapped)
        std::printf("# mapping %s (%s): %s\n", o.mapping.c_str(), placement.file.format.c_str(),
                    placement.note.c_str());
    }
    try {
      if (!o.json.empty() && failure.empty()) write_json(o, ranks, results, placement);
    } catch (const Error &e) {
      error = e.what();
    }
  }
  PETACOMM_APP_MPI(MPI_Comm_free(&comm));
  agree_on_error(error, world);
  if (!failure.empty()) {
    if (world_rank == 0) std::fprintf(stderr, "%s: error: %s\n", kProgram, failure.c_str());
    return 3;
  }
  return 0;
}

}  // namespace
}  // namespace petacomm::apps::halo

int main(int argc, char **argv) {
  return petacomm::apps::main_of_app(petacomm::apps::halo::kProgram, argc, argv,
                                     petacomm::apps::halo::run);
}
