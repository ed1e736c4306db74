// Consumer of an installed petacomm (C++): the same reduction as reduce.c on 64-bit
// integers, one component per key, with the directory strategy chosen explicitly.
#include <mpi.h>
#include <petacomm/xchg.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

std::vector<int64_t> keys_of(int r, int p) {
  return {7, 1000 + r, 1000 + (r + 1) % p, 7, 20 + 3 * r};
}
int64_t value_of(int r, int i) { return (r + 1) * (i % 2 ? -10 : 10) + i; }

void check(petacomm_status status, const char *what) {
  if (status != PETACOMM_SUCCESS) {
    std::fprintf(stderr, "reduce_cxx: %s: %s\n", what, petacomm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::vector<int64_t> keys = keys_of(rank, size);
  std::vector<int64_t> values;
  for (int i = 0; i < static_cast<int>(keys.size()); i++) values.push_back(value_of(rank, i));

  petacomm_xchg_options options;
  check(petacomm_xchg_options_default(&options), "options");
  options.strategy = "directory";
  petacomm_xchg_plan plan = nullptr;
  const auto n = static_cast<int64_t>(keys.size());
  check(petacomm_xchg_plan_create(MPI_COMM_WORLD, keys.data(), n, &options, &plan), "create");
  check(petacomm_xchg_execute(plan, MPI_COMM_WORLD, values.data(), n, 1, PETACOMM_XCHG_INT64,
                              PETACOMM_XCHG_SUM),
        "execute");
  const char *strategy = nullptr;
  check(petacomm_xchg_plan_strategy(plan, &strategy), "strategy");

  int errors = std::string(strategy) != "directory";
  int64_t checksum = 0;
  for (size_t i = 0; i < keys.size(); i++) {
    int64_t expect = 0;  // every rank's contributions to this key
    for (int q = 0; q < size; q++) {
      const std::vector<int64_t> other = keys_of(q, size);
      for (size_t j = 0; j < other.size(); j++)
        if (other[j] == keys[i]) expect += value_of(q, static_cast<int>(j));
    }
    errors += values[i] != expect;
    checksum += values[i];
  }
  std::printf("reduce_cxx rank %d of %d: strategy %s key7 %lld checksum %lld errors %d\n", rank,
              size, strategy, static_cast<long long>(values[0]), static_cast<long long>(checksum),
              errors);
  check(petacomm_xchg_plan_free(&plan), "free");
  MPI_Finalize();
  return errors != 0;
}
