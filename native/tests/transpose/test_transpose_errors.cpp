// Bad arguments on one rank fail the collective call on every rank together, before
// anything is sent (outputs untouched), with a message naming the argument; the plan stays
// usable afterwards.
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "petacomm/transpose.h"

namespace {

int failures = 0, rank = 0, size = 1;

void expect_error(petacomm_status st, const char *fragment, const char *what) {
  const std::string message = petacomm_last_error();
  if (st != PETACOMM_ERR_ARG || message.find(fragment) == std::string::npos) {
    ++failures;
    std::fprintf(stderr, "rank %d: %s: status %d, message '%s' lacks '%s'\n", rank, what, st,
                 message.c_str(), fragment);
  }
}

void expect_ok(petacomm_status st, const char *what) {
  if (st != PETACOMM_SUCCESS) {
    ++failures;
    std::fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, petacomm_last_error());
  }
}

petacomm_transpose_array array(void *data, std::int64_t rows, std::int64_t cols,
                               petacomm_transpose_dtype dtype = PETACOMM_TRANSPOSE_FLOAT64) {
  petacomm_transpose_array a{};
  a.data = data;
  a.ndim = 2;
  a.shape[0] = rows;
  a.shape[1] = cols;
  a.strides[1] = 8;
  a.strides[0] = 8 * cols;
  a.dtype = dtype;
  a.writeable = 1;
  return a;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int last = size - 1;
  const bool faulty = rank == last;
  petacomm_transpose_options o;
  petacomm_transpose_options_default(&o);
  petacomm_transpose_plan plan = nullptr;

  // Creation: one rank's bad argument fails every rank; the faulty rank names it, the
  // others name the faulty rank and repeat its message.
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, faulty ? 0 : 6, 1,
                                              PETACOMM_TRANSPOSE_FLOAT64, &o, &plan),
               "n1: must be >= 1, got 0", "n1 on one rank");
  if (!faulty &&
      std::strstr(petacomm_last_error(), ("rank " + std::to_string(last)).c_str()) == nullptr) {
    ++failures;
    std::fprintf(stderr, "rank %d: message does not name the faulty rank: %s\n", rank,
                 petacomm_last_error());
  }
  petacomm_transpose_options bad = o;
  bad.strategy = faulty ? "fastest" : "auto";
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                              &bad, &plan),
               "strategy: unknown strategy 'fastest'", "strategy on one rank");
  bad = o;
  bad.strategy = rank % 2 ? "pairwise" : "alltoall";
  if (size > 1)
    expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                                &bad, &plan),
                 "arguments differ between ranks", "options differing between ranks");
  bad = o;
  bad.strategy = "xor";
  if ((size & (size - 1)) != 0)
    expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                                &bad, &plan),
                 "xor needs a power-of-two number of ranks", "xor on a non-power-of-two");
  std::vector<unsigned char> mask(5, 1);
  bad = o;
  bad.mask = mask.data();
  bad.mask_length = 5;
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                              &bad, &plan),
               "mask: length 5 does not match the plan's n1 = 6", "mask length");
  // measure_reps is bounded by PETACOMM_MAX_REPS timed executions per candidate (INT_MAX was
  // taken, then the first execution ran for ever), on every rank together: the faulty rank
  // names it, the others name the faulty rank (they said only that the arguments differ).
  bad = o;
  bad.planner = "measure";
  bad.measure_reps = faulty ? INT_MAX : 3;
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                              &bad, &plan),
               faulty ? "measure_reps: must be in [1, 1000000], got 2147483647"
                      : (": measure_reps: must be in [1, 1000000], got 2147483647"),
               "measure_reps INT_MAX on one rank");
  if (!faulty &&
      std::strstr(petacomm_last_error(), ("rank " + std::to_string(last)).c_str()) == nullptr) {
    ++failures;
    std::fprintf(stderr, "rank %d: measure_reps: message does not name the faulty rank: %s\n", rank,
                 petacomm_last_error());
  }
  bad.measure_reps = faulty ? PETACOMM_MAX_REPS + 1 : PETACOMM_MAX_REPS;
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                              &bad, &plan),
               "measure_reps: must be in [1, 1000000], got 1000001",
               "measure_reps above the bound");
  {  // pencils and filters take the same options
    const std::int64_t n3[3] = {4, 6, 8};
    const int grid1[2] = {1, size};
    const std::int64_t modes1[2] = {1, 1};
    petacomm_transpose_pencil p = nullptr;
    petacomm_fftfilter f = nullptr;
    expect_error(petacomm_transpose_pencil_create(MPI_COMM_WORLD, n3, grid1, 1,
                                                  PETACOMM_TRANSPOSE_FLOAT64, &bad, &p),
                 "measure_reps: must be in [1, 1000000], got 1000001", "pencil measure_reps");
    expect_error(petacomm_fftfilter_create(MPI_COMM_WORLD, n3, grid1, modes1,
                                           PETACOMM_FFTFILTER_PACKED, &bad, &f),
                 "measure_reps: must be in [1, 1000000], got 1000001", "filter measure_reps");
  }
  bad = o;
  bad.planner = "guess";
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                              &bad, &plan),
               "planner: unknown planner 'guess'", "planner");
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1,
                                              static_cast<petacomm_transpose_dtype>(9), &o, &plan),
               "dtype: unknown dtype 9", "dtype");
  if (plan != nullptr) {
    ++failures;
    std::fprintf(stderr, "rank %d: a failed creation returned a plan\n", rank);
  }

  // Execution: bad buffers on one rank (rank 0, which always holds data) fail everywhere,
  // outputs untouched; then the plan still works.
  const bool culprit = rank == 0;
  expect_ok(petacomm_transpose_plan_create(MPI_COMM_WORLD, 16, 12, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                           &o, &plan),
            "create");
  petacomm_transpose_local l;
  petacomm_transpose_plan_local(plan, &l);
  std::vector<double> in(l.alloc_elements + 1, 1.0), out(l.alloc_elements + 1, -7.0);
  expect_error(petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, in.data(),
                                          culprit ? nullptr : out.data()),
               "out: NULL", "NULL out on one rank");
  expect_error(petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, in.data(),
                                          culprit ? in.data() + 1 : out.data()),
               "out: overlaps in", "overlapping buffers on one rank");
  if (size > 1)
    expect_error(petacomm_transpose_execute(
                     plan, rank == 0 ? PETACOMM_TRANSPOSE_FORWARD : PETACOMM_TRANSPOSE_BACKWARD,
                     in.data(), out.data()),
                 "direction: must be the same on every rank", "direction differing between ranks");
  // An unknown direction on one rank (the others waited in the transpose for ever).
  expect_error(
      petacomm_transpose_execute(
          plan, faulty ? static_cast<petacomm_transpose_direction>(7) : PETACOMM_TRANSPOSE_FORWARD,
          in.data(), out.data()),
      "direction: unknown direction 7", "unknown direction on one rank");
  petacomm_transpose_array a_in = array(in.data(), l.rows_in, 12),
                           a_out = array(out.data(), l.rows_out, 16);
  expect_error(
      petacomm_transpose_execute_array(
          plan, faulty ? static_cast<petacomm_transpose_direction>(-1) : PETACOMM_TRANSPOSE_FORWARD,
          &a_in, &a_out),
      "direction: unknown direction -1", "unknown direction on one rank (arrays)");
  petacomm_transpose_array wrong = a_out;
  if (culprit) wrong.shape[1] = 17;
  expect_error(petacomm_transpose_execute_array(plan, PETACOMM_TRANSPOSE_FORWARD, &a_in, &wrong),
               culprit ? "out: shape" : "does not match this rank's local shape",
               "wrong local shape on one rank");
  wrong = a_in;
  if (culprit) wrong.strides[0] = 16 * 12;  // every other row: not contiguous
  if (culprit) wrong.strides[1] = 16;
  expect_error(petacomm_transpose_execute_array(plan, PETACOMM_TRANSPOSE_FORWARD, &wrong, &a_out),
               "not C-contiguous", "non-contiguous input on one rank");
  wrong = a_out;
  if (culprit) wrong.dtype = PETACOMM_TRANSPOSE_COMPLEX64;
  expect_error(petacomm_transpose_execute_array(plan, PETACOMM_TRANSPOSE_FORWARD, &a_in, &wrong),
               "dtype complex64 does not match the plan's float64", "dtype on one rank");
  wrong = a_out;
  if (culprit) wrong.writeable = 0;
  expect_error(petacomm_transpose_execute_array(plan, PETACOMM_TRANSPOSE_FORWARD, &a_in, &wrong),
               "out: read-only", "read-only output on one rank");
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k] != -7.0) {
      ++failures;
      std::fprintf(stderr, "rank %d: a failed execution wrote out[%zu]\n", rank, k);
      break;
    }
  expect_ok(petacomm_transpose_execute_array(plan, PETACOMM_TRANSPOSE_FORWARD, &a_in, &a_out),
            "execute after errors");
  // stats is collective: a NULL output on one rank fails every rank (the others waited).
  petacomm_transpose_stats stats;
  expect_error(petacomm_transpose_plan_stats(plan, faulty ? nullptr : &stats),
               "stats: NULL output pointer", "NULL stats on one rank");
  expect_ok(petacomm_transpose_plan_stats(plan, &stats), "stats after errors");
  expect_ok(petacomm_transpose_plan_free(&plan), "free");
  expect_error(petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, in.data(), out.data()),
               "plan: NULL", "freed plan");

  // Pencils and filters.
  const std::int64_t n[3] = {4, 6, 8};
  int grid[2] = {1, size + (faulty ? 1 : 0)};
  petacomm_transpose_pencil pencil = nullptr;
  expect_error(petacomm_transpose_pencil_create(MPI_COMM_WORLD, n, grid, 1,
                                                PETACOMM_TRANSPOSE_FLOAT64, &o, &pencil),
               "grid:", "pencil grid on one rank");
  grid[1] = size;
  // Sizes beyond what can be addressed or sent: refused naming the argument (pencils and
  // filters took n = 2^22 x 2^22 x 2^22 whose bytes wrap around 2^64; an element of more
  // than 2^31 - 1 bytes aborted the job in MPI_Type_contiguous).
  const std::int64_t huge[3] = {std::int64_t{1} << 22, std::int64_t{1} << 22,
                                std::int64_t{1} << 22};
  expect_error(petacomm_transpose_pencil_create(MPI_COMM_WORLD, huge, grid, 1,
                                                PETACOMM_TRANSPOSE_FLOAT64, &o, &pencil),
               "n: 4194304 x 4194304 x 4194304 elements of 8 bytes is too large", "pencil n");
  expect_error(petacomm_transpose_pencil_create(MPI_COMM_WORLD, n, grid, std::int64_t{1} << 40,
                                                PETACOMM_TRANSPOSE_FLOAT64, &o, &pencil),
               "howmany: 1099511627776 values of float64 per element exceed", "pencil howmany");
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 1, 1, std::int64_t{1} << 30,
                                              PETACOMM_TRANSPOSE_COMPLEX128, &o, &plan),
               "howmany: 1073741824 values of complex128 per element exceed", "slab howmany");
  {
    const std::int64_t big[3] = {2, std::int64_t{1} << 40, std::int64_t{1} << 40};
    const std::int64_t m[2] = {1, 1};
    petacomm_fftfilter f = nullptr;
    expect_error(
        petacomm_fftfilter_create(MPI_COMM_WORLD, big, grid, m, PETACOMM_FFTFILTER_PACKED, &o, &f),
        "n: 2 x 1099511627776 x 1099511627776 elements of 16 bytes is too large", "filter n");
  }
  expect_ok(petacomm_transpose_pencil_create(MPI_COMM_WORLD, n, grid, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                             &o, &pencil),
            "pencil create");
  expect_error(petacomm_transpose_pencil_execute(pencil, PETACOMM_PENCIL_Z, PETACOMM_PENCIL_X,
                                                 in.data(), out.data()),
               "Z -> X is not a swap of adjacent layouts", "non-adjacent swap");
  petacomm_transpose_pencil_free(&pencil);
  const std::int64_t modes[2] = {2, 2};
  std::int64_t odd[3] = {4, 6, faulty ? 7 : 8};
  petacomm_fftfilter filter = nullptr;
  expect_error(petacomm_fftfilter_create(MPI_COMM_WORLD, odd, grid, modes,
                                         PETACOMM_FFTFILTER_PACKED, &o, &filter),
               "n:", "odd n_phi on one rank");
  bad = o;
  bad.strategy = "partial";
  expect_error(petacomm_fftfilter_create(MPI_COMM_WORLD, n, grid, modes, PETACOMM_FFTFILTER_PLAIN,
                                         &bad, &filter),
               "strategy: 'partial' is the packed-partial variant's", "partial with plain");
  expect_error(petacomm_rfft_packed(7, 1, in.data(), out.data()),
               "n: the packed format needs an even length", "odd rfft length");
  // Lengths FFTW cannot take (int): an argument error, not an internal one.
  expect_error(petacomm_rfft_packed(INT64_MAX - 1, 1, in.data(), out.data()),
               "n: line length 9223372036854775806 exceeds FFTW's limit", "huge rfft length");
  expect_error(petacomm_irfft_packed(INT64_MAX - 1, 1, in.data(), out.data()),
               "n: line length 9223372036854775806 exceeds FFTW's limit", "huge irfft length");
  petacomm_transpose_problem problem{4, 16, 16, 1, 16, 0, nullptr, 0};
  char text[64];
  expect_error(petacomm_transpose_model_decide(&problem, nullptr, text, sizeof text, nullptr),
               "problem.ranks_per_node: must be >= 1, got 0", "model problem");
  // Pointers and their lengths must agree, and cost must be what plans take (a NULL mask
  // with a length, a NULL buf with a length and negative or NaN costs were accepted).
  problem.ranks_per_node = 2;
  std::size_t needed = 0;
  expect_ok(petacomm_transpose_model_decide(&problem, nullptr, nullptr, 0, &needed),
            "model with a valid problem");
  problem.mask_length = 16;
  expect_error(petacomm_transpose_model_decide(&problem, nullptr, text, sizeof text, nullptr),
               "problem.mask: NULL with mask_length 16", "model NULL mask with a length");
  problem.mask_length = -3;
  expect_error(petacomm_transpose_model_decide(&problem, nullptr, text, sizeof text, nullptr),
               "problem.mask: NULL with mask_length -3", "model NULL mask, negative length");
  problem.mask_length = 0;
  expect_error(petacomm_transpose_model_decide(&problem, nullptr, nullptr, 64, &needed),
               "buf: NULL with buflen 64", "model NULL buf with a length");
  petacomm_transpose_cost_params cost = o.cost;
  cost.net_beta = -1e-9;
  expect_error(petacomm_transpose_model_decide(&problem, &cost, text, sizeof text, nullptr),
               "cost.net_beta: must be finite and >= 0, got -1e-09", "model negative cost");
  cost = o.cost;
  cost.datatype_beta = std::numeric_limits<double>::quiet_NaN();
  expect_error(petacomm_transpose_model_decide(&problem, &cost, text, sizeof text, nullptr),
               "cost.datatype_beta: must be finite and >= 0, got nan", "model NaN cost");
  // The plans' options name the cost parameter the same way.
  bad = o;
  bad.cost.p2p_alpha = -1;
  expect_error(petacomm_transpose_plan_create(MPI_COMM_WORLD, 8, 6, 1, PETACOMM_TRANSPOSE_FLOAT64,
                                              &bad, &plan),
               "cost.p2p_alpha: must be finite and >= 0, got -1", "negative cost in options");

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("transpose errors: %d failures\n", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
