// Every strategy x dtype x howmany x in/out-of-place x direction on uneven shapes (some
// ranks holding no rows), with and without a mask, and the pencil swaps on every process
// grid of the rank count. Expected values come from the global indices (a transpose only
// moves data, so they are compared exactly); the layouts' offsets are recomputed here from
// the documented block rule.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "petacomm/transpose.h"

namespace {

int failures = 0, rank = 0, size = 1;
long executions = 0;

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      if (failures++ < 20) {                                                \
        std::fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
        std::fprintf(stderr, __VA_ARGS__);                                  \
        std::fprintf(stderr, "\n");                                         \
      }                                                                     \
    }                                                                       \
  } while (0)

std::int64_t count(std::int64_t n, int p, int r) { return n / p + (r < n % p ? 1 : 0); }
std::int64_t offset(std::int64_t n, int p, int r) {
  return r * (n / p) + std::min<std::int64_t>(r, n % p);
}

struct Type {
  petacomm_transpose_dtype dtype;
  int scalars;  // per value (2 for complex)
  bool single;  // float rather than double scalars
};
const Type kTypes[] = {{PETACOMM_TRANSPOSE_FLOAT32, 1, true},
                       {PETACOMM_TRANSPOSE_FLOAT64, 1, false},
                       {PETACOMM_TRANSPOSE_COMPLEX64, 2, true},
                       {PETACOMM_TRANSPOSE_COMPLEX128, 2, false}};

// Scalar s of global element (a, b, c) (c = 0 for 2-D): exact in float32.
double value(std::int64_t a, std::int64_t b, std::int64_t c, int s) {
  return static_cast<double>((a * 131 + b * 7 + c * 17 + s * 3) % 2039 + 1);
}

// Elements of `scalars_per_elem` scalars stored as float or double.
struct Array {
  const Type &t;
  int per_elem;
  std::vector<char> bytes;
  Array(const Type &type, std::int64_t howmany, std::int64_t elements)
      : t(type),
        per_elem(type.scalars * static_cast<int>(howmany)),
        bytes(static_cast<std::size_t>(elements * per_elem) * (type.single ? 4 : 8)) {}
  void set(std::int64_t e, int s, double v) {
    if (t.single) {
      reinterpret_cast<float *>(bytes.data())[e * per_elem + s] = static_cast<float>(v);
    } else {
      reinterpret_cast<double *>(bytes.data())[e * per_elem + s] = v;
    }
  }
  double get(std::int64_t e, int s) const {
    return t.single ? reinterpret_cast<const float *>(bytes.data())[e * per_elem + s]
                    : reinterpret_cast<const double *>(bytes.data())[e * per_elem + s];
  }
};

std::vector<std::string> strategy_names() {
  int n = 0;
  petacomm_transpose_strategy_count(&n);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    petacomm_strategy_info info;
    petacomm_transpose_strategy_info(i, &info);
    names.push_back(info.name);
  }
  return names;
}

// PETACOMM_TEST_TRACE=1 names each case before running it (finding a hang).
void trace(const std::string &label) {
  static const bool on = std::getenv("PETACOMM_TEST_TRACE") != nullptr;
  if (on) std::fprintf(stderr, "rank %d: %s\n", rank, label.c_str());
}

bool power_of_two(int p) { return (p & (p - 1)) == 0; }

// Checks `a` (elements rows x cols, row r global g0 + r) against value(g, j) for the
// forward output (transposed = true: value(j, g)) with columns outside the mask zero.
void expect_slab(const Array &a, std::int64_t rows, std::int64_t row0, std::int64_t cols,
                 bool transposed, const std::vector<unsigned char> &mask, const char *what,
                 const std::string &label) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      for (int s = 0; s < a.per_elem; ++s) {
        const std::int64_t i = transposed ? c : row0 + r, j = transposed ? row0 + r : c;
        const bool kept = mask.empty() || mask[j];
        const double want = kept ? value(i, j, 0, s) : 0.0, got = a.get(r * cols + c, s);
        if (got != want) {
          CHECK(false, "%s %s: element (%lld, %lld) scalar %d: got %g want %g", label.c_str(), what,
                static_cast<long long>(r), static_cast<long long>(c), s, got, want);
          return;
        }
      }
}

void slab_case(std::int64_t n0, std::int64_t n1, const Type &t, std::int64_t howmany,
               const std::string &strategy, const char *planner,
               const std::vector<unsigned char> &mask, int node_size) {
  const std::string label = "slab " + std::to_string(n0) + "x" + std::to_string(n1) + " dtype " +
                            std::to_string(t.dtype) + " howmany " + std::to_string(howmany) + " " +
                            strategy + "/" + planner + (mask.empty() ? "" : " masked") +
                            " node_size " + std::to_string(node_size);
  trace(label);
  petacomm_transpose_options o;
  petacomm_transpose_options_default(&o);
  o.strategy = strategy.c_str();
  o.planner = planner;
  o.node_size = node_size;
  o.window = 2;
  o.measure_reps = 1;
  if (!mask.empty()) {
    o.mask = mask.data();
    o.mask_length = static_cast<std::int64_t>(mask.size());
  }
  petacomm_transpose_plan plan = nullptr;
  const petacomm_status st =
      petacomm_transpose_plan_create(MPI_COMM_WORLD, n0, n1, howmany, t.dtype, &o, &plan);
  const bool xor_bad = strategy == "xor" && !power_of_two(size);
  const bool partial_bad = strategy == "partial" && mask.empty();
  if (xor_bad || partial_bad) {
    CHECK(st == PETACOMM_ERR_ARG &&
              std::strstr(petacomm_last_error(), xor_bad ? "power-of-two" : "needs a mask"),
          "%s: expected a clear error, got %d '%s'", label.c_str(), st, petacomm_last_error());
    return;
  }
  CHECK(st == PETACOMM_SUCCESS, "%s: create failed: %s", label.c_str(), petacomm_last_error());
  if (st != PETACOMM_SUCCESS) return;
  petacomm_transpose_local l;
  petacomm_transpose_plan_local(plan, &l);
  CHECK(l.rows_in == count(n0, size, rank) && l.row0_in == offset(n0, size, rank) &&
            l.rows_out == count(n1, size, rank) && l.row0_out == offset(n1, size, rank),
        "%s: local layout", label.c_str());
  Array in(t, howmany, l.alloc_elements), out(t, howmany, l.alloc_elements),
      back(t, howmany, l.alloc_elements);
  const std::vector<unsigned char> none;
  for (std::int64_t r = 0; r < l.rows_in; ++r)
    for (std::int64_t j = 0; j < n1; ++j)
      for (int s = 0; s < in.per_elem; ++s) in.set(r * n1 + j, s, value(l.row0_in + r, j, 0, s));
  for (int place = 0; place < 2; ++place) {
    // Forward, then backward: the inverse gives the input back (excluded columns zero).
    if (place == 0) {
      CHECK(petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, in.bytes.data(),
                                       out.bytes.data()) == PETACOMM_SUCCESS,
            "%s: %s", label.c_str(), petacomm_last_error());
      expect_slab(out, l.rows_out, l.row0_out, n0, true, mask, "forward", label);
      CHECK(petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_BACKWARD, out.bytes.data(),
                                       back.bytes.data()) == PETACOMM_SUCCESS,
            "%s: %s", label.c_str(), petacomm_last_error());
      expect_slab(back, l.rows_in, l.row0_in, n1, false, mask, "backward", label);
    } else {
      Array buf = in;
      CHECK(petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, buf.bytes.data(),
                                       buf.bytes.data()) == PETACOMM_SUCCESS,
            "%s: %s", label.c_str(), petacomm_last_error());
      expect_slab(buf, l.rows_out, l.row0_out, n0, true, mask, "forward in place", label);
      CHECK(petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_BACKWARD, buf.bytes.data(),
                                       buf.bytes.data()) == PETACOMM_SUCCESS,
            "%s: %s", label.c_str(), petacomm_last_error());
      expect_slab(buf, l.rows_in, l.row0_in, n1, false, mask, "backward in place", label);
    }
    executions += 2;
  }
  const char *name = nullptr;
  petacomm_transpose_plan_strategy(plan, &name);
  if (strategy != "auto")
    CHECK(name != nullptr && strategy == name, "%s: plan says strategy %s", label.c_str(), name);
  petacomm_transpose_stats stats;
  CHECK(petacomm_transpose_plan_stats(plan, &stats) == PETACOMM_SUCCESS, "%s: stats",
        label.c_str());
  CHECK(petacomm_transpose_plan_free(&plan) == PETACOMM_SUCCESS && plan == nullptr, "%s: free",
        label.c_str());
}

// Global index of storage position (x, y, z) of a pencil layout.
void pencil_index(int layout, std::int64_t x, std::int64_t y, std::int64_t z, std::int64_t g[3]) {
  if (layout == PETACOMM_PENCIL_Z) g[0] = x, g[1] = y, g[2] = z;
  if (layout == PETACOMM_PENCIL_Y) g[0] = x, g[2] = y, g[1] = z;
  if (layout == PETACOMM_PENCIL_X) g[2] = x, g[1] = y, g[0] = z;
}

void pencil_case(MPI_Comm comm, const std::int64_t n[3], int p0, int p1, const Type &t,
                 const std::string &strategy) {
  const std::string label = "pencil " + std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" +
                            std::to_string(n[2]) + " grid " + std::to_string(p0) + "x" +
                            std::to_string(p1) + " dtype " + std::to_string(t.dtype) + " " +
                            strategy;
  trace(label);
  petacomm_transpose_options o;
  petacomm_transpose_options_default(&o);
  o.strategy = strategy.c_str();
  const int grid[2] = {p0, p1};
  petacomm_transpose_pencil pencil = nullptr;
  const petacomm_status st =
      petacomm_transpose_pencil_create(comm, n, grid, 1, t.dtype, &o, &pencil);
  if (strategy == "xor" && !(power_of_two(p0) && power_of_two(p1))) {
    CHECK(st == PETACOMM_ERR_ARG && std::strstr(petacomm_last_error(), "power-of-two"),
          "%s: expected the power-of-two error, got '%s'", label.c_str(), petacomm_last_error());
    return;
  }
  CHECK(st == PETACOMM_SUCCESS, "%s: create failed: %s", label.c_str(), petacomm_last_error());
  if (st != PETACOMM_SUCCESS) return;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  const int i0 = me / p1, i1 = me % p1;
  // Independent expectation of each layout's shape and offsets.
  const std::int64_t want_shape[3][3] = {{count(n[0], p0, i0), count(n[1], p1, i1), n[2]},
                                         {count(n[0], p0, i0), count(n[2], p1, i1), n[1]},
                                         {count(n[2], p1, i1), count(n[1], p0, i0), n[0]}};
  const std::int64_t want_offset[3][3] = {{offset(n[0], p0, i0), offset(n[1], p1, i1), 0},
                                          {offset(n[0], p0, i0), offset(n[2], p1, i1), 0},
                                          {offset(n[2], p1, i1), offset(n[1], p0, i0), 0}};
  std::int64_t most = 0;
  for (int layout = 0; layout < 3; ++layout) {
    std::int64_t shape[3], off[3];
    petacomm_transpose_pencil_local(pencil, static_cast<petacomm_pencil_layout>(layout), shape,
                                    off);
    for (int k = 0; k < 3; ++k)
      CHECK(shape[k] == want_shape[layout][k] && off[k] == want_offset[layout][k],
            "%s: layout %d axis %d: shape %lld offset %lld", label.c_str(), layout, k,
            static_cast<long long>(shape[k]), static_cast<long long>(off[k]));
    most = std::max(most, shape[0] * shape[1] * shape[2]);
  }
  auto fill_or_check = [&](Array &a, int layout, bool fill, const char *what) {
    const std::int64_t *s = want_shape[layout], *o3 = want_offset[layout];
    for (std::int64_t x = 0; x < s[0]; ++x)
      for (std::int64_t y = 0; y < s[1]; ++y)
        for (std::int64_t z = 0; z < s[2]; ++z) {
          std::int64_t g[3];
          pencil_index(layout, o3[0] + x, o3[1] + y, z, g);
          for (int c = 0; c < a.per_elem; ++c) {
            const double want = value(g[0], g[1], g[2], c);
            const std::int64_t e = (x * s[1] + y) * s[2] + z;
            if (fill) {
              a.set(e, c, want);
            } else if (a.get(e, c) != want) {
              CHECK(false, "%s %s: got %g want %g", label.c_str(), what, a.get(e, c), want);
              return;
            }
          }
        }
  };
  Array a(t, 1, most), b(t, 1, most);
  fill_or_check(a, PETACOMM_PENCIL_Z, true, "");
  const int path[][2] = {{0, 1}, {1, 2}, {2, 1}, {1, 0}};
  for (int place = 0; place < 2; ++place)
    for (const auto &step : path) {
      const void *src = place ? a.bytes.data() : a.bytes.data();
      void *dst = place ? a.bytes.data() : b.bytes.data();
      const petacomm_status s =
          petacomm_transpose_pencil_execute(pencil, static_cast<petacomm_pencil_layout>(step[0]),
                                            static_cast<petacomm_pencil_layout>(step[1]), src, dst);
      CHECK(s == PETACOMM_SUCCESS, "%s: %s", label.c_str(), petacomm_last_error());
      if (!place) std::swap(a.bytes, b.bytes);
      fill_or_check(a, step[1], false, place ? "in place" : "out of place");
      ++executions;
    }
  CHECK(petacomm_transpose_pencil_free(&pencil) == PETACOMM_SUCCESS, "%s: free", label.c_str());
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::string> strategies = strategy_names();
  strategies.push_back("auto");
  const std::vector<unsigned char> none;
  // Every strategy x dtype x howmany on two uneven shapes (at 8 ranks, 5 x 3 leaves ranks
  // without rows or columns).
  for (const auto &shape : {std::pair<std::int64_t, std::int64_t>{7, 5}, {5, 3}})
    for (const Type &t : kTypes)
      for (std::int64_t howmany : {1, 3})
        for (const std::string &s : strategies)
          slab_case(shape.first, shape.second, t, howmany, s, "estimate", none, 0);
  // Masks (columns j % 3 == 1 excluded) through every strategy; larger shapes; measure.
  // 3 x 7 leaves blocks of a single element (one row, one kept column).
  for (const auto &shape : {std::pair<std::int64_t, std::int64_t>{16, 12}, {9, 20}, {3, 7}}) {
    std::vector<unsigned char> mask(shape.second);
    for (std::size_t j = 0; j < mask.size(); ++j) mask[j] = j % 3 != 1;
    for (const std::string &s : strategies) {
      slab_case(shape.first, shape.second, kTypes[3], 1, s, "estimate", mask, 0);
      slab_case(shape.first, shape.second, kTypes[0], 2, s, "estimate", none, 0);
    }
    slab_case(shape.first, shape.second, kTypes[3], 1, "auto", "measure", none, 0);
    slab_case(shape.first, shape.second, kTypes[1], 1, "auto", "measure", mask, 0);
  }
  // two-level on virtual nodes of 2 and 3 ranks.
  for (int node_size : {1, 2, 3})
    slab_case(11, 13, kTypes[3], 1, "two-level", "estimate", none, node_size);
  // Pencils on every grid of this rank count.
  const std::int64_t n[3] = {5, 6, 7};
  for (int p0 = 1; p0 <= size; ++p0) {
    if (size % p0) continue;
    for (const std::string &s : {std::string("auto"), std::string("alltoallw"),
                                 std::string("pairwise"), std::string("xor")})
      pencil_case(MPI_COMM_WORLD, n, p0, size / p0, kTypes[3], s);
    pencil_case(MPI_COMM_WORLD, n, p0, size / p0, kTypes[0], "alltoall");
  }
  // 2 x 3 and 3 x 2 grids on the first 6 ranks when there are at least 6 (the rank counts
  // of the suite have no 6).
  if (size >= 6) {
    MPI_Comm six;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 6 ? 0 : MPI_UNDEFINED, rank, &six);
    if (six != MPI_COMM_NULL) {
      for (const auto &grid : {std::pair<int, int>{2, 3}, {3, 2}})
        for (const std::string &s : {std::string("auto"), std::string("pairwise")})
          pencil_case(six, n, grid.first, grid.second, kTypes[3], s);
      MPI_Comm_free(&six);
    }
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("transpose matrix: %ld executions per rank, %d failures\n", executions, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
