// petacomm-sweep3d: discrete-ordinates neutron transport by the KBA wavefront sweep (the
// application of the Roadrunner study), run on one or several process grids and transports
// in one launch, with the pipeline model's prediction next to every measurement.
// See docs/sweep3d.md.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "arg_parser.hpp"
#include "files.hpp"
#include "json_out.hpp"
#include "pipeline_model.hpp"
#include "solver.hpp"

namespace petacomm::apps::sweep3d {
namespace {

constexpr int kSchemaVersion = 1;
constexpr const char *kProgram = "petacomm-sweep3d";

struct Options {
  ProblemSize size;
  Physics physics;
  Iteration iteration;
  std::string procs = "auto";
  std::string transport = "nonblocking";
  std::vector<int> node_sizes{0};
  std::string flux, json;
  MessageCost cost = default_message_cost();
  bool quiet = false;
};

struct Case {
  ProcessGrid grid;
  std::string transport;
  int node_size = -1;  // node-aware transports: ranks per virtual node (0: layer default)
};

ProblemSize parse_problem_grid(const std::string &text, ProblemSize size) {
  const auto items = [&] {
    std::vector<std::string> parts;
    std::size_t at = 0;
    for (;;) {
      const auto x = text.find('x', at);
      parts.push_back(text.substr(at, x == std::string::npos ? std::string::npos : x - at));
      if (x == std::string::npos) return parts;
      at = x + 1;
    }
  }();
  PETACOMM_CHECK_ARG(items.size() == 3, "--grid: expected IxJxK such as 32x32x32, got '", text,
                     "'");
  size.I = static_cast<int>(parse_int("--grid", items[0], 1, 1 << 20));
  size.J = static_cast<int>(parse_int("--grid", items[1], 1, 1 << 20));
  size.K = static_cast<int>(parse_int("--grid", items[2], 1, 1 << 20));
  return size;
}

ArgParser make_parser(Options &o, std::string &grid_text) {
  ArgParser p(kProgram,
              "Discrete-ordinates transport sweep (Sweep3D's KBA wavefront): the I x J plane on\n"
              "a Px x Py process grid, K in blocks of mk planes, directions in blocks of mmi,\n"
              "8 octants, diamond differencing, source iteration. Prints time per iteration,\n"
              "grind time, communication share and the pipeline model's prediction.");
  p.section("problem");
  p.option("--grid", "IxJxK", "global cells (default 32x32x32)",
           [&](const std::string &v) { grid_text = v; });
  p.option("--mk", "N", "K planes per block; must divide K (default 4)", [&](const std::string &v) {
    o.size.mk = static_cast<int>(parse_int("--mk", v, 1, 1 << 20));
  });
  p.option("--angles", "N", "directions per octant (default 6)", [&](const std::string &v) {
    o.size.angles = static_cast<int>(parse_int("--angles", v, 1, 1 << 16));
  });
  p.option("--mmi", "N", "directions per block; must divide --angles (default 3)",
           [&](const std::string &v) {
             o.size.mmi = static_cast<int>(parse_int("--mmi", v, 1, 1 << 16));
           });
  p.option("--sigma-t", "X", "base total cross-section, 1/cm (default 1)",
           [&](const std::string &v) { o.physics.sigma_t = parse_real("--sigma-t", v, 0, 1e12); });
  p.option("--scattering-ratio", "C", "sigma_s / sigma_t in [0, 1) (default 0.5)",
           [&](const std::string &v) {
             o.physics.scattering_ratio = parse_real("--scattering-ratio", v, 0, 1);
           });
  p.option("--cell-size", "CM", "cell edge, cm (default 1)", [&](const std::string &v) {
    o.physics.cell_size = parse_real("--cell-size", v, 0, 1e12);
  });
  p.flag("--fixup", "negative-flux fixup of the diamond difference", &o.physics.fixup);
  p.section("iterations");
  p.option("--iterations", "N", "source iterations (default 10)", [&](const std::string &v) {
    o.iteration.iterations = static_cast<int>(parse_int("--iterations", v, 1, 1 << 30));
  });
  p.option(
      "--tolerance", "T", "iterate until max|dphi| / max|phi| < T instead (up to --max-iterations)",
      [&](const std::string &v) { o.iteration.tolerance = parse_real("--tolerance", v, 0, 1); });
  p.option(
      "--max-iterations", "N", "cap with --tolerance (default 100)", [&](const std::string &v) {
        o.iteration.max_iterations = static_cast<int>(parse_int("--max-iterations", v, 1, 1 << 30));
      });
  p.section("parallel run");
  p.option("--procs", "PxxPy",
           "process grid(s): auto (fewest fill stages), all (every\nfactorisation), or a "
           "comma list such as 4x2,2x4 (default auto)",
           [&](const std::string &v) { o.procs = v; });
  p.option("--transport", "NAME",
           concat(transports().names(), ", a comma list, or all\n(default nonblocking)"),
           [&](const std::string &v) { o.transport = v; });
  p.option("--node-size", "LIST",
           "node-aware transports: ranks per virtual node, a list runs\neach (default 0: "
           "PETACOMM_NODE_SIZE, else the whole node)",
           [&](const std::string &v) {
             o.node_sizes.clear();
             for (const auto &item : split_list(v))
               o.node_sizes.push_back(static_cast<int>(parse_int("--node-size", item, 0, 1 << 20)));
             PETACOMM_CHECK_ARG(!o.node_sizes.empty(), "--node-size: empty list");
           });
  p.section("model and output");
  p.option("--message-cost", "PIECES",
           "point-to-point cost FROM_BYTES:ALPHA_S:BETA_S_PER_BYTE,...\n(default: 1.5 us, 10 "
           "GB/s; petacomm bench sweep3d passes the\nmachine model's)",
           [&](const std::string &v) { o.cost = parse_message_cost(v); });
  p.option("--flux", "FILE",
           "write the final scalar flux (I x J x K float64 .npy); with\nseveral cases FILE "
           "must contain {case} (e.g. flux-{case}.npy)",
           [&](const std::string &v) { o.flux = v; });
  p.option("--json", "FILE", "write the figures as JSON",
           [&](const std::string &v) { o.json = v; });
  p.flag("--quiet", "no table on standard output", &o.quiet);
  return p;
}

std::vector<Case> make_cases(const Options &o, int ranks) {
  std::vector<ProcessGrid> grids;
  if (o.procs == "auto") {
    grids.push_back(choose_grid(ranks, o.size));
  } else if (o.procs == "all") {
    grids = factorisations(ranks, o.size);
    PETACOMM_CHECK_ARG(!grids.empty(), "--procs: no Px x Py = ", ranks,
                       " fits the grid (Px <= I = ", o.size.I, ", Py <= J = ", o.size.J, ")");
  } else {
    for (const std::string &item : split_list(o.procs))
      grids.push_back(parse_grid(item, ranks, o.size));
    PETACOMM_CHECK_ARG(!grids.empty(), "--procs: empty list");
  }
  std::vector<std::string> names;
  if (o.transport == "all") {
    for (const auto *entry : transports().entries()) names.emplace_back(entry->about.name);
  } else {
    names = split_list(o.transport);
    PETACOMM_CHECK_ARG(!names.empty(), "--transport: empty list");
    for (const auto &name : names) transports().require("--transport", name);
  }
  std::vector<Case> cases;
  for (const auto &grid : grids) {
    check_message_sizes(o.size, grid);
    for (const auto &name : names) {
      if (!transports().require("--transport", name).uses_node_size) {
        cases.push_back(Case{grid, name});
        continue;
      }
      for (int k : o.node_sizes) cases.push_back(Case{grid, name, k});
    }
  }
  if (!o.flux.empty() && cases.size() > 1)
    PETACOMM_CHECK_ARG(o.flux.find("{case}") != std::string::npos, "--flux: ", cases.size(),
                       " cases would write the same file '", o.flux,
                       "'; put {case} in the name (e.g. flux-{case}.npy)");
  return cases;
}

// "node" with the layer's default node size, "node2" with virtual nodes of 2 ranks.
std::string transport_label(const Case &c) {
  return c.node_size > 0 ? c.transport + std::to_string(c.node_size) : c.transport;
}

std::string case_name(const Case &c) { return to_string(c.grid) + "-" + transport_label(c); }

std::string flux_path(const std::string &pattern, const Case &c) {
  std::string path = pattern;
  for (auto at = path.find("{case}"); at != std::string::npos; at = path.find("{case}"))
    path.replace(at, 6, case_name(c));
  return path;
}

// Gathers the scalar flux on rank 0 as the global (I, J, K) C-order array.
std::vector<double> gather_flux(const SolveResult &r, const Case &c, const ProblemSize &size,
                                MPI_Comm comm) {
  int rank = 0, ranks = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &ranks));
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(counts.size());
  std::int64_t total = 0;
  for (int q = 0; q < ranks; ++q) {
    const Subdomain s = subdomain(c.grid, size, q);
    counts[static_cast<std::size_t>(q)] = s.nx * s.ny * s.K;
    displs[static_cast<std::size_t>(q)] = static_cast<int>(total);
    total += counts[static_cast<std::size_t>(q)];
  }
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(total) : 0);
  PETACOMM_APP_MPI(MPI_Gatherv(r.cells.phi.data(), static_cast<int>(r.cells.phi.size()), MPI_DOUBLE,
                               all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm));
  std::vector<double> global;
  if (rank != 0) return global;
  global.resize(all.size());
  for (int q = 0; q < ranks; ++q) {
    const Subdomain s = subdomain(c.grid, size, q);
    const double *local = &all[static_cast<std::size_t>(displs[static_cast<std::size_t>(q)])];
    for (int k = 0; k < s.K; ++k)
      for (int j = 0; j < s.ny; ++j)
        for (int i = 0; i < s.nx; ++i)
          global[(static_cast<std::size_t>(s.i0 + i) * size.J +
                  static_cast<std::size_t>(s.j0 + j)) *
                     size.K +
                 static_cast<std::size_t>(k)] =
              local[(static_cast<std::size_t>(k) * s.ny + static_cast<std::size_t>(j)) * s.nx +
                    static_cast<std::size_t>(i)];
  }
  return global;
}

struct CaseFigures {
  Case c;
  int iterations = 0;
  bool converged = false;
  double flux_change = 0;
  std::int64_t fixups = 0;
  double time_per_iteration_s = 0, compute_per_iteration_s = 0;
  double comm_share_mean = 0, comm_share_max = 0;
  double grind_ns = 0, calibration_grind_ns = 0;
  double messages_per_iteration = 0, bytes_per_iteration = 0, max_rank_messages = 0;
  double messages_in_node = -1;  // per iteration, all ranks; -1: the transport knows no nodes
  PipelinePrediction model;
  double measured_over_predicted = 0, efficiency_infinite_network = 0, parallel_efficiency = 0;
  std::string flux_file;
};

CaseFigures figures_of(const Case &c, const SolveResult &r, const Options &o, double block_s,
                       MPI_Comm comm) {
  int ranks = 1;
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &ranks));
  CaseFigures f;
  f.c = c;
  f.iterations = r.iterations;
  f.converged = r.converged;
  f.flux_change = r.flux_change;
  f.fixups = r.fixups;
  const double n = r.iterations;
  const double share = (r.transport_seconds + r.reduce_seconds) / r.total_seconds;
  double maxima[4] = {r.total_seconds / n, r.compute_seconds / n, share,
                      static_cast<double>(r.counters.messages_sent)};
  double sums[4] = {share, static_cast<double>(r.counters.messages_sent),
                    static_cast<double>(r.counters.bytes_sent),
                    static_cast<double>(r.counters.messages_in_node)};
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, maxima, 4, MPI_DOUBLE, MPI_MAX, comm));
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE, MPI_SUM, comm));
  f.time_per_iteration_s = maxima[0];
  f.compute_per_iteration_s = maxima[1];
  f.comm_share_max = maxima[2];
  f.max_rank_messages = maxima[3];
  f.comm_share_mean = sums[0] / ranks;
  f.messages_per_iteration = sums[1];
  f.bytes_per_iteration = sums[2];
  if (r.counters.messages_in_node >= 0) f.messages_in_node = sums[3];
  const double cell_angles =
      static_cast<double>(o.size.I) * o.size.J * o.size.K * 8.0 * o.size.angles;
  f.grind_ns = 1e9 * f.time_per_iteration_s / cell_angles;
  const Subdomain largest = subdomain(c.grid, o.size, 0);
  const double block_cell_angles =
      static_cast<double>(largest.nx) * largest.ny * o.size.mk * o.size.mmi;
  f.calibration_grind_ns = 1e9 * block_s / block_cell_angles;
  f.model = predict_iteration(c.grid, o.size, block_s, o.cost);
  f.measured_over_predicted = f.time_per_iteration_s / f.model.predicted_s;
  f.efficiency_infinite_network = f.model.predicted_no_network_s / f.time_per_iteration_s;
  f.parallel_efficiency =
      (block_s / block_cell_angles) * cell_angles / (ranks * f.time_per_iteration_s);
  return f;
}

void print_report(const Options &o, int ranks, const std::vector<CaseFigures> &all) {
  const ProblemSize &s = o.size;
  std::printf("# %s: KBA wavefront sweep on %d ranks\n", kProgram, ranks);
  std::printf(
      "# grid %dx%dx%d cells, %d directions per octant (%d in all), mk %d (%d K blocks),"
      " mmi %d (%d angle blocks)\n",
      s.I, s.J, s.K, s.angles, 8 * s.angles, s.mk, s.K / s.mk, s.mmi, s.angles / s.mmi);
  std::printf("# sigma_t %g/cm, scattering ratio %g, cell %g cm, fixup %s; ", o.physics.sigma_t,
              o.physics.scattering_ratio, o.physics.cell_size, o.physics.fixup ? "on" : "off");
  if (o.iteration.tolerance > 0)
    std::printf("iterate to %g (at most %d)\n", o.iteration.tolerance, o.iteration.max_iterations);
  else
    std::printf("%d iterations\n", o.iteration.iterations);
  std::printf("# message cost: %s\n", o.cost.source.c_str());
  std::printf("%-6s %-12s %5s %9s %10s %9s %7s %9s %8s %10s\n", "procs", "transport", "iters",
              "change", "ms/iter", "grind ns", "comm %", "msgs/it", "in node", "KiB/it");
  for (const auto &f : all) {
    char in_node[32] = "-";
    if (f.messages_in_node >= 0) std::snprintf(in_node, sizeof in_node, "%.0f", f.messages_in_node);
    std::printf("%-6s %-12s %5d %9.2e %10.3f %9.2f %7.1f %9.0f %8s %10.1f\n",
                to_string(f.c.grid).c_str(), transport_label(f.c).c_str(), f.iterations,
                f.flux_change, 1e3 * f.time_per_iteration_s, f.grind_ns, 100 * f.comm_share_mean,
                f.messages_per_iteration, in_node, f.bytes_per_iteration / 1024.0);
  }
  std::printf(
      "  ms/iter: max over ranks; grind: ns per cell-direction per iteration (wall);"
      " comm %%: mean over ranks\n  of time in transport calls and the convergence "
      "allreduce;\n  msgs, KiB: sent by all ranks; in node: of those, between ranks of one "
      "(virtual) node\n");
  std::printf("# pipeline model (one-rank calibration of a block + face messages)\n");
  std::printf("%-6s %-12s %6s %5s %9s %9s %9s %9s %6s %7s %6s %6s\n", "procs", "transport",
              "stages", "fill", "block us", "msgs us", "pred ms", "free ms", "meas/", "eff-inf",
              "S3D", "par");
  std::printf("%-6s %-12s %6s %5s %9s %9s %9s %9s %6s %7s %6s %6s\n", "", "", "", "", "", "", "",
              "", "pred", "net %", "eff %", "eff %");
  for (const auto &f : all)
    std::printf("%-6s %-12s %6lld %5lld %9.2f %9.2f %9.3f %9.3f %6.2f %7.1f %6.1f %6.1f\n",
                to_string(f.c.grid).c_str(), transport_label(f.c).c_str(),
                static_cast<long long>(f.model.steady_stages + f.model.fill_stages),
                static_cast<long long>(f.model.fill_stages), 1e6 * f.model.block_compute_s,
                1e6 * (f.model.message_x_s + f.model.message_y_s), 1e3 * f.model.predicted_s,
                1e3 * f.model.predicted_no_network_s, f.measured_over_predicted,
                100 * f.efficiency_infinite_network, 100 * f.model.sweep3d_efficiency,
                100 * f.parallel_efficiency);
  std::printf(
      "  fill: 2(Px-1)+4(Py-1) stages; free ms: the pipeline with free messages; "
      "eff-inf-net: free ms /\n  measured; S3D eff: Sweep3D's 8 mmo kb / (8 mmo kb + "
      "fill); par eff: one-rank compute / (p x measured)\n");
}

void write_json(const Options &o, int ranks, const std::vector<CaseFigures> &all) {
  JsonOut j;
  j.begin_object().value("schema", "petacomm.sweep3d").value("schema_version", kSchemaVersion);
  j.value("ranks", ranks);
  j.begin_object("problem");
  j.begin_array("grid").value(o.size.I).value(o.size.J).value(o.size.K).end_array();
  j.value("mk", o.size.mk)
      .value("k_blocks", o.size.K / o.size.mk)
      .value("angles", o.size.angles)
      .value("mmi", o.size.mmi)
      .value("angle_blocks", o.size.angles / o.size.mmi)
      .value("sigma_t", o.physics.sigma_t)
      .value("scattering_ratio", o.physics.scattering_ratio)
      .value("cell_size", o.physics.cell_size)
      .value("fixup", o.physics.fixup)
      .value("iterations", o.iteration.iterations)
      .value("tolerance", o.iteration.tolerance)
      .value("max_iterations", o.iteration.max_iterations)
      .end_object();
  j.begin_array("octant_order");
  for (const Octant &oct : octant_order())
    j.begin_array().value(oct.di).value(oct.dj).value(oct.dk).end_array();
  j.end_array();
  j.begin_object("message_cost").value("source", o.cost.source).begin_array("pieces");
  for (const auto &p : o.cost.pieces)
    j.begin_object()
        .value("from_bytes", p.from_bytes)
        .value("alpha_s", p.alpha_s)
        .value("beta_s_per_byte", p.beta_s_per_byte)
        .end_object();
  j.end_array().end_object();
  j.begin_array("cases");
  for (const auto &f : all) {
    j.begin_object();
    j.begin_array("procs").value(f.c.grid.Px).value(f.c.grid.Py).end_array();
    j.value("transport", f.c.transport)
        .value("node_size", f.c.node_size)
        .value("iterations", f.iterations)
        .value("converged", f.converged)
        .value("flux_change", f.flux_change)
        .value("fixups_per_iteration", f.fixups)
        .value("time_per_iteration_s", f.time_per_iteration_s)
        .value("compute_per_iteration_s", f.compute_per_iteration_s)
        .value("comm_share_mean", f.comm_share_mean)
        .value("comm_share_max", f.comm_share_max)
        .value("grind_ns", f.grind_ns)
        .value("messages_per_iteration", f.messages_per_iteration)
        .value("bytes_per_iteration", f.bytes_per_iteration)
        .value("max_rank_messages_per_iteration", f.max_rank_messages)
        .value("messages_in_node_per_iteration", f.messages_in_node)
        .value("flux_file", f.flux_file);
    const PipelinePrediction &m = f.model;
    j.begin_object("model")
        .value("block_compute_s", m.block_compute_s)
        .value("calibration_grind_ns", f.calibration_grind_ns)
        .value("x_face_bytes", m.x_face_bytes)
        .value("y_face_bytes", m.y_face_bytes)
        .value("message_x_s", m.message_x_s)
        .value("message_y_s", m.message_y_s)
        .value("stage_s", m.stage_s)
        .value("steady_stages", m.steady_stages)
        .value("fill_stages", m.fill_stages)
        .value("fill_s", m.fill_s)
        .value("steady_s", m.steady_s)
        .value("predicted_s", m.predicted_s)
        .value("predicted_no_network_s", m.predicted_no_network_s)
        .value("measured_over_predicted", f.measured_over_predicted)
        .value("efficiency_infinite_network", f.efficiency_infinite_network)
        .value("sweep3d_pipeline_efficiency", m.sweep3d_efficiency)
        .value("parallel_efficiency", f.parallel_efficiency)
        .end_object();
    j.end_object();
  }
  j.end_array().end_object();
  write_file_atomic(o.json, j.str() + "\n", "--json");
}

int run(int argc, char **argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, ranks = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &ranks));
  Options o;
  std::string grid_text;
  ArgParser parser = make_parser(o, grid_text);
  std::string error;
  bool help = false;
  std::vector<Case> cases;
  try {
    help = !parser.parse(argc, argv);
    if (!help) {
      if (!grid_text.empty()) o.size = parse_problem_grid(grid_text, o.size);
      check(o.size, o.physics, o.iteration);
      cases = make_cases(o, ranks);
      if (rank == 0) {
        check_parent_writable(o.json, "--json");
        for (const Case &c : cases) check_parent_writable(flux_path(o.flux, c), "--flux");
      }
    }
  } catch (const Error &e) {
    error = e.what();
  }
  agree_on_error(error, comm);
  if (help) {
    if (rank == 0) std::fputs(parser.help().c_str(), stdout);
    return 0;
  }

  std::vector<CaseFigures> all;
  std::vector<std::pair<int, double>> calibrated;  // Px -> block seconds (Py follows)
  for (const Case &c : cases) {
    SolveSetup setup{o.size, o.physics,   o.iteration,
                     c.grid, c.transport, TransportOptions{std::max(c.node_size, 0)}};
    double block_s = -1;
    for (const auto &[px, s] : calibrated)
      if (px == c.grid.Px) block_s = s;
    if (block_s < 0) {
      block_s = calibrate_block_seconds(setup, comm);
      calibrated.emplace_back(c.grid.Px, block_s);
    }
#ifdef PETACOMM_SMPI
    setup.simulated_block_seconds = block_s;  // the blocks cost what the model says
#endif
    PETACOMM_APP_MPI(MPI_Barrier(comm));
    const SolveResult r = solve(setup, comm);
    CaseFigures f = figures_of(c, r, o, block_s, comm);
    if (!o.flux.empty()) {
      f.flux_file = flux_path(o.flux, c);
      const std::vector<double> global = gather_flux(r, c, o.size, comm);
      if (rank == 0) {
        try {
          write_npy(f.flux_file, {o.size.I, o.size.J, o.size.K}, global, "--flux");
        } catch (const Error &e) {
          error = e.what();
        }
      }
      agree_on_error(error, comm);
    }
    all.push_back(f);
  }
  if (rank == 0) {
    try {
      if (!o.json.empty()) write_json(o, ranks, all);
    } catch (const Error &e) {
      error = e.what();
    }
    if (!o.quiet) print_report(o, ranks, all);
  }
  agree_on_error(error, comm);
  return 0;
}

}  // namespace
}  // namespace petacomm::apps::sweep3d

int main(int argc, char **argv) {
  return petacomm::apps::main_of_app("petacomm-sweep3d", argc, argv, petacomm::apps::sweep3d::run);
}
