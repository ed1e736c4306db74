// petacomm-madbench: MADbench, the MADCAP CMB power-spectrum benchmark, on ScaLAPACK.
// Three phases on NPIX x NPIX block-cyclic matrices (docs/madbench.md):
//   dSdC  for each bin, dS/dC_b by Legendre recursion over the pixel pairs; written to disk
//   invD  read each dS/dC_b, D = sum_b C_b dS/dC_b + noise; Cholesky inverse (pdpotrf, pdpotri)
//   W     for each bin, W_b = D^-1 dS/dC_b (pdgemm), NGANG bins at a time on NGANG gangs of
//         processes (matrices redistributed to the gangs and back), then dL/dC_b and the
//         Fisher matrix; F^-1 and one Newton-Raphson step check the result
// Each phase is a profiler region closed by a barrier; CALC, MPI, I/O and LBST (the closing
// barrier's wait) are reported per phase as mean [min:max] over ranks.
#include <mpi.h>
#include <petacomm/prof.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "arg_parser.hpp"
#include "counter_rng.hpp"
#include "files.hpp"
#include "json_out.hpp"
#include "matrix_store.hpp"
#include "redistribute.hpp"
#include "scalapack.hpp"
#include "spectrum.hpp"

namespace petacomm::apps::madbench {
namespace {

constexpr int kSchemaVersion = 1;
constexpr const char *kPhases[3] = {"dSdC", "invD", "W"};

struct Options {
  int npix = 1024, nbin = 8, ngang = 1, bsize = 32, rmod = 1, wmod = 1;
  std::string iodir = ".";
  std::string redistribution = "remap";
  double noise_variance = 1.0;
  std::uint64_t seed = 0;
  double peak_gflops = 0;  // per core; 0: estimated from /proc/cpuinfo
  bool keep_files = false, quiet = false;
  std::string json;
};

ArgParser make_parser(Options &o) {
  ArgParser parser(
      "petacomm-madbench",
      "MADbench: the MADCAP CMB power-spectrum estimator as a benchmark, on ScaLAPACK.\n"
      "Phases dSdC (Legendre recursion, writes), invD (reads, Cholesky inverse) and W\n"
      "(reads, pdgemm per bin, optionally on NGANG gangs), each closed by a barrier and\n"
      "reported as CALC, MPI, I/O and LBST; the Fisher matrix checks the result.\n"
      "Run it under mpiexec; under `petacomm profile` the report shows the same phases.");
  parser.section("problem (as MADbench's NPIX NBIN NGANG BSIZE RMOD WMOD)");
  parser.option(
      "--npix", "N", "pixels: matrices are N x N; a multiple of --bsize (default 1024)",
      [&](const std::string &v) { o.npix = static_cast<int>(parse_int("--npix", v, 1, 1 << 20)); });
  parser.option("--nbin", "B", "spectrum bins (default 8)", [&](const std::string &v) {
    o.nbin = static_cast<int>(parse_int("--nbin", v, 1, 4096));
  });
  parser.option("--ngang", "G", "gangs for the W phase; must divide the ranks (default 1)",
                [&](const std::string &v) {
                  o.ngang = static_cast<int>(parse_int("--ngang", v, 1, 1 << 20));
                });
  parser.option("--bsize", "NB", "ScaLAPACK block size (default 32)", [&](const std::string &v) {
    o.bsize = static_cast<int>(parse_int("--bsize", v, 1, 1 << 16));
  });
  parser.option(
      "--rmod", "R", "1/R of the processes read at once (default 1: all)",
      [&](const std::string &v) { o.rmod = static_cast<int>(parse_int("--rmod", v, 1, 1 << 20)); });
  parser.option(
      "--wmod", "W", "1/W of the processes write at once (default 1: all)",
      [&](const std::string &v) { o.wmod = static_cast<int>(parse_int("--wmod", v, 1, 1 << 20)); });
  parser.section("run");
  parser.option("--iodir", "DIR", "directory of the per-process matrix files (default .)",
                [&](const std::string &v) { o.iodir = v; });
  parser.flag("--keep-files", "keep the matrix files (default: removed at the end)", &o.keep_files);
  parser.option("--redistribution", "HOW",
                "gang redistribution: remap (petacomm's),\n"
                "pdgemr2d (ScaLAPACK's) or both (time both, check identical)",
                [&](const std::string &v) {
                  o.redistribution =
                      parse_choice("--redistribution", v, {"remap", "pdgemr2d", "both"});
                });
  parser.option("--noise-variance", "S2", "white noise variance per pixel (default 1)",
                [&](const std::string &v) {
                  o.noise_variance = parse_real("--noise-variance", v, 0, 1e300);
                  if (o.noise_variance <= 0)
                    fail_arg("--noise-variance: must be > 0, got '", v, "'");
                });
  parser.option("--seed", "S", "seed of the data map (default 0)", [&](const std::string &v) {
    o.seed = static_cast<std::uint64_t>(parse_int("--seed", v, 0, 1LL << 62));
  });
  parser.option("--peak-gflops", "G",
                "peak GFLOP/s of one core (default: estimated from\n"
                "/proc/cpuinfo: MHz x double flops per cycle of its vector units)",
                [&](const std::string &v) {
                  o.peak_gflops = parse_real("--peak-gflops", v, 0, 1e9);
                  if (o.peak_gflops <= 0) fail_arg("--peak-gflops: must be > 0, got '", v, "'");
                });
  parser.option("--json", "FILE", "figures of merit, Fisher matrix and verification",
                [&](const std::string &v) { o.json = v; });
  parser.flag("--quiet", "print nothing but errors", &o.quiet);
  return parser;
}

// ---- timing --------------------------------------------------------------------------------
struct Components {
  double calc = 0, mpi = 0, io = 0, lbst = 0, wall = 0;
};

template <typename F>
void timed(double &bucket, F &&f) {
  const double t0 = MPI_Wtime();
  f();
  bucket += MPI_Wtime() - t0;
}

class Phase {
 public:
  Phase(const char *name, Components &c, MPI_Comm comm) : name_(name), c_(c), comm_(comm) {
    petacomm_prof_begin(name_);
    start_ = MPI_Wtime();
  }
  // The closing barrier: its wait is the phase's load imbalance (LBST).
  void close() {
    timed(c_.lbst, [&] { PETACOMM_APP_MPI(MPI_Barrier(comm_)); });
    c_.wall = MPI_Wtime() - start_;
    petacomm_prof_end(name_);
  }

 private:
  const char *name_;
  Components &c_;
  MPI_Comm comm_;
  double start_ = 0;
};

// ---- peak ----------------------------------------------------------------------------------
// MHz x double-precision flops per cycle from the vector units the flags name (an estimate:
// AVX2/AVX-512 with FMA 16, AVX 8, SSE2 4).
double estimated_core_peak_gflops() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double mhz = 0;
  int per_cycle = 2;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) mhz = std::max(mhz, std::atof(line.c_str() + colon + 1));
    } else if (line.rfind("flags", 0) == 0) {
      std::istringstream flags(line.substr(line.find(':') + 1));
      bool fma = false, avx2 = false, avx = false, sse2 = false;
      for (std::string f; flags >> f;) {
        fma |= f == "fma";
        avx2 |= f == "avx2";
        avx |= f == "avx";
        sse2 |= f == "sse2";
      }
      per_cycle = (fma && avx2) ? 16 : avx ? 8 : sse2 ? 4 : 2;
    }
  }
  return mhz > 0 ? mhz * 1e-3 * per_cycle : 0.0;
}

// Cores the run can use: per node, min(ranks on the node, online cores), summed.
int effective_cores(MPI_Comm comm) {
  MPI_Comm node;
  PETACOMM_APP_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int local_rank = 0, local_size = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(node, &local_rank));
  PETACOMM_APP_MPI(MPI_Comm_size(node, &local_size));
  PETACOMM_APP_MPI(MPI_Comm_free(&node));
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  int mine =
      local_rank == 0 ? std::min<int>(local_size, cores > 0 ? static_cast<int>(cores) : 1) : 0;
  int total = 0;
  PETACOMM_APP_MPI(MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, comm));
  return total;
}

// ---- the run -------------------------------------------------------------------------------
struct Result {
  Components phase[3];
  double flops[3] = {0, 0, 0};
  std::vector<double> fisher, fisher_inverse, dlnl_dc, estimate;
  bool fisher_positive_definite = false;
  double residual = 0;  // ||D z - d|| / ||d||, z = D^-1 d
  // Gang redistribution (W phase): seconds per method (max over ranks), blocks moved.
  double remap_seconds = 0, pdgemr2d_seconds = 0;
  double redistributed_bytes = 0;  // summed over ranks
  int remap_partners_max = 0;
  int redistributions = 0;
  bool redistribution_identical = true;
};

class MadBench {
 public:
  MadBench(const Options &o, MPI_Comm comm)
      : o_(o), comm_(comm), store_(o.iodir, o.rmod, o.wmod, comm) {
    PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank_));
    PETACOMM_APP_MPI(MPI_Comm_size(comm, &size_));
    spectrum_ = make_spectrum(o.npix, o.nbin);
    positions_ = pixel_positions(o.npix, spectrum_.nside);
    data_.resize(static_cast<std::size_t>(o.npix));
    const CounterStream stream(o.seed, kStreamMadbenchData, 0);
    for (int i = 0; i < o.npix; ++i) data_[i] = stream.normal(static_cast<std::uint64_t>(i));
    make_grids();
  }
  ~MadBench() {
    for (auto &g : gangs_)
      if (g.contains_me()) Cblacs_gridexit(g.context);
    if (world_.contains_me()) Cblacs_gridexit(world_.context);
  }
  MadBench(const MadBench &) = delete;
  MadBench &operator=(const MadBench &) = delete;

  const Grid &world() const { return world_; }
  const Spectrum &spectrum() const { return spectrum_; }
  int my_gang() const { return rank_ / (size_ / o_.ngang); }
  MatrixStore &store() { return store_; }

  Result run() {
    Result r;
    BlockCyclic layout(world_, o_.npix, o_.bsize);
    std::vector<double> dinv;
    dsdc(layout, r);
    invd(layout, r, dinv);
    w(layout, r, dinv);
    small_steps(r);
    return r;
  }

 private:
  void make_grids() {
    int rows = 0, cols = 0;
    grid_shape(size_, rows, cols);
    world_.rows = rows;
    world_.cols = cols;
    for (int r = 0; r < size_; ++r) world_.ranks.push_back(r);  // row-major, as gridinit "Row"
    Cblacs_get(-1, 0, &world_.context);
    Cblacs_gridinit(&world_.context, "Row", rows, cols);
    int nr, nc;
    Cblacs_gridinfo(world_.context, &nr, &nc, &world_.my_row, &world_.my_col);
    if (o_.ngang == 1) return;
    const int q = size_ / o_.ngang;
    gangs_.resize(o_.ngang);
    for (int g = 0; g < o_.ngang; ++g) {
      Grid &gang = gangs_[g];
      grid_shape(q, gang.rows, gang.cols);
      std::vector<int> usermap(q);  // column-major: usermap[r + c rows]
      for (int r = 0; r < gang.rows; ++r)
        for (int c = 0; c < gang.cols; ++c) {
          gang.ranks.push_back(g * q + r * gang.cols + c);
          usermap[r + c * gang.rows] = g * q + r * gang.cols + c;
        }
      // Collective over all processes: each gets a context only for its own gang.
      Cblacs_get(-1, 0, &gang.context);
      Cblacs_gridmap(&gang.context, usermap.data(), gang.rows, gang.rows, gang.cols);
      if (g == my_gang()) {
        Cblacs_gridinfo(gang.context, &nr, &nc, &gang.my_row, &gang.my_col);
      } else {
        gang.context = -1;
        gang.my_row = gang.my_col = -1;
      }
    }
  }

  // Visits the local elements: f(local offset, global row, global column).
  template <typename F>
  void for_local(const BlockCyclic &l, F &&f) const {
    for (int lj = 0; lj < l.local_cols; ++lj) {
      const int j = l.global_col(lj);
      for (int li = 0; li < l.local_rows; ++li)
        f(static_cast<std::size_t>(li) + static_cast<std::size_t>(lj) * l.lld, l.global_row(li), j);
    }
  }

  double cosine(int i, int j) const {
    const double *a = &positions_[3 * static_cast<std::size_t>(i)];
    const double *b = &positions_[3 * static_cast<std::size_t>(j)];
    return std::clamp(a[0] * b[0] + a[1] * b[1] + a[2] * b[2], -1.0, 1.0);
  }

  static std::string bin_name(const char *what, int b) {
    return std::string(what) + ".b" + std::to_string(b);
  }

  // dSdC: Legendre recursion carried across the bins in two matrices (P_{l-1}, P_{l-2}).
  void dsdc(const BlockCyclic &l, Result &r) {
    Components &c = r.phase[0];
    Phase phase(kPhases[0], c, comm_);
    const std::size_t size = l.local_size();
    std::vector<double> p1(size), p2(size), ds(size);
    timed(c.calc, [&] {
      for_local(l, [&](std::size_t e, int i, int j) {
        p2[e] = 1.0;           // P_0
        p1[e] = cosine(i, j);  // P_1
      });
    });
    const double n2 = static_cast<double>(o_.npix) * o_.npix;
    r.flops[0] = 5 * n2;
    for (int b = 0; b < o_.nbin; ++b) {
      timed(c.calc, [&] {
        const int first = spectrum_.first[b], last = spectrum_.last[b];
        for_local(l, [&](std::size_t e, int i, int j) {
          const double x = cosine(i, j);
          double pm1 = p1[e], pm2 = p2[e], sum = 0;
          for (int ell = first; ell < last; ++ell) {
            const double p = ((2.0 * ell - 1) / ell * x) * pm1 - (ell - 1.0) / ell * pm2;
            pm2 = pm1;
            pm1 = p;
            sum += (2.0 * ell + 1) / (4 * kPi) * p;
          }
          p1[e] = pm1;
          p2[e] = pm2;
          ds[e] = sum;
        });
      });
      r.flops[0] += n2 * (5 + 6.0 * (spectrum_.last[b] - spectrum_.first[b]));
      timed(c.io, [&] { store_.write(bin_name("dSdC", b), ds); });
    }
    phase.close();
    store_.agree();  // after the phase: agreeing inside it would absorb its LBST
  }

  // invD: D = sum_b C_b dS/dC_b + sigma^2 I, inverted in place; z = D^-1 d.
  void invd(const BlockCyclic &l, Result &r, std::vector<double> &d) {
    Components &c = r.phase[1];
    Phase phase(kPhases[1], c, comm_);
    const std::size_t size = l.local_size();
    d.assign(size, 0.0);
    std::vector<double> buffer(size);
    const double n = o_.npix, n2 = n * n;
    for (int b = 0; b < o_.nbin; ++b) {
      timed(c.io, [&] { store_.read(bin_name("dSdC", b), buffer); });
      timed(c.calc, [&] {
        const double cb = spectrum_.fiducial[b];
        for (std::size_t e = 0; e < size; ++e) d[e] += cb * buffer[e];
      });
    }
    const int one = 1;
    int info = 0;
    timed(c.calc, [&] {
      for_local(l, [&](std::size_t e, int i, int j) {
        if (i == j) d[e] += o_.noise_variance;
      });
      pdpotrf_("L", &o_.npix, d.data(), &one, &one, l.desc, &info);
      if (info == 0) pdpotri_("L", &o_.npix, d.data(), &one, &one, l.desc, &info);
    });
    if (info != 0) store_.agree();  // a failed read makes D garbage: name that first
    if (info != 0)                  // S is positive semi-definite: only a wrong dS/dC can get here
      throw Error(PETACOMM_ERR_INTERNAL,
                  concat("invD: D = sum_b C_b dS/dC_b + noise is not positive definite "
                         "(pdpotrf/pdpotri info ",
                         info, ")"));
    r.flops[1] = 2 * n2 * o_.nbin + n * n2;
    // The inverse is in the lower triangle: its transpose fills the upper one.
    const double alpha = 1.0, beta = 0.0;
    timed(c.mpi, [&] {
      pdtran_(&o_.npix, &o_.npix, &alpha, d.data(), &one, &one, l.desc, &beta, buffer.data(), &one,
              &one, l.desc);
    });
    timed(c.calc, [&] {
      for_local(l, [&](std::size_t e, int i, int j) {
        if (i < j) d[e] = buffer[e];
      });
    });
    // z = D^-1 d, replicated on every process (partial products, then one sum).
    z_.assign(static_cast<std::size_t>(o_.npix), 0.0);
    timed(c.calc,
          [&] { for_local(l, [&](std::size_t e, int i, int j) { z_[i] += d[e] * data_[j]; }); });
    timed(c.mpi, [&] {
      PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, z_.data(), o_.npix, MPI_DOUBLE, MPI_SUM, comm_));
    });
    r.flops[1] += 2 * n2;
    phase.close();
    store_.agree();  // after the phase: agreeing inside it would absorb its LBST
  }

  // Moves matrices between layouts with the chosen method(s); the time goes to MPI.
  void redistribute(const std::vector<Transfer> &transfers, Components &c, Result &r,
                    std::vector<std::vector<double>> &shadow) {
    const bool remap = o_.redistribution != "pdgemr2d";
    const bool pdgemr2d = o_.redistribution != "remap";
    std::vector<Transfer> pd = transfers;
    if (remap && pdgemr2d) {  // pdgemr2d into shadow arrays, compared with remap's result
      shadow.resize(transfers.size());
      for (std::size_t k = 0; k < transfers.size(); ++k) {
        shadow[k].assign(transfers[k].target ? transfers[k].to->local_size() : 0, 0.0);
        pd[k].target = transfers[k].target ? shadow[k].data() : nullptr;
      }
    }
    // Each method starts after a barrier (not timed) so that it is timed alone.
    if (pdgemr2d) {
      PETACOMM_APP_MPI(MPI_Barrier(comm_));
      double t = 0;
      timed(t, [&] { pdgemr2d_transfers(pd, world_.context); });
      c.mpi += t;
      r.pdgemr2d_seconds += t;
    }
    if (remap) {
      PETACOMM_APP_MPI(MPI_Barrier(comm_));
      double t = 0;
      RemapCounts counts;
      timed(t, [&] { counts = remap_blocks(transfers, comm_); });
      c.mpi += t;
      r.remap_seconds += t;
      r.redistributed_bytes += static_cast<double>(counts.blocks_sent) * o_.bsize * o_.bsize * 8;
      r.remap_partners_max = std::max(r.remap_partners_max, counts.partners);
    }
    if (remap && pdgemr2d)
      for (std::size_t k = 0; k < transfers.size(); ++k)
        if (transfers[k].target && std::memcmp(shadow[k].data(), transfers[k].target,
                                               shadow[k].size() * sizeof(double)) != 0)
          r.redistribution_identical = false;
    ++r.redistributions;
  }

  // W: W_b = D^-1 dS/dC_b for every bin, NGANG at a time; dL/dC and the Fisher matrix.
  void w(const BlockCyclic &l, Result &r, std::vector<double> &dinv) {
    Components &c = r.phase[2];
    Phase phase(kPhases[2], c, comm_);
    const int G = o_.ngang;
    const std::size_t size = l.local_size();
    const double n = o_.npix, n2 = n * n;
    const int one = 1;
    const double alpha = 1.0, beta = 0.0;
    fisher_.assign(static_cast<std::size_t>(o_.nbin) * o_.nbin, 0.0);
    traces_.assign(static_cast<std::size_t>(o_.nbin), 0.0);  // d^T W_b z - tr W_b, partial
    s_z_.assign(static_cast<std::size_t>(o_.npix), 0.0);     // sum_b C_b dS_b z, partial
    std::vector<std::vector<double>> ds(static_cast<std::size_t>(G), std::vector<double>(size));
    std::vector<std::vector<double>> shadow;
    // Gang layouts; D^-1 copied to every gang.
    std::vector<BlockCyclic> gang_layout;
    std::vector<double> gang_dinv, gang_ds, gang_w;
    if (G > 1) {
      for (int g = 0; g < G; ++g) gang_layout.emplace_back(gangs_[g], o_.npix, o_.bsize);
      const BlockCyclic &mine = gang_layout[my_gang()];
      gang_dinv.resize(mine.local_size());
      gang_ds.resize(mine.local_size());
      gang_w.resize(mine.local_size());
      std::vector<Transfer> copies;
      for (int g = 0; g < G; ++g)
        copies.push_back(
            {&l, dinv.data(), &gang_layout[g], g == my_gang() ? gang_dinv.data() : nullptr});
      redistribute(copies, c, r, shadow);
      std::vector<double>().swap(dinv);  // the gangs hold D^-1 now
    }
    std::vector<double> wb(size), scratch(size);
    for (int b0 = 0; b0 < o_.nbin; b0 += G) {
      const int batch = std::min(G, o_.nbin - b0);
      for (int k = 0; k < batch; ++k)
        timed(c.io, [&] { store_.read(bin_name("dSdC", b0 + k), ds[k]); });
      std::vector<std::vector<double>> w_world;
      if (G == 1) {
        timed(c.calc, [&] {
          pdgemm_("N", "N", &o_.npix, &o_.npix, &o_.npix, &alpha, dinv.data(), &one, &one, l.desc,
                  ds[0].data(), &one, &one, l.desc, &beta, wb.data(), &one, &one, l.desc);
        });
      } else {
        std::vector<Transfer> out, back;
        for (int k = 0; k < batch; ++k)
          out.push_back(
              {&l, ds[k].data(), &gang_layout[k], k == my_gang() ? gang_ds.data() : nullptr});
        redistribute(out, c, r, shadow);
        if (my_gang() < batch) {
          const BlockCyclic &gl = gang_layout[my_gang()];
          timed(c.calc, [&] {
            pdgemm_("N", "N", &o_.npix, &o_.npix, &o_.npix, &alpha, gang_dinv.data(), &one, &one,
                    gl.desc, gang_ds.data(), &one, &one, gl.desc, &beta, gang_w.data(), &one, &one,
                    gl.desc);
          });
        }
        w_world.assign(static_cast<std::size_t>(batch), std::vector<double>(size));
        for (int k = 0; k < batch; ++k)
          back.push_back(
              {&gang_layout[k], k == my_gang() ? gang_w.data() : nullptr, &l, w_world[k].data()});
        redistribute(back, c, r, shadow);
      }
      for (int k = 0; k < batch; ++k)
        small_steps_of_bin(l, b0 + k, G == 1 ? wb : w_world[k], ds[k], scratch, c);
    }
    r.flops[2] = o_.nbin * (2 * n * n2 + 5 * n2) + o_.nbin * (o_.nbin + 1.0) * n2;
    timed(c.mpi, [&] {
      PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, fisher_.data(), o_.nbin * o_.nbin, MPI_DOUBLE,
                                     MPI_SUM, comm_));
      PETACOMM_APP_MPI(
          MPI_Allreduce(MPI_IN_PLACE, traces_.data(), o_.nbin, MPI_DOUBLE, MPI_SUM, comm_));
      PETACOMM_APP_MPI(
          MPI_Allreduce(MPI_IN_PLACE, s_z_.data(), o_.npix, MPI_DOUBLE, MPI_SUM, comm_));
    });
    phase.close();
    store_.agree();  // after the phase: agreeing inside it would absorb its LBST
  }

  // Local parts of dL/dC_b, S z and row b of the Fisher matrix, given W_b in world layout.
  void small_steps_of_bin(const BlockCyclic &l, int b, const std::vector<double> &wb,
                          std::vector<double> &ds, std::vector<double> &scratch, Components &c) {
    const int one = 1;
    const double alpha = 1.0, beta = 0.0;
    timed(c.calc, [&] {
      double quadratic = 0, trace = 0;
      const double cb = spectrum_.fiducial[b];
      for_local(l, [&](std::size_t e, int i, int j) {
        quadratic += data_[i] * wb[e] * z_[j];
        if (i == j) trace += wb[e];
        s_z_[i] += cb * ds[e] * z_[j];
      });
      traces_[b] += 0.5 * (quadratic - trace);
    });
    // W_b^T: F_bb = tr(W_b W_b) / 2 = sum W_b . W_b^T / 2; kept on disk for the later bins.
    timed(c.mpi, [&] {
      pdtran_(&o_.npix, &o_.npix, &alpha, wb.data(), &one, &one, l.desc, &beta, scratch.data(),
              &one, &one, l.desc);
    });
    const auto fisher_term = [&](int other) {
      timed(c.calc, [&] {
        double sum = 0;
        for (std::size_t e = 0; e < l.local_size(); ++e) sum += wb[e] * scratch[e];
        fisher_[static_cast<std::size_t>(b) * o_.nbin + other] += 0.5 * sum;
      });
    };
    fisher_term(b);
    timed(c.io, [&] { store_.write(bin_name("WT", b), scratch); });
    for (int other = 0; other < b; ++other) {
      timed(c.io, [&] { store_.read(bin_name("WT", other), scratch); });
      fisher_term(other);
    }
  }

  // Fisher inverse and one Newton-Raphson step (every rank, serially: NBIN x NBIN).
  void small_steps(Result &r) {
    const int nb = o_.nbin;
    r.fisher.assign(static_cast<std::size_t>(nb) * nb, 0.0);
    for (int b = 0; b < nb; ++b)
      for (int o = 0; o <= b; ++o) {
        r.fisher[b * nb + o] = fisher_[b * nb + o];
        r.fisher[o * nb + b] = fisher_[b * nb + o];
      }
    r.dlnl_dc = traces_;
    r.fisher_inverse = r.fisher;
    int info = 0;
    dpotrf_("L", &nb, r.fisher_inverse.data(), &nb, &info);
    if (info == 0) dpotri_("L", &nb, r.fisher_inverse.data(), &nb, &info);
    r.fisher_positive_definite = info == 0;
    if (r.fisher_positive_definite) {
      for (int col = 0; col < nb; ++col)  // column-major lower -> full symmetric
        for (int row = 0; row < col; ++row)
          r.fisher_inverse[row + col * nb] = r.fisher_inverse[col + row * nb];
      r.estimate = spectrum_.fiducial;
      for (int b = 0; b < nb; ++b)
        for (int o = 0; o < nb; ++o) r.estimate[b] += r.fisher_inverse[b * nb + o] * r.dlnl_dc[o];
    }
    // D z = S z + sigma^2 z must give back d.
    double err = 0, norm = 0;
    for (int i = 0; i < o_.npix; ++i) {
      const double e = s_z_[i] + o_.noise_variance * z_[i] - data_[i];
      err += e * e;
      norm += data_[i] * data_[i];
    }
    r.residual = std::sqrt(err / norm);
  }

  const Options &o_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  MatrixStore store_;
  Spectrum spectrum_;
  std::vector<double> positions_, data_, z_, fisher_, traces_, s_z_;
  Grid world_;
  std::vector<Grid> gangs_;
};

// ---- report --------------------------------------------------------------------------------
struct Stat {
  double mean = 0, min = 0, max = 0;
};

Stat over_ranks(double v, MPI_Comm comm) {
  int p = 1;
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &p));
  Stat s;
  PETACOMM_APP_MPI(MPI_Allreduce(&v, &s.mean, 1, MPI_DOUBLE, MPI_SUM, comm));
  PETACOMM_APP_MPI(MPI_Allreduce(&v, &s.min, 1, MPI_DOUBLE, MPI_MIN, comm));
  PETACOMM_APP_MPI(MPI_Allreduce(&v, &s.max, 1, MPI_DOUBLE, MPI_MAX, comm));
  s.mean /= p;
  return s;
}

void write_stat(JsonOut &j, const char *key, const Stat &s) {
  j.begin_object(key).value("mean", s.mean).value("min", s.min).value("max", s.max).end_object();
}

void write_matrix(JsonOut &j, const char *key, const std::vector<double> &m, int n) {
  j.begin_array(key);
  for (int r = 0; r < n && !m.empty(); ++r) {
    j.begin_array();
    for (int c = 0; c < n; ++c) j.value(m[static_cast<std::size_t>(r) * n + c]);
    j.end_array();
  }
  j.end_array();
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
      if (o.npix % o.bsize != 0)
        fail_arg("--npix: must be a multiple of --bsize (", o.bsize, "), got ", o.npix);
      if (o.ngang > size)
        fail_arg("--ngang: ", o.ngang, " gangs need at least as many ranks, got ", size, " ranks");
      if (size % o.ngang != 0)
        fail_arg("--ngang: must divide the number of ranks (", size, "), got ", o.ngang);
      make_spectrum(o.npix, o.nbin);  // checks --nbin
      if (rank == 0) check_parent_writable(o.json, "--json");
    }
  } catch (const Error &e) {
    error = e.what();
  }
  agree_on_error(error, comm);
  if (help) {
    if (rank == 0) std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  MadBench bench(o, comm);
  bench.store().check_writable();
  Result r;
  try {
    r = bench.run();
  } catch (...) {
    if (!o.keep_files) bench.store().remove_all();
    throw;
  }
  if (!o.keep_files) bench.store().remove_all();

  const double core_peak = o.peak_gflops > 0 ? o.peak_gflops : estimated_core_peak_gflops();
  const int cores = effective_cores(comm);
  Stat comp[3][4], wall[3];
  for (int p = 0; p < 3; ++p) {
    const Components &c = r.phase[p];
    comp[p][0] = over_ranks(c.calc, comm);
    comp[p][1] = over_ranks(c.mpi, comm);
    comp[p][2] = over_ranks(c.io, comm);
    comp[p][3] = over_ranks(c.lbst, comm);
    wall[p] = over_ranks(c.wall, comm);
  }
  const Stat remap = over_ranks(r.remap_seconds, comm), pdg = over_ranks(r.pdgemr2d_seconds, comm);
  double moved = r.redistributed_bytes;
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_DOUBLE, MPI_SUM, comm));
  int identical = r.redistribution_identical ? 1 : 0;
  PETACOMM_APP_MPI(MPI_Allreduce(MPI_IN_PLACE, &identical, 1, MPI_INT, MPI_MIN, comm));
  const bool verified = r.fisher_positive_definite && r.residual <= 1e-8 && identical;
  if (rank != 0) return verified ? 0 : 3;

  const Grid &g = bench.world();
  const Spectrum &s = bench.spectrum();
  if (!o.quiet) {
    std::printf(
        "petacomm-madbench: NPIX %d NBIN %d NGANG %d BSIZE %d RMOD %d WMOD %d on %d ranks"
        " (%dx%d grid)\n",
        o.npix, o.nbin, o.ngang, o.bsize, o.rmod, o.wmod, size, g.rows, g.cols);
    std::printf("  pixels: first %d of nside %lld; multipoles 2..%d in %d bins\n\n", o.npix,
                static_cast<long long>(s.nside), s.lmax, o.nbin);
    std::printf("phase %-21s %-21s %-21s %s\n", "CALC s", "MPI s", "I/O s", "LBST s");
    for (int p = 0; p < 3; ++p) {
      std::printf("%-5s", kPhases[p]);
      for (int k = 0; k < 4; ++k) {
        char cell[64];
        std::snprintf(cell, sizeof cell, "%.3f [%.3f:%.3f]", comp[p][k].mean, comp[p][k].min,
                      comp[p][k].max);
        std::printf(k < 3 ? " %-21s" : " %s", cell);
      }
      std::printf("\n");
    }
    std::printf("  mean [min:max] over ranks; LBST: wait in the barrier closing the phase\n\n");
    std::printf("%-5s %9s %10s %9s %8s\n", "phase", "wall s", "GFLOP", "GFLOP/s", "% peak");
    for (int p = 0; p < 3; ++p) {
      const double gflops = r.flops[p] / wall[p].max * 1e-9;
      std::printf("%-5s %9.3f %10.3f %9.3f %8.2f\n", kPhases[p], wall[p].max, r.flops[p] * 1e-9,
                  gflops, core_peak > 0 ? 100 * gflops / (core_peak * cores) : 0.0);
    }
    std::printf("  wall: slowest rank; %% peak of %d cores x %.1f GFLOP/s\n", cores, core_peak);
    if (o.ngang > 1)
      std::printf(
          "gang redistribution (%d of them, %.1f MiB): remap %.4f s, pdgemr2d %.4f s%s\n",
          r.redistributions, moved / (1 << 20), remap.max, pdg.max,
          o.redistribution == "both" ? (identical ? " -> identical" : " -> DIFFERENT") : "");
    std::printf("Fisher matrix diagonal:");
    for (int b = 0; b < o.nbin; ++b)
      std::printf("%s %.4g", b > 0 && b % 8 == 0 ? "\n                       " : "",
                  r.fisher[static_cast<std::size_t>(b) * o.nbin + b]);
    std::printf("\nverification: ||D z - d|| / ||d|| = %.2e (<= 1e-8), Fisher matrix %s: %s\n",
                r.residual,
                r.fisher_positive_definite ? "positive definite" : "NOT positive definite",
                verified ? "pass" : "FAIL");
  }
  if (!o.json.empty()) {
    JsonOut j;
    j.begin_object().value("schema", "petacomm.madbench").value("schema_version", kSchemaVersion);
    j.value("ranks", size);
    j.begin_object("parameters")
        .value("npix", o.npix)
        .value("nbin", o.nbin)
        .value("ngang", o.ngang)
        .value("bsize", o.bsize)
        .value("rmod", o.rmod)
        .value("wmod", o.wmod)
        .value("redistribution", o.redistribution)
        .value("noise_variance", o.noise_variance)
        .value("seed", static_cast<std::int64_t>(o.seed))
        .end_object();
    j.begin_object("grid").value("rows", g.rows).value("cols", g.cols).end_object();
    j.value("nside", s.nside).value("lmax", s.lmax);
    j.begin_array("bins");
    for (int b = 0; b < o.nbin; ++b)
      j.begin_object()
          .value("lmin", s.first[b])
          .value("lmax", s.last[b] - 1)
          .value("c_fiducial", s.fiducial[b])
          .end_object();
    j.end_array();
    j.value("peak_gflops_per_core", core_peak).value("cores", cores);
    j.begin_object("phases");
    for (int p = 0; p < 3; ++p) {
      const double gflops = r.flops[p] / wall[p].max * 1e-9;
      j.begin_object(kPhases[p]);
      write_stat(j, "wall_s", wall[p]);
      for (int k = 0; k < 4; ++k)
        write_stat(j,
                   k == 0   ? "calc_s"
                   : k == 1 ? "mpi_s"
                   : k == 2 ? "io_s"
                            : "lbst_s",
                   comp[p][k]);
      j.value("flops", r.flops[p]).value("gflops", gflops);
      j.value("percent_peak", core_peak > 0 ? 100 * gflops / (core_peak * cores) : 0.0);
      j.end_object();
    }
    j.end_object();
    j.begin_object("redistribution")
        .value("method", o.redistribution)
        .value("count", r.redistributions)
        .value("bytes", moved)
        .value("remap_partners_max", r.remap_partners_max);
    write_stat(j, "remap_s", remap);
    write_stat(j, "pdgemr2d_s", pdg);
    j.value("identical", identical != 0).end_object();
    write_matrix(j, "fisher", r.fisher, o.nbin);
    write_matrix(j, "fisher_inverse", r.fisher_inverse, o.nbin);
    j.value("dlnl_dc", r.dlnl_dc).value("c_estimate", r.estimate);
    j.begin_object("io")
        .value("bytes_written_rank0", bench.store().bytes_written())
        .value("bytes_read_rank0", bench.store().bytes_read())
        .end_object();
    j.begin_object("verification")
        .value("residual", r.residual)
        .value("tolerance", 1e-8)
        .value("fisher_positive_definite", r.fisher_positive_definite)
        .value("redistribution_identical", identical != 0)
        .value("pass", verified)
        .end_object();
    j.end_object();
    write_file_atomic(o.json, j.str() + "\n", "--json");
  }
  return verified ? 0 : 3;
}

}  // namespace
}  // namespace petacomm::apps::madbench

int main(int argc, char **argv) {
  return petacomm::apps::main_of_app("petacomm-madbench", argc, argv,
                                     petacomm::apps::madbench::run);
}
