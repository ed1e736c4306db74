// petacomm-fftfilter: the Fourier filter of the NEMORB gyrokinetic code as a mini-app. A
// real field f(s, chi, phi) distributed over s and chi is filtered to the Fourier modes
// |m| <= M (chi), |n| <= N (phi) by each variant of petacomm_fftfilter (plain, packed,
// packed-partial), the variants interleaved repetition by repetition; the program prints
// time per filter (max over ranks, median over repetitions), per-phase times, bytes and
// messages per rank, and the error against a serial 2-D FFT reference computed by the
// root of each chi row; --json writes the same.
#include <fftw3.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "arg_parser.hpp"
#include "error.hpp"
#include "json_out.hpp"
#include "petacomm/transpose.h"

namespace {

const char *kUsage =
    "usage: petacomm-fftfilter [options]\n"
    "  --shape NS,NCHI,NPHI   field size (default 32,512,256: NEMORB's 512,2048,1024 scaled;\n"
    "                         NCHI and NPHI even)\n"
    "  --grid PS,PCHI         process grid over s and chi (default 1,p)\n"
    "  --modes M,N            keep |m| <= M along chi, |n| <= N along phi (default NCHI/8,\n"
    "                         NPHI/16)\n"
    "  --variant V            plain, packed, packed-partial or all (default all)\n"
    "  --strategy S           transposes of plain and packed (default auto)\n"
    "  --planner P            estimate or measure (default estimate)\n"
    "  --reps R               timed filters per variant (default 10)\n"
    "  --warmup W             untimed filters first (default 2)\n"
    "  --no-verify            skip the serial reference\n"
    "  --json FILE            also write the results (atomically)\n"
    "  --help                 this text\n";

struct Options {
  std::int64_t shape[3] = {32, 512, 256};
  int grid[2] = {0, 0};
  std::int64_t modes[2] = {-1, -1};
  std::vector<int> variants = {PETACOMM_FFTFILTER_PLAIN, PETACOMM_FFTFILTER_PACKED,
                               PETACOMM_FFTFILTER_PACKED_PARTIAL};
  std::string strategy = "auto", planner = "estimate", json;
  int reps = 10, warmup = 2;
  bool verify = true;
};

constexpr int kMaxReps = 1000000;  // --reps and --warmup; bench fftfilter takes the same
constexpr std::int64_t kMaxExtent = std::int64_t{1} << 40, kMaxRanks = 1 << 24;
const char *kVariantNames[] = {"plain", "packed", "packed-partial"};

[[noreturn]] void usage_error(int rank, const std::string &message) {
  if (rank == 0) std::fprintf(stderr, "petacomm-fftfilter: %s\n%s", message.c_str(), kUsage);
  MPI_Finalize();
  std::exit(2);
}

// A whole number in [low, high] for `option` (the apps' parse_int), else a usage error:
// atoi took 99999999999 repetitions for 1215752191, strtoll's value cast to int a grid of
// 4294967297 for 1.
std::int64_t whole_number(int rank, const std::string &option, const std::string &text,
                          std::int64_t low, std::int64_t high) {
  try {
    return petacomm::apps::parse_int(option, text, low, high);
  } catch (const petacomm::Error &e) {
    usage_error(rank, e.what());
  }
}

// N comma-separated whole numbers in [low, high], or a usage error naming `option`.
template <class T, std::size_t N>
void parse_list(int rank, const std::string &option, const std::string &text, T (&out)[N],
                std::int64_t low, std::int64_t high, const char *form) {
  std::size_t at = 0;
  for (std::size_t k = 0; k < N; ++k) {
    const std::size_t end = k + 1 < N ? text.find(',', at) : text.size();
    if (end == std::string::npos || at > text.size())
      usage_error(rank, option + ": expected " + form + ", got " + text);
    out[k] = static_cast<T>(whole_number(rank, option, text.substr(at, end - at), low, high));
    at = end + 1;
  }
}

Options parse(int argc, char **argv, int rank, int size) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) usage_error(rank, arg + ": needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      if (rank == 0) std::fputs(kUsage, stdout);
      MPI_Finalize();
      std::exit(0);
    } else if (arg == "--shape") {
      parse_list(rank, arg, value(), o.shape, 1, kMaxExtent, "NS,NCHI,NPHI");
    } else if (arg == "--grid") {
      parse_list(rank, arg, value(), o.grid, 1, kMaxRanks, "PS,PCHI");
    } else if (arg == "--modes") {
      parse_list(rank, arg, value(), o.modes, 0, kMaxExtent, "M,N");
    } else if (arg == "--variant") {
      const std::string v = value();
      if (v == "all") {
        o.variants = {0, 1, 2};
      } else {
        auto *found = std::find(std::begin(kVariantNames), std::end(kVariantNames), v);
        if (found == std::end(kVariantNames))
          usage_error(rank, "--variant: expected plain, packed, packed-partial or all, got " + v);
        o.variants = {static_cast<int>(found - std::begin(kVariantNames))};
      }
    } else if (arg == "--strategy") {
      o.strategy = value();
    } else if (arg == "--planner") {
      o.planner = value();
    } else if (arg == "--reps") {
      o.reps = static_cast<int>(whole_number(rank, arg, value(), 1, kMaxReps));
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(whole_number(rank, arg, value(), 0, kMaxReps));
    } else if (arg == "--no-verify") {
      o.verify = false;
    } else if (arg == "--json") {
      o.json = value();
    } else {
      usage_error(rank, "unknown option " + arg);
    }
  }
  if (o.grid[0] == 0) {
    o.grid[0] = 1;
    o.grid[1] = size;
  }
  if (o.modes[0] < 0) {
    o.modes[0] = o.shape[1] / 8;
    o.modes[1] = o.shape[2] / 16;
  }
  return o;
}

// Field values from the global index (splitmix hash -> [-1, 1)) plus a few smooth modes.
double field_value(std::int64_t s, std::int64_t c, std::int64_t f, const Options &o) {
  std::uint64_t x = static_cast<std::uint64_t>((s * o.shape[1] + c) * o.shape[2] + f) + 12345;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  const double noise = static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  const double chi = 2 * M_PI * static_cast<double>(c) / static_cast<double>(o.shape[1]);
  const double phi = 2 * M_PI * static_cast<double>(f) / static_cast<double>(o.shape[2]);
  return noise + std::cos(3 * chi + 2 * phi) + 0.5 * std::sin(chi - 5 * phi) + 0.01 * s;
}

struct Result {
  int variant;
  double seconds = 0, fft_phi = 0, transpose = 0, fft_chi = 0, mask = 0;
  double bytes = 0, messages = 0, error = -1;
  std::string strategy;
};

double max_over_ranks(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

void check(petacomm_status status, const char *call) {
  if (status == PETACOMM_SUCCESS) return;
  std::fprintf(stderr, "petacomm-fftfilter: %s: %s\n", call, petacomm_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// Relative error (L2) of `out` against the serial reference: the root of each chi row
// gathers its row's field and result, filters each s plane with a 2-D complex FFT.
double verify(const Options &o, const std::int64_t shape[3], const std::vector<double> &field,
              const std::vector<double> &out, int rank) {
  const int i_s = rank / o.grid[1], i_chi = rank % o.grid[1];
  MPI_Comm row;
  MPI_Comm_split(MPI_COMM_WORLD, i_s, i_chi, &row);
  const std::int64_t n_chi = o.shape[1], n_phi = o.shape[2], plane = n_chi * n_phi;
  const std::int64_t local = shape[0] * shape[1] * n_phi;
  int q = 1;
  MPI_Comm_size(row, &q);
  std::vector<int> counts(q), displs(q);
  const int mine = static_cast<int>(local);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, row);
  for (int r = 1; r < q; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  const std::int64_t total = i_chi == 0 ? displs[q - 1] + counts[q - 1] : 0;
  std::vector<double> all_in(total), all_out(total);
  MPI_Gatherv(field.data(), mine, MPI_DOUBLE, all_in.data(), counts.data(), displs.data(),
              MPI_DOUBLE, 0, row);
  MPI_Gatherv(out.data(), mine, MPI_DOUBLE, all_out.data(), counts.data(), displs.data(),
              MPI_DOUBLE, 0, row);
  double sums[2] = {0, 0};  // squared error, squared reference
  if (i_chi == 0) {
    std::vector<std::complex<double>> a(plane);
    auto *p = reinterpret_cast<fftw_complex *>(a.data());
    fftw_plan fwd = fftw_plan_dft_2d(static_cast<int>(n_chi), static_cast<int>(n_phi), p, p,
                                     FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_plan bwd = fftw_plan_dft_2d(static_cast<int>(n_chi), static_cast<int>(n_phi), p, p,
                                     FFTW_BACKWARD, FFTW_ESTIMATE);
    // Gathered blocks are [s][chi block][phi] per rank, in chi order.
    for (std::int64_t s = 0; s < shape[0]; ++s) {
      for (int r = 0; r < q; ++r) {
        const std::int64_t rows = counts[r] / (shape[0] * n_phi);
        std::int64_t chi0 = 0;
        for (int k = 0; k < r; ++k) chi0 += counts[k] / (shape[0] * n_phi);
        for (std::int64_t c = 0; c < rows; ++c)
          for (std::int64_t f = 0; f < n_phi; ++f)
            a[(chi0 + c) * n_phi + f] = all_in[displs[r] + (s * rows + c) * n_phi + f];
      }
      fftw_execute(fwd);
      for (std::int64_t m = 0; m < n_chi; ++m)
        for (std::int64_t n = 0; n < n_phi; ++n)
          if (std::min(m, n_chi - m) > o.modes[0] || std::min(n, n_phi - n) > o.modes[1])
            a[m * n_phi + n] = 0;
      fftw_execute(bwd);
      for (int r = 0; r < q; ++r) {
        const std::int64_t rows = counts[r] / (shape[0] * n_phi);
        std::int64_t chi0 = 0;
        for (int k = 0; k < r; ++k) chi0 += counts[k] / (shape[0] * n_phi);
        for (std::int64_t c = 0; c < rows; ++c)
          for (std::int64_t f = 0; f < n_phi; ++f) {
            const double want = a[(chi0 + c) * n_phi + f].real() / static_cast<double>(plane);
            const double got = all_out[displs[r] + (s * rows + c) * n_phi + f];
            sums[0] += (got - want) * (got - want);
            sums[1] += want * want;
          }
      }
    }
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
  }
  MPI_Comm_free(&row);
  double global[2];
  MPI_Allreduce(sums, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return global[1] > 0 ? std::sqrt(global[0] / global[1]) : std::sqrt(global[0]);
}

// One variant's filter, its field and output.
struct Contender {
  int variant;
  petacomm_fftfilter filter = nullptr;
  std::int64_t shape[3], offset[3];
  std::vector<double> field, out;
  std::vector<double> times;
  petacomm_fftfilter_stats before{};
};

void create(Contender &c, const Options &o) {
  petacomm_transpose_options topts;
  petacomm_transpose_options_default(&topts);
  const bool partial = c.variant == PETACOMM_FFTFILTER_PACKED_PARTIAL;
  topts.strategy = partial ? "partial" : o.strategy.c_str();
  topts.planner = partial ? "estimate" : o.planner.c_str();
  check(petacomm_fftfilter_create(MPI_COMM_WORLD, o.shape, o.grid, o.modes,
                                  static_cast<petacomm_fftfilter_variant>(c.variant), &topts,
                                  &c.filter),
        "petacomm_fftfilter_create");
  check(petacomm_fftfilter_local(c.filter, c.shape, c.offset), "petacomm_fftfilter_local");
  c.field.resize(c.shape[0] * c.shape[1] * c.shape[2]);
  c.out.resize(c.field.size());
  for (std::int64_t s = 0; s < c.shape[0]; ++s)
    for (std::int64_t k = 0; k < c.shape[1]; ++k)
      for (std::int64_t f = 0; f < c.shape[2]; ++f)
        c.field[(s * c.shape[1] + k) * c.shape[2] + f] =
            field_value(c.offset[0] + s, c.offset[1] + k, f, o);
}

void apply(Contender &c) {
  check(petacomm_fftfilter_apply(c.filter, c.field.data(), c.out.data()),
        "petacomm_fftfilter_apply");
}

Result summarise(Contender &c, const Options &o, int rank) {
  petacomm_fftfilter_stats after{};
  check(petacomm_fftfilter_stats_get(c.filter, &after), "petacomm_fftfilter_stats_get");
  std::sort(c.times.begin(), c.times.end());
  Result res;
  res.variant = c.variant;
  res.seconds = c.times[c.times.size() / 2];
  const petacomm_fftfilter_stats &b = c.before;
  const double n = static_cast<double>(after.applications - b.applications);
  res.fft_phi = max_over_ranks((after.fft_phi_seconds - b.fft_phi_seconds) / n);
  res.transpose = max_over_ranks((after.transpose_seconds - b.transpose_seconds) / n);
  res.fft_chi = max_over_ranks((after.fft_chi_seconds - b.fft_chi_seconds) / n);
  res.mask = max_over_ranks((after.mask_seconds - b.mask_seconds) / n);
  res.bytes = max_over_ranks((after.bytes_sent - b.bytes_sent) / n);
  res.messages = max_over_ranks((after.messages_sent - b.messages_sent) / n);
  size_t needed = 0;
  petacomm_fftfilter_describe(c.filter, nullptr, 0, &needed);
  std::string text(needed, '\0');
  petacomm_fftfilter_describe(c.filter, text.data(), needed, nullptr);
  const std::size_t at = text.find("\"strategy\":\"");
  if (at != std::string::npos)
    res.strategy = text.substr(at + 12, text.find('"', at + 12) - (at + 12));
  if (o.verify) res.error = verify(o, c.shape, c.field, c.out, rank);
  check(petacomm_fftfilter_free(&c.filter), "petacomm_fftfilter_free");
  return res;
}

// Every variant on the same field, repetition by repetition (side by side: a shared
// machine's load changes hit all variants alike).
std::vector<Result> run_variants(const Options &o, int rank) {
  std::vector<Contender> contenders(o.variants.size());
  for (std::size_t k = 0; k < contenders.size(); ++k) {
    contenders[k].variant = o.variants[k];
    create(contenders[k], o);
  }
  for (Contender &c : contenders) {
    for (int w = 0; w < o.warmup; ++w) apply(c);
    check(petacomm_fftfilter_stats_get(c.filter, &c.before), "petacomm_fftfilter_stats_get");
  }
  for (int r = 0; r < o.reps; ++r)
    for (Contender &c : contenders) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      apply(c);
      c.times.push_back(max_over_ranks(MPI_Wtime() - start));
    }
  std::vector<Result> results;
  for (Contender &c : contenders) results.push_back(summarise(c, o, rank));
  return results;
}

bool write_json(const std::string &path, const std::string &text) {
  const std::string temp = path + ".tmp." + std::to_string(static_cast<long>(getpid()));
  std::FILE *f = std::fopen(temp.c_str(), "w");
  if (f == nullptr) return false;
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !written || std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Options o = parse(argc, argv, rank, size);
  if (!o.json.empty() && rank == 0) {  // fail before running when the file cannot be written
    std::FILE *probe = std::fopen((o.json + ".probe").c_str(), "w");
    if (probe == nullptr) usage_error(rank, "--json: cannot write " + o.json);
    std::fclose(probe);
    std::remove((o.json + ".probe").c_str());
  }
  const std::vector<Result> results = run_variants(o, rank);
  bool ok = true;  // every rank holds the reduced errors
  for (const Result &r : results) ok = ok && (!o.verify || r.error <= 1e-12);
  if (rank == 0) {
    std::printf(
        "field %lld x %lld x %lld (s, chi, phi) float64 on %d ranks (grid %d x %d), "
        "|m| <= %lld, |n| <= %lld\n",
        static_cast<long long>(o.shape[0]), static_cast<long long>(o.shape[1]),
        static_cast<long long>(o.shape[2]), size, o.grid[0], o.grid[1],
        static_cast<long long>(o.modes[0]), static_cast<long long>(o.modes[1]));
    std::printf("%-15s %9s %7s %9s %7s %7s %9s %5s %9s %s\n", "variant", "ms/filter", "phi ms",
                "transp ms", "chi ms", "mask ms", "KiB/rank", "msgs", "rel error", "strategy");
    for (const Result &r : results)
      std::printf("%-15s %9.2f %7.2f %9.2f %7.2f %7.2f %9.1f %5.0f %9.1e %s\n",
                  kVariantNames[r.variant], r.seconds * 1e3, r.fft_phi * 1e3, r.transpose * 1e3,
                  r.fft_chi * 1e3, r.mask * 1e3, r.bytes / 1024, r.messages, r.error,
                  r.strategy.c_str());
    const Result *plain = nullptr;
    for (const Result &r : results)
      if (r.variant == PETACOMM_FFTFILTER_PLAIN) plain = &r;
    for (const Result &r : results)
      if (plain != nullptr && &r != plain)
        std::printf("%s vs plain: %.2fx faster, %.2fx fewer bytes\n", kVariantNames[r.variant],
                    plain->seconds / r.seconds, r.bytes > 0 ? plain->bytes / r.bytes : 0.0);
    std::printf(
        "(ms/filter: median over %d filters of the max over ranks; phases: mean per\n"
        " filter, max over ranks; KiB, msgs: sent per filter by the busiest rank;\n"
        " rel error: L2 against a serial 2-D FFT of each s plane, -1: not verified)\n",
        o.reps);
    std::printf("verification: %s\n", !o.verify ? "skipped" : ok ? "passed" : "FAILED");
    if (!o.json.empty()) {
      petacomm::JsonOut j;
      j.begin_object().value("schema", "petacomm-fftfilter").value("schema_version", 1);
      j.begin_array("shape");
      for (auto n : o.shape) j.value(nullptr, n);
      j.end_array().begin_array("grid").value(nullptr, o.grid[0]).value(nullptr, o.grid[1]);
      j.end_array().begin_array("modes").value(nullptr, o.modes[0]).value(nullptr, o.modes[1]);
      j.end_array().value("ranks", size).value("reps", o.reps);
      j.value("verified", o.verify).value("verification_passed", ok);
      j.begin_array("variants");
      for (const Result &r : results) {
        j.begin_object().value("variant", kVariantNames[r.variant]);
        j.value("strategy", r.strategy).value("seconds_per_filter", r.seconds);
        j.begin_object("phase_seconds").value("fft_phi", r.fft_phi).value("transpose", r.transpose);
        j.value("fft_chi", r.fft_chi).value("mask", r.mask).end_object();
        j.value("bytes_per_rank", r.bytes).value("messages_per_rank", r.messages);
        j.value("relative_error", o.verify ? r.error : -1.0);
        j.value("verified", o.verify && r.error <= 1e-12).end_object();
      }
      j.end_array().end_object();
      if (!write_json(o.json, j.str() + "\n")) {
        std::fprintf(stderr, "petacomm-fftfilter: --json: cannot write %s\n", o.json.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return ok ? 0 : 3;
}
