// petacomm-mapmaker: the MADmap problem. Simulates a CMB scan (pointing x sky + noise),
// splits it over the ranks in time order and solves for the I, Q, U sky by PCG, with every
// P^T(.) reduced by a SparseReducePlan (docs/mapmaker.md).
#include <mpi.h>
#include <petacomm/prof.h>
#include <petacomm/xchg.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "arg_parser.hpp"
#include "files.hpp"
#include "healpix.hpp"
#include "json_out.hpp"
#include "scan.hpp"
#include "solver.hpp"
#include "time_domain.hpp"

namespace petacomm::apps::mapmaker {
namespace {

// The sparse-reduction strategies as the library's registry lists them (no copy of the list),
// wrapped for the help text.
std::string registered_strategies() {
  int count = 0;
  std::string names;
  if (petacomm_xchg_strategy_count(&count) != PETACOMM_SUCCESS)
    return "see petacomm_xchg_strategy_info";
  std::size_t line = 0;
  for (int i = 0; i < count; ++i) {
    petacomm_strategy_info info{};
    if (petacomm_xchg_strategy_info(i, &info) != PETACOMM_SUCCESS) continue;
    const std::string name = info.name;
    if (!names.empty()) names += ",";
    if (line + name.size() > 54) {
      names += "\n";
      line = 0;
    } else if (!names.empty()) {
      names += " ";
    }
    names += name;
    line += name.size() + 2;
  }
  return names;
}

constexpr double kUnseen = -1.6375e30;  // healpy's UNSEEN: pixels not solved
constexpr int kSchemaVersion = 1;

struct Options {
  ScanParams scan;
  NoiseParams noise;
  std::string noise_name = "1/f", weighting = "auto";
  std::string sky = "generated";
  std::vector<std::string> strategies{"auto"};
  SolverOptions solver;
  std::string output, json, save_pointing;
  bool quiet = false;
};

ArgParser make_parser(Options &o) {
  ArgParser parser(
      "petacomm-mapmaker",
      "Simulates a CMB scan (a spinning, precessing telescope on a HEALPix sky; several\n"
      "detectors with polarisation angles), adds noise, splits the samples over the ranks in\n"
      "time order and solves (P^T N^-1 P) m = P^T N^-1 d for the I, Q, U map by PCG with a\n"
      "3x3 block-Jacobi preconditioner. Every P^T(.) is reduced over the ranks by a petacomm\n"
      "SparseReducePlan built once and executed every iteration. Run it under mpiexec.");
  parser.section("scan");
  parser.option("--nside", "N", "HEALPix resolution, a power of two (default 64; from --sky)",
                [&](const std::string &v) {
                  o.scan.nside = parse_int("--nside", v, 1, healpix::kMaxNside);
                  if (!healpix::valid_nside(o.scan.nside))
                    fail_arg("--nside: expected a power of two, got '", v, "'");
                });
  parser.option(
      "--samples", "N", "samples per detector over the observation (default 1000000)",
      [&](const std::string &v) { o.scan.samples = parse_int("--samples", v, 1, 1LL << 40); });
  parser.option("--detectors", "D", "detectors, polarisation angles pi d / D (default 4)",
                [&](const std::string &v) {
                  o.scan.detectors = static_cast<int>(parse_int("--detectors", v, 1, 1024));
                });
  parser.option("--spin-samples", "N", "samples per spin, i.e. per ring (default 1000)",
                [&](const std::string &v) {
                  o.scan.spin_samples = parse_int("--spin-samples", v, 1, 1LL << 40);
                });
  parser.option("--precession-spins", "N", "spins per precession period (default 25)",
                [&](const std::string &v) {
                  o.scan.precession_spins = parse_int("--precession-spins", v, 1, 1LL << 30);
                });
  parser.option(
      "--spin-angle", "DEG", "boresight to spin axis, degrees (default 85)",
      [&](const std::string &v) { o.scan.spin_angle_deg = parse_real("--spin-angle", v, 0, 180); });
  parser.option("--precession-angle", "DEG", "spin axis to anti-sun direction (default 7.5)",
                [&](const std::string &v) {
                  o.scan.precession_angle_deg = parse_real("--precession-angle", v, 0, 180);
                });
  parser.option("--year-fraction", "F", "fraction of a year observed, in (0, 1] (default 1)",
                [&](const std::string &v) {
                  o.scan.year_fraction = parse_real("--year-fraction", v, 0, 1);
                  if (o.scan.year_fraction <= 0)
                    fail_arg("--year-fraction: must be > 0, got '", v, "'");
                });
  parser.option("--seed", "S", "seed of the scan phases, jitter, noise and sky (default 0)",
                [&](const std::string &v) {
                  o.scan.seed = static_cast<std::uint64_t>(parse_int("--seed", v, 0, 1LL << 62));
                });
  parser.section("sky and noise");
  parser.option("--sky", "FILE",
                "I, Q, U maps: .npy of shape (3, 12 nside^2), RING order\n"
                "(FITS: convert with healpy, docs/mapmaker.md); default: generated",
                [&](const std::string &v) { o.sky = v; });
  parser.option("--noise", "KIND", "none, white or 1/f (default 1/f)", [&](const std::string &v) {
    o.noise_name = parse_choice("--noise", v, {"none", "white", "1/f"});
  });
  parser.option("--sigma", "S", "white noise level per sample, sky units (default 100)",
                [&](const std::string &v) {
                  o.noise.sigma = parse_real("--sigma", v, 0, 1e300);
                  if (o.noise.sigma <= 0) fail_arg("--sigma: must be > 0, got '", v, "'");
                });
  parser.option("--fknee", "HZ", "1/f knee frequency (default 0.5)",
                [&](const std::string &v) { o.noise.fknee = parse_real("--fknee", v, 0, 1e12); });
  parser.option("--alpha", "A", "1/f slope: P(f) = sigma^2 (1 + (fknee/f)^alpha) (default 1)",
                [&](const std::string &v) { o.noise.alpha = parse_real("--alpha", v, 0, 10); });
  parser.option("--sample-rate", "HZ", "samples per second (default 100)",
                [&](const std::string &v) {
                  o.noise.sample_rate = parse_real("--sample-rate", v, 0, 1e12);
                  if (o.noise.sample_rate <= 0)
                    fail_arg("--sample-rate: must be > 0, got '", v, "'");
                });
  parser.option(
      "--interval", "N",
      "samples per stationary noise interval\n"
      "(default: samples / 64, at least 2)",
      [&](const std::string &v) { o.noise.interval = parse_int("--interval", v, 2, 1LL << 40); });
  parser.option("--weighting", "KIND",
                "N^-1 of the solve: white, 1/f or auto (= the noise's;\n"
                "white when --noise none)",
                [&](const std::string &v) {
                  o.weighting = parse_choice("--weighting", v, {"auto", "white", "1/f"});
                });
  parser.section("solver");
  parser.option("--strategy", "LIST",
                "SparseReducePlan strategy, or a comma list solved one\n"
                "after the other on the same data (default auto): auto,\n" +
                    registered_strategies(),
                [&](const std::string &v) {
                  o.strategies = split_list(v);
                  if (o.strategies.empty())
                    fail_arg("--strategy: expected a strategy name, got '", v, "'");
                });
  parser.option("--transport", "T", "p2p, neighbor or alltoallv (default p2p)",
                [&](const std::string &v) { o.solver.transport = v; });
  parser.flag("--deterministic", "fixed reduction order: bitwise-identical sums per strategy",
              &o.solver.deterministic);
  parser.option("--tol", "T",
                "stop when ||r|| / ||b|| <= T (default 1e-10); 0: run\n"
                "exactly --max-iter iterations (benchmarks)",
                [&](const std::string &v) { o.solver.tol = parse_real("--tol", v, 0, 1); });
  parser.option("--max-iter", "N", "PCG iterations at most (default 200)",
                [&](const std::string &v) {
                  o.solver.max_iter = static_cast<int>(parse_int("--max-iter", v, 1, 1000000));
                });
  parser.option(
      "--rcond-min", "R",
      "flag pixels whose 3x3 block has a smaller reciprocal\n"
      "condition number (default 1e-3)",
      [&](const std::string &v) { o.solver.rcond_min = parse_real("--rcond-min", v, 0, 1); });
  parser.option("--min-hits", "N", "flag pixels seen fewer times (default 3)",
                [&](const std::string &v) {
                  o.solver.min_hits = static_cast<int>(parse_int("--min-hits", v, 1, 1 << 30));
                });
  parser.section("output");
  parser.option("--output", "FILE",
                "the solved map: .npy (3, 12 nside^2), unsolved pixels\n"
                "= -1.6375e30 (healpy's UNSEEN); written by rank 0",
                [&](const std::string &v) { o.output = v; });
  parser.option("--json", "FILE", "figures of merit, per-iteration residuals and times",
                [&](const std::string &v) { o.json = v; });
  parser.option("--save-pointing", "FILE", "every sample's pixel and psi: .npy (D, samples, 2)",
                [&](const std::string &v) { o.save_pointing = v; });
  parser.flag("--quiet", "print nothing but errors", &o.quiet);
  return parser;
}

void finish_options(Options &o) {
  if (o.noise_name == "none")
    o.noise.kind = NoiseKind::kNone;
  else if (o.noise_name == "white")
    o.noise.kind = NoiseKind::kWhite;
  else
    o.noise.kind = NoiseKind::kOneOverF;
  o.noise.filter_one_over_f =
      o.weighting == "1/f" || (o.weighting == "auto" && o.noise.kind == NoiseKind::kOneOverF);
  o.noise.total_samples = o.scan.samples;
  if (o.noise.interval == 0)
    o.noise.interval = std::max<std::int64_t>(2, (o.scan.samples + 63) / 64);
  if (o.noise.interval > o.scan.samples)
    fail_arg("--interval: must be at most --samples (", o.scan.samples, "), got ",
             o.noise.interval);
  if (o.noise.filter_one_over_f && o.noise.fknee <= 0)
    fail_arg("--fknee: the 1/f weighting needs a knee frequency > 0, got ", o.noise.fknee);
  if (!o.output.empty() && (o.output.size() < 4 || o.output.substr(o.output.size() - 4) != ".npy"))
    fail_arg("--output: maps are written as .npy (got '", o.output,
             "'); convert to FITS with healpy (docs/mapmaker.md)");
  if (!o.save_pointing.empty() && (o.scan.samples * o.scan.detectors > (1LL << 28)))
    fail_arg("--save-pointing: at most 2^28 samples x detectors, got ",
             o.scan.samples * o.scan.detectors);
}

// The nside of a --sky file: its second dimension is 12 nside^2.
std::int64_t nside_of_sky(const std::string &path, std::int64_t requested, bool nside_given) {
  const auto ends_with = [&](const std::string &suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".fits") || ends_with(".fits.gz") || ends_with(".fit"))
    fail_arg("--sky: '", path,
             "' is a FITS map; convert it to .npy first with healpy (docs/mapmaker.md)");
  const NpyArray probe = read_npy(path, "--sky");
  if (probe.shape.size() != 2 || probe.shape[0] != 3)
    fail_arg("--sky: '", path, "' must have shape (3, 12 nside^2) (I, Q, U in RING order)");
  const std::int64_t npix = probe.shape[1];
  const auto nside = static_cast<std::int64_t>(std::llround(std::sqrt(npix / 12.0)));
  if (!healpix::valid_nside(nside) || healpix::npix(nside) != npix)
    fail_arg("--sky: '", path, "' has ", npix,
             " pixels per map, not 12 nside^2 for a power-of-two nside");
  if (nside_given && nside != requested)
    fail_arg("--nside: ", requested, " disagrees with --sky '", path, "' (nside ", nside, ")");
  return nside;
}

void save_pointing(const Options &o) {
  const std::int64_t n = o.scan.samples;
  std::vector<double> out(static_cast<std::size_t>(2 * n * o.scan.detectors));
  std::vector<std::int64_t> pixel(static_cast<std::size_t>(n));
  std::vector<double> psi(static_cast<std::size_t>(n));
  for (int d = 0; d < o.scan.detectors; ++d) {
    scan_pointing(o.scan, d, 0, n, pixel.data(), psi.data());
    for (std::int64_t t = 0; t < n; ++t) {
      out[2 * (d * n + t)] = static_cast<double>(pixel[t]);
      out[2 * (d * n + t) + 1] = psi[t];
    }
  }
  write_npy(o.save_pointing, {o.scan.detectors, n, 2}, out, "--save-pointing");
}

// Owners send (pixel, I, Q, U) of the pixels they hold to rank 0, which writes the map.
void write_map(const std::string &path, std::int64_t nside, const TimeDomain &td,
               const SolveResult &s, MPI_Comm comm) {
  int rank = 0, size = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &size));
  std::vector<double> mine;
  for (std::size_t p = 0; p < td.pixels.size(); ++p) {
    if (!s.owned[p]) continue;
    mine.push_back(static_cast<double>(td.pixels[p]));
    for (int c = 0; c < 3; ++c) mine.push_back(s.good[p] ? s.map[3 * p + c] : kUnseen);
  }
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(size), offsets(size);
  PETACOMM_APP_MPI(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm));
  std::exclusive_scan(counts.begin(), counts.end(), offsets.begin(), 0);
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(offsets.back() + counts.back()) : 0);
  PETACOMM_APP_MPI(MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(),
                               offsets.data(), MPI_DOUBLE, 0, comm));
  std::string error;
  if (rank == 0) {
    const std::int64_t npix = healpix::npix(nside);
    std::vector<double> maps(static_cast<std::size_t>(3 * npix), kUnseen);
    for (std::size_t i = 0; i + 3 < all.size(); i += 4) {
      const auto pix = static_cast<std::int64_t>(all[i]);
      for (int c = 0; c < 3; ++c) maps[static_cast<std::size_t>(c * npix + pix)] = all[i + 1 + c];
    }
    try {
      write_npy(path, {3, npix}, maps, "--output");
    } catch (const Error &e) {
      error = e.what();
    }
  }
  agree_on_error(error, comm);
}

struct Verification {
  std::string check;
  double value = 0, tolerance = 0;
  bool pass = false;
  std::int64_t pixels = 0;
  std::string detail;
};

// Compares the solved map with the input sky on the solved pixels each rank owns.
Verification verify(const Options &o, const Sky &sky, const TimeDomain &td, const SolveResult &s,
                    MPI_Comm comm) {
  std::vector<double> truth;
  sky.values(td.pixels, truth);
  Verification v;
  double local[5] = {0, 0, 0, 0, 0};  // max |err| per component (3), chi^2, solved pixels
  double scale[3] = {0, 0, 0};
  for (std::size_t p = 0; p < td.pixels.size(); ++p) {
    if (!s.owned[p] || !s.good[p]) continue;
    double e[3];
    for (int c = 0; c < 3; ++c) {
      e[c] = s.map[3 * p + c] - truth[3 * p + c];
      local[c] = std::max(local[c], std::fabs(e[c]));
      scale[c] = std::max(scale[c], std::fabs(truth[3 * p + c]));
    }
    const double *m = &s.blocks[6 * p];
    local[3] += m[0] * e[0] * e[0] + m[3] * e[1] * e[1] + m[5] * e[2] * e[2] +
                2 * (m[1] * e[0] * e[1] + m[2] * e[0] * e[2] + m[4] * e[1] * e[2]);
    local[4] += 1;
  }
  double maxima[6] = {local[0], local[1], local[2], scale[0], scale[1], scale[2]};
  double sums[2] = {local[3], local[4]};
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, maxima, 6, MPI_DOUBLE, MPI_MAX, comm));
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm));
  v.pixels = static_cast<std::int64_t>(sums[1]);
  // --tol 0 runs exactly --max-iter iterations (benchmarks): convergence is not required.
  const bool converged = s.converged || o.solver.tol == 0;
  double relative = 0;
  for (int c = 0; c < 3; ++c)
    relative = std::max(relative, maxima[c] / std::max(maxima[3 + c], 1e-300));
  if (o.noise.kind == NoiseKind::kNone) {
    v.check = "no-noise recovery: max over I, Q, U of max |m - s| / max |s|";
    v.value = relative;
    v.tolerance = 1e-8;
    v.pass = converged && relative <= v.tolerance;
  } else if (o.noise.kind == NoiseKind::kWhite && !o.noise.filter_one_over_f) {
    // (m - s) ~ N(0, M_p^-1) per solved pixel: chi^2 ~ chi^2 with 3 N dof.
    const double dof = 3 * sums[1];
    v.check = "white noise: (chi^2 - 3N) / sqrt(6N) of (m - s)^T M_p (m - s)";
    v.value = dof > 0 ? (sums[0] - dof) / std::sqrt(2 * dof) : 0;
    v.tolerance = 5;
    v.pass = converged && std::fabs(v.value) <= v.tolerance;
    char text[96];
    std::snprintf(text, sizeof text, "chi^2 per degree of freedom %.4f",
                  dof > 0 ? sums[0] / dof : 0.0);
    v.detail = text;
  } else {
    v.check = o.solver.tol > 0 ? "PCG converged: final ||r|| / ||b||"
                               : "fixed iterations (--tol 0): final ||r|| / ||b||";
    v.value = s.residuals.empty() ? 0 : s.residuals.back();
    v.tolerance = o.solver.tol;
    v.pass = converged;
    char text[96];
    std::snprintf(text, sizeof text, "max |m - s| / max |s| = %.3g (noise-limited)", relative);
    v.detail = text;
  }
  return v;
}

double mean(const std::vector<double> &v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Largest difference between two solved maps on the solved pixels, relative to the first
// map's largest value per component; max over ranks.
double map_difference(const SolveResult &a, const SolveResult &b, MPI_Comm comm) {
  double diff[3] = {0, 0, 0}, scale[3] = {0, 0, 0};
  for (std::size_t p = 0; p < a.good.size(); ++p)
    if (a.good[p])
      for (int c = 0; c < 3; ++c) {
        diff[c] = std::max(diff[c], std::fabs(a.map[3 * p + c] - b.map[3 * p + c]));
        scale[c] = std::max(scale[c], std::fabs(a.map[3 * p + c]));
      }
  double both[6] = {diff[0], diff[1], diff[2], scale[0], scale[1], scale[2]};
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, both, 6, MPI_DOUBLE, MPI_MAX, comm));
  double worst = 0;
  for (int c = 0; c < 3; ++c) worst = std::max(worst, both[c] / std::max(both[3 + c], 1e-300));
  return worst;
}

void print_report(const Options &o, int ranks, const std::vector<std::string> &requested,
                  const std::vector<SolveResult> &runs, const Verification &v, double agreement,
                  std::int64_t min_samples, std::int64_t max_samples) {
  const SolveResult &first = runs.front();
  std::printf(
      "petacomm-mapmaker: nside %lld (%lld pixels), %lld samples x %d detectors on %d ranks\n",
      static_cast<long long>(o.scan.nside), static_cast<long long>(healpix::npix(o.scan.nside)),
      static_cast<long long>(o.scan.samples), o.scan.detectors, ranks);
  std::printf("  noise %s, sigma %g", o.noise_name.c_str(), o.noise.sigma);
  if (o.noise.kind == NoiseKind::kOneOverF || o.noise.filter_one_over_f)
    std::printf(", fknee %g Hz, alpha %g, intervals of %lld samples", o.noise.fknee, o.noise.alpha,
                static_cast<long long>(o.noise.interval));
  std::printf("; weighting %s\n  samples per rank %lld..%lld\n",
              o.noise.filter_one_over_f ? "1/f" : "white", static_cast<long long>(min_samples),
              static_cast<long long>(max_samples));
  std::printf(
      "  pixels: %lld observed, %lld solved, %lld flagged (hits < %d: %lld, rcond < %g: %lld)\n\n",
      static_cast<long long>(first.pixels.observed), static_cast<long long>(first.pixels.solved),
      static_cast<long long>(first.pixels.flagged_hits + first.pixels.flagged_rcond),
      o.solver.min_hits, static_cast<long long>(first.pixels.flagged_hits), o.solver.rcond_min,
      static_cast<long long>(first.pixels.flagged_rcond));
  std::printf("PCG residual ||r||/||b|| per iteration (%s):\n", first.strategy.c_str());
  for (std::size_t i = 0; i < first.residuals.size(); ++i)
    std::printf("%4zu %8.2e%s", i + 1, first.residuals[i],
                (i % 6 == 5 || i + 1 == first.residuals.size()) ? "\n" : "  ");
  std::printf("\n%-16s %5s %9s %9s %9s %9s %9s %10s %7s\n", "strategy", "iters", "residual",
              "setup ms", "iter ms", "calc ms", "comm ms", "KiB/exec", "msgs");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SolveResult &r = runs[i];
    const double iter = mean(r.iteration_seconds), comm = mean(r.comm_seconds);
    const std::string name =
        requested[i] == r.strategy ? r.strategy : requested[i] + ":" + r.strategy;
    std::printf("%-16s %5d %9.2e %9.2f %9.3f %9.3f %9.3f %10.1f %7.1f\n", name.c_str(),
                r.iterations, r.residuals.empty() ? 0.0 : r.residuals.back(), 1e3 * r.setup_seconds,
                1e3 * iter, 1e3 * (iter - comm), 1e3 * comm, r.stats.bytes.max / 1024.0,
                r.stats.messages.max);
  }
  std::printf(
      "  ms: mean per iteration of the max over ranks; KiB, msgs: max over ranks, per"
      " execute\n");
  if (runs.size() > 1)
    std::printf("strategies agree to %.2e (max relative difference of the maps)\n", agreement);
  std::printf("verification: %s = %.3g (tolerance %g): %s\n", v.check.c_str(), v.value, v.tolerance,
              v.pass ? "pass" : "FAIL");
  if (!v.detail.empty()) std::printf("  %s\n", v.detail.c_str());
}

void write_json(const Options &o, int ranks, const std::vector<std::string> &requested,
                const std::vector<SolveResult> &runs, const Verification &v, double agreement,
                std::int64_t min_samples, std::int64_t max_samples) {
  JsonOut j;
  j.begin_object().value("schema", "petacomm.mapmaker").value("schema_version", kSchemaVersion);
  j.value("ranks", ranks);
  j.begin_object("parameters")
      .value("nside", o.scan.nside)
      .value("samples", o.scan.samples)
      .value("detectors", o.scan.detectors)
      .value("spin_samples", o.scan.spin_samples)
      .value("precession_spins", o.scan.precession_spins)
      .value("spin_angle_deg", o.scan.spin_angle_deg)
      .value("precession_angle_deg", o.scan.precession_angle_deg)
      .value("year_fraction", o.scan.year_fraction)
      .value("seed", static_cast<std::int64_t>(o.scan.seed))
      .value("sky", o.sky)
      .value("noise", o.noise_name)
      .value("weighting", o.noise.filter_one_over_f ? "1/f" : "white")
      .value("sigma", o.noise.sigma)
      .value("fknee_hz", o.noise.fknee)
      .value("alpha", o.noise.alpha)
      .value("sample_rate_hz", o.noise.sample_rate)
      .value("interval_samples", o.noise.interval)
      .value("tol", o.solver.tol)
      .value("max_iter", o.solver.max_iter)
      .value("rcond_min", o.solver.rcond_min)
      .value("min_hits", o.solver.min_hits)
      .value("transport", o.solver.transport)
      .value("deterministic", o.solver.deterministic)
      .end_object();
  j.begin_object("samples_per_rank")
      .value("min", min_samples)
      .value("max", max_samples)
      .end_object();
  const PixelCounts &px = runs.front().pixels;
  j.begin_object("pixels")
      .value("total", healpix::npix(o.scan.nside))
      .value("observed", px.observed)
      .value("solved", px.solved)
      .value("flagged_hits", px.flagged_hits)
      .value("flagged_rcond", px.flagged_rcond)
      .end_object();
  j.begin_array("runs");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SolveResult &r = runs[i];
    const double iter = mean(r.iteration_seconds), comm = mean(r.comm_seconds);
    j.begin_object()
        .value("strategy_requested", requested[i])
        .value("strategy", r.strategy)
        .value("iterations", r.iterations)
        .value("converged", r.converged)
        .value("stop_reason", r.stop_reason)
        .value("final_residual", r.residuals.empty() ? 0.0 : r.residuals.back())
        .value("setup_s", r.setup_seconds)
        .value("plan_create_s", r.plan_seconds)
        .value("time_per_iteration_s", iter)
        .value("compute_per_iteration_s", iter - comm)
        .value("comm_per_iteration_s", comm)
        .value("residuals", r.residuals)
        .value("iteration_s", r.iteration_seconds)
        .value("comm_s", r.comm_seconds);
    j.begin_object("bytes_per_execute")
        .value("min", r.stats.bytes.min)
        .value("avg", r.stats.bytes.avg)
        .value("max", r.stats.bytes.max)
        .end_object();
    j.begin_object("messages_per_execute")
        .value("min", r.stats.messages.min)
        .value("avg", r.stats.messages.avg)
        .value("max", r.stats.messages.max)
        .end_object();
    j.value("plan_memory_bytes_max", r.stats.memory_bytes.max);
    j.raw("plan_describe", r.plan_description);
    j.end_object();
  }
  j.end_array();
  j.value("strategies_agree_to", agreement);
  j.begin_object("verification")
      .value("check", v.check)
      .value("value", v.value)
      .value("tolerance", v.tolerance)
      .value("pixels", v.pixels)
      .value("detail", v.detail)
      .value("pass", v.pass)
      .end_object();
  j.end_object();
  write_file_atomic(o.json, j.str() + "\n", "--json");
}

int run(int argc, char **argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &size));
  Options o;
  ArgParser parser = make_parser(o);
  std::string error;
  bool help = false;
  try {
    help = !parser.parse(argc, argv);
    if (!help) {
      if (o.sky != "generated")
        o.scan.nside = nside_of_sky(o.sky, o.scan.nside, parser.given("--nside"));
      finish_options(o);
      if (rank == 0) {
        check_parent_writable(o.output, "--output");
        check_parent_writable(o.json, "--json");
        check_parent_writable(o.save_pointing, "--save-pointing");
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
  for (const auto &strategy : o.strategies) {  // refuse a bad name before any work
    SolverOptions options = o.solver;
    options.strategy = strategy;
    check_solver_options(options, comm);
  }
  if (!o.save_pointing.empty() && rank == 0) {
    try {
      save_pointing(o);
    } catch (const Error &e) {
      error = e.what();
    }
  }
  agree_on_error(error, comm);

  petacomm_prof_begin("scan");
  NoiseModel noise(o.noise);
  std::unique_ptr<Sky> sky;
  try {
    sky = std::make_unique<Sky>(o.sky == "generated" ? Sky::generated(o.scan.nside, o.scan.seed)
                                                     : Sky::from_file(o.sky, o.scan.nside));
  } catch (const Error &e) {
    error = e.what();
  }
  agree_on_error(error, comm);
  const auto [start, stop] =
      sample_range(o.scan.samples, o.noise.interval, o.noise.filter_one_over_f, rank, size);
  const TimeDomain td = build_time_domain(o.scan, noise, *sky, start, stop);
  std::int64_t extremes[2] = {-td.samples(), td.samples()};
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_INT64_T, MPI_MAX, comm));
  PETACOMM_APP_MPI(MPI_Barrier(comm));
  petacomm_prof_end("scan");

  std::vector<SolveResult> runs;
  for (const auto &strategy : o.strategies) {
    o.solver.strategy = strategy;
    runs.push_back(solve_map(td, noise, o.solver, comm));
  }
  double agreement = 0;
  for (std::size_t i = 1; i < runs.size(); ++i)
    agreement = std::max(agreement, map_difference(runs.front(), runs[i], comm));
  petacomm_prof_begin("output");
  const Verification v = verify(o, *sky, td, runs.front(), comm);
  if (!o.output.empty()) write_map(o.output, o.scan.nside, td, runs.front(), comm);
  if (rank == 0) {
    try {
      if (!o.json.empty())
        write_json(o, size, o.strategies, runs, v, agreement, -extremes[0], extremes[1]);
    } catch (const Error &e) {
      error = e.what();
    }
    if (!o.quiet)
      print_report(o, size, o.strategies, runs, v, agreement, -extremes[0], extremes[1]);
  }
  agree_on_error(error, comm);
  PETACOMM_APP_MPI(MPI_Barrier(comm));
  petacomm_prof_end("output");
  return v.pass ? 0 : 3;
}

}  // namespace
}  // namespace petacomm::apps::mapmaker

int main(int argc, char **argv) {
  return petacomm::apps::main_of_app("petacomm-mapmaker", argc, argv,
                                     petacomm::apps::mapmaker::run);
}
