// Every registered strategy x dtype x operator x k in {1, 3} against a reference computed locally
// (every rank regenerates every rank's keys and values), on several key sets: mixed with
// repeats, keys near 2^62 and a rank without keys; all keys on all ranks; none shared; one
// key everywhere; no keys at all. Integers must match exactly; floats within 1e-5 (float32)
// or 1e-12 (float64) relative in free order, and bitwise with deterministic = 1.
// `--strategy NAME --node-sizes 1,2,3,4` runs one strategy's part of the matrix once per
// virtual node size (PETACOMM_NODE_SIZE, set here before each plan on every rank alike).
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "petacomm/xchg.h"

namespace {

int failures = 0;
int checks = 0;
int me = 0, nranks = 1;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    ++checks;                                                                                      \
    if (!(cond)) {                                                                                 \
      if (failures < 20) {                                                                         \
        std::fprintf(stderr, "rank %d: %s:%d: CHECK failed: %s: ", me, __FILE__, __LINE__, #cond); \
        std::fprintf(stderr, __VA_ARGS__);                                                         \
        std::fprintf(stderr, "\n");                                                                \
      }                                                                                            \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

std::uint64_t hash(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::int64_t kHigh = std::int64_t{1} << 62;

std::vector<std::int64_t> keys_for(int scenario, int rank, int p) {
  std::vector<std::int64_t> keys;
  switch (scenario) {
    case 0: {  // mixed: repeats, a rank without keys, keys near 2^62, one key everywhere
      if (p > 1 && rank == 1) break;
      const int n = 40 + 7 * rank;
      for (int i = 0; i < n; ++i) {
        const std::uint64_t h = hash(static_cast<std::uint64_t>(rank) * 1000 + i);
        std::int64_t key = static_cast<std::int64_t>(h % 120);
        if (i % 5 == 0) key = kHigh + static_cast<std::int64_t>(h % 9) - 4;
        keys.push_back(key);
      }
      keys.push_back(77);            // everywhere
      keys.push_back(keys.front());  // a repeat
      break;
    }
    case 1:  // all keys on all ranks, in a rank-dependent order
      for (int i = 0; i < 50; ++i) keys.push_back((i * 7 + rank * 3) % 50);
      break;
    case 2:  // none shared
      for (int i = 0; i < 30; ++i) keys.push_back(std::int64_t{rank} * 1000 + i * 3);
      break;
    case 3:  // one key everywhere, three times per rank
      keys.assign(3, kHigh + 5);
      break;
    default:  // no keys anywhere
      break;
  }
  return keys;
}
const char *scenario_names[] = {"mixed", "all-shared", "none-shared", "one-key", "empty"};
constexpr int kScenarios = 5;

// keys_for(scenario, rank, nranks), generated once: the references below look up every rank's
// keys for every position, which regenerated them in the inner loop (most of the test's time).
const std::vector<std::int64_t> &keys_of(int scenario, int rank) {
  static std::vector<std::vector<std::int64_t>> made;
  if (made.empty()) {
    for (int s = 0; s < kScenarios; ++s)
      for (int r = 0; r < nranks; ++r) made.push_back(keys_for(s, r, nranks));
  }
  return made[static_cast<std::size_t>(scenario) * nranks + rank];
}

// Values: a deterministic function of (rank, position, component).
template <typename T>
T value_for(int rank, std::size_t pos, int c, petacomm_xchg_op op) {
  const std::uint64_t h = hash((static_cast<std::uint64_t>(rank) << 32) ^ (pos * 8 + c));
  if constexpr (std::is_integral_v<T>) {
    if (op == PETACOMM_XCHG_PROD) return static_cast<T>(static_cast<std::int64_t>(h % 5) - 2);
    return static_cast<T>(static_cast<std::int64_t>(h % 2001) - 1000);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(0.75 + static_cast<double>(h % 1000) / 2000.0);
  } else {
    using R = typename T::value_type;
    return T(static_cast<R>(0.75 + static_cast<double>(h % 1000) / 2000.0),
             static_cast<R>(static_cast<double>((h >> 20) % 1000) / 4000.0));
  }
}

template <typename T>
T combine(T a, T b, petacomm_xchg_op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    if (op == PETACOMM_XCHG_SUM) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    if (op == PETACOMM_XCHG_PROD) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    if (op == PETACOMM_XCHG_SUM) return a + b;
    if (op == PETACOMM_XCHG_PROD) return a * b;
  }
  if constexpr (!std::is_class_v<T>) {
    if (op == PETACOMM_XCHG_MIN) return b < a ? b : a;
    if (op == PETACOMM_XCHG_MAX) return a < b ? b : a;
  }
  return a;
}

template <typename T>
T identity(petacomm_xchg_op op) {
  if (op == PETACOMM_XCHG_PROD) return T(1);
  if constexpr (!std::is_class_v<T>) {
    if (op == PETACOMM_XCHG_MIN)
      return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                         : std::numeric_limits<T>::max();
    if (op == PETACOMM_XCHG_MAX)
      return std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                         : std::numeric_limits<T>::lowest();
    if constexpr (std::is_floating_point_v<T>) return -T(0);
    return T(0);
  } else {
    using R = typename T::value_type;
    return T(-R(0), -R(0));
  }
}

// Reference: per key, identity (+) each holder's combined values in rank order.
template <typename T>
std::vector<T> reference(int scenario, int k, petacomm_xchg_op op) {
  const std::vector<std::int64_t> &mine = keys_of(scenario, me);
  std::vector<T> out(mine.size() * k);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    for (int c = 0; c < k; ++c) {
      T acc = identity<T>(op);
      for (int r = 0; r < nranks; ++r) {
        const std::vector<std::int64_t> &theirs = keys_of(scenario, r);
        bool found = false;
        T local{};
        for (std::size_t j = 0; j < theirs.size(); ++j) {
          if (theirs[j] != mine[i]) continue;
          const T v = value_for<T>(r, j, c, op);
          local = found ? combine(local, v, op) : v;
          found = true;
        }
        if (found) acc = combine(acc, local, op);
      }
      out[i * k + c] = acc;
    }
  }
  return out;
}

// The reference of (scenario, k, op), computed once per element type: every plan's result is
// checked against the same figures.
template <typename T>
const std::vector<T> &reference_of(int scenario, int k, petacomm_xchg_op op) {
  static std::map<std::tuple<int, int, int>, std::vector<T>> made;
  const auto [at, fresh] = made.try_emplace({scenario, k, static_cast<int>(op)});
  if (fresh) at->second = reference<T>(scenario, k, op);
  return at->second;
}

template <typename T>
bool close(T got, T want, double tol) {
  if constexpr (std::is_integral_v<T>) {
    return got == want;
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(static_cast<double>(got) - want) <= tol * std::fmax(1.0, std::fabs(want));
  } else {
    return std::abs(std::complex<double>(got) - std::complex<double>(want)) <=
           tol * std::fmax(1.0, std::abs(std::complex<double>(want)));
  }
}

template <typename T>
petacomm_xchg_dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return PETACOMM_XCHG_FLOAT32;
  if constexpr (std::is_same_v<T, double>) return PETACOMM_XCHG_FLOAT64;
  if constexpr (std::is_same_v<T, std::int32_t>) return PETACOMM_XCHG_INT32;
  if constexpr (std::is_same_v<T, std::int64_t>) return PETACOMM_XCHG_INT64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return PETACOMM_XCHG_COMPLEX64;
  return PETACOMM_XCHG_COMPLEX128;
}

template <typename T>
double tolerance() {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>) return 1e-5;
  return 1e-12;
}

// Runs every operator and k on one plan; keeps the deterministic results for comparison.
template <typename T>
void run_dtype(petacomm_xchg_plan plan, int scenario, const char *label, bool deterministic,
               int execution) {
  const std::vector<std::int64_t> keys = keys_for(scenario, me, nranks);
  const petacomm_xchg_op ops[] = {PETACOMM_XCHG_SUM, PETACOMM_XCHG_PROD, PETACOMM_XCHG_MIN,
                                  PETACOMM_XCHG_MAX};
  for (petacomm_xchg_op op : ops) {
    if (std::is_class_v<T> && (op == PETACOMM_XCHG_MIN || op == PETACOMM_XCHG_MAX)) continue;
    for (int k : {1, 3}) {
      std::vector<T> values(keys.size() * k);
      for (std::size_t i = 0; i < keys.size(); ++i)
        for (int c = 0; c < k; ++c) values[i * k + c] = value_for<T>(me, i, c, op);
      const std::vector<T> &want = reference_of<T>(scenario, k, op);
      petacomm_status rc;
      if ((execution + k) % 2 == 0) {
        rc = petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(),
                                   static_cast<std::int64_t>(keys.size()), k, dtype_of<T>(), op);
      } else {
        rc = petacomm_xchg_execute_begin(plan, MPI_COMM_WORLD, values.data(),
                                         static_cast<std::int64_t>(keys.size()), k, dtype_of<T>(),
                                         op, nullptr);
        if (rc == PETACOMM_SUCCESS) rc = petacomm_xchg_execute_end(plan);
      }
      CHECK(rc == PETACOMM_SUCCESS, "%s: execute failed: %s", label, petacomm_last_error());
      int bad = -1;
      for (std::size_t i = 0; i < values.size() && bad < 0; ++i) {
        const bool ok = deterministic ? std::memcmp(&values[i], &want[i], sizeof(T)) == 0
                                      : close(values[i], want[i], tolerance<T>());
        if (!ok) bad = static_cast<int>(i);
      }
      CHECK(bad < 0, "%s scenario %s dtype %d op %d k %d: position %d (key %lld) wrong", label,
            scenario_names[scenario], static_cast<int>(dtype_of<T>()), static_cast<int>(op), k, bad,
            bad < 0 ? 0LL : static_cast<long long>(keys[bad / k]));
    }
  }
}

// A non-commutative associative user operator: composition of affine maps x -> a x + b
// (mod 2^32), the 2x2 matrix [[a, b], [0, 1]] packed in one int64 as a << 32 | b; identity
// x -> x. inout (+) in = "inout, then in". Any change of order (ranks, or positions within a
// rank) changes the result, which the reference below composes in the documented order.
std::uint64_t compose(std::uint64_t f, std::uint64_t g) {
  const std::uint32_t fa = static_cast<std::uint32_t>(f >> 32), fb = static_cast<std::uint32_t>(f);
  const std::uint32_t ga = static_cast<std::uint32_t>(g >> 32), gb = static_cast<std::uint32_t>(g);
  const std::uint32_t a = ga * fa, b = ga * fb + gb;  // g(f(x)) = ga (fa x + fb) + gb
  return static_cast<std::uint64_t>(a) << 32 | b;
}

void affine_then(void *inout, const void *in, std::int64_t count, void *) {
  auto *a = static_cast<std::uint64_t *>(inout);
  const auto *b = static_cast<const std::uint64_t *>(in);
  for (std::int64_t i = 0; i < count; ++i) a[i] = compose(a[i], b[i]);
}

std::uint64_t affine_value(int rank, std::size_t pos) {
  const std::uint64_t h = hash((static_cast<std::uint64_t>(rank) << 40) ^ (pos * 2654435761ULL));
  return h | std::uint64_t{1} << 32;  // a odd: an invertible map
}

void run_user(petacomm_xchg_plan plan, int scenario, const char *label) {
  const std::vector<std::int64_t> keys = keys_for(scenario, me, nranks);
  const std::uint64_t identity = std::uint64_t{1} << 32;  // a = 1, b = 0
  petacomm_xchg_user_op user{affine_then, &identity, nullptr};
  std::vector<std::uint64_t> values(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) values[i] = affine_value(me, i);
  petacomm_status rc = petacomm_xchg_execute_user(plan, MPI_COMM_WORLD, values.data(),
                                                  static_cast<std::int64_t>(keys.size()), 1,
                                                  PETACOMM_XCHG_INT64, &user);
  CHECK(rc == PETACOMM_SUCCESS, "%s: user op failed: %s", label, petacomm_last_error());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::uint64_t want = identity;  // holders in rank order, each one's positions in order
    for (int r = 0; r < nranks; ++r) {
      const std::vector<std::int64_t> &theirs = keys_of(scenario, r);
      for (std::size_t j = 0; j < theirs.size(); ++j)
        if (theirs[j] == keys[i]) want = compose(want, affine_value(r, j));
    }
    CHECK(values[i] == want, "%s scenario %s user op: position %zu got %llx want %llx", label,
          scenario_names[scenario], i, static_cast<unsigned long long>(values[i]),
          static_cast<unsigned long long>(want));
  }
}

void run_plan(int scenario, const char *strategy, const char *transport, bool deterministic,
              int hub_threshold, int execution, int send_window = 0) {
  const std::vector<std::int64_t> keys = keys_for(scenario, me, nranks);
  petacomm_xchg_options opts;
  petacomm_xchg_options_default(&opts);
  opts.strategy = strategy;
  opts.transport = transport;
  opts.deterministic = deterministic;
  opts.chunk_keys = 16;  // several chunks, a short last one
  opts.allgather_keys = 7;
  opts.hub_threshold = hub_threshold;
  opts.send_window = send_window;
  petacomm_xchg_plan plan = nullptr;
  char label[160];
  std::snprintf(label, sizeof label, "%s/%s/det=%d/hub=%d/window=%d", strategy, transport,
                deterministic, hub_threshold, send_window);
  petacomm_status rc = petacomm_xchg_plan_create(
      MPI_COMM_WORLD, keys.data(), static_cast<std::int64_t>(keys.size()), &opts, &plan);
  CHECK(rc == PETACOMM_SUCCESS, "%s: create failed: %s", label, petacomm_last_error());
  if (rc != PETACOMM_SUCCESS) return;
  run_dtype<float>(plan, scenario, label, deterministic, execution);
  run_dtype<double>(plan, scenario, label, deterministic, execution);
  run_dtype<std::int32_t>(plan, scenario, label, deterministic, execution);
  run_dtype<std::int64_t>(plan, scenario, label, deterministic, execution);
  run_dtype<std::complex<float>>(plan, scenario, label, deterministic, execution);
  run_dtype<std::complex<double>>(plan, scenario, label, deterministic, execution);
  run_user(plan, scenario, label);
  CHECK(petacomm_xchg_plan_free(&plan) == PETACOMM_SUCCESS && plan == nullptr, "%s: free", label);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  // Every registered strategy and auto; transports for those that read the option.
  std::vector<petacomm_strategy_info> registered;
  int count = 0;
  CHECK(petacomm_xchg_strategy_count(&count) == PETACOMM_SUCCESS && count > 0, "strategy_count");
  for (int i = 0; i < count; ++i) {
    petacomm_strategy_info info{};
    CHECK(petacomm_xchg_strategy_info(i, &info) == PETACOMM_SUCCESS, "strategy_info %d", i);
    registered.push_back(info);
  }
  std::vector<const char *> strategies;
  for (const petacomm_strategy_info &s : registered) strategies.push_back(s.name);
  strategies.push_back("auto");
  int execution = 0;
  if (argc == 5 && std::strcmp(argv[1], "--strategy") == 0 &&
      std::strcmp(argv[3], "--node-sizes") == 0) {
    const char *only = argv[2];
    bool known = false;
    for (const char *s : strategies) known = known || std::strcmp(s, only) == 0;
    CHECK(known, "--strategy %s: not registered", only);
    std::string sizes = argv[4];
    for (std::size_t at = 0; known && at < sizes.size();) {
      std::size_t comma = sizes.find(',', at);
      if (comma == std::string::npos) comma = sizes.size();
      const std::string size = sizes.substr(at, comma - at);
      setenv("PETACOMM_NODE_SIZE", size.c_str(), 1);
      for (int scenario = 0; scenario < kScenarios; ++scenario)
        for (int det : {0, 1}) run_plan(scenario, only, "p2p", det, 0, execution++);
      for (const char *t : {"neighbor", "alltoallv"}) run_plan(0, only, t, 0, 0, execution++);
      at = comma + 1;
    }
    int all = 0, total = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
      std::printf(
          "test_xchg_matrix: %s on %d ranks (%d checks, %d failures; strategy %s at "
          "virtual node sizes %s)\n",
          all ? "FAILED" : "passed", nranks, total, all, only, sizes.c_str());
    MPI_Finalize();
    return all ? 1 : 0;
  }
  for (int scenario = 0; scenario < kScenarios; ++scenario)
    for (const char *s : strategies)
      for (int det : {0, 1}) run_plan(scenario, s, "p2p", det, 0, execution++);
  // Transports (for the strategies that read that option) and explicit hub thresholds on
  // the mixed key set.
  for (const char *t : {"neighbor", "alltoallv"})
    for (const petacomm_strategy_info &s : registered)
      if (std::strstr(s.options, "transport") != nullptr) run_plan(0, s.name, t, 1, 0, execution++);
  for (int threshold : {1, 2, 3}) run_plan(0, "hub-split", "p2p", 1, threshold, execution++);
  // Sends throttled to 1 or 2 in flight (binding from 3 ranks on), auto's discovery too.
  for (int window : {1, 2})
    for (const petacomm_strategy_info &s : registered)
      if (std::strstr(s.options, "send_window") != nullptr)
        for (int scenario : {0, 1}) run_plan(scenario, s.name, "p2p", 0, 0, execution++, window);
  run_plan(1, "auto", "p2p", 1, 0, execution++, 1);
  run_plan(1, "auto", "p2p", 0, 0, execution++);
  std::string names;
  for (const char *s : strategies) names += std::string(names.empty() ? "" : ",") + s;

  int all = 0, total = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&checks, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("test_xchg_matrix: %s on %d ranks (%d checks, %d failures; strategies %s)\n",
                all ? "FAILED" : "passed", nranks, total, all, names.c_str());
  MPI_Finalize();
  return all ? 1 : 0;
}
