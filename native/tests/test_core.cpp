// Core C API: version strings, error reporting for bad arguments, MPI identification.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "petacomm/core.h"
#include "strategy_registry.hpp"

static int failures = 0;
#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

namespace {

struct Entry {
  petacomm::StrategyAbout about;
};
const Entry kA{{"alpha", "first", ""}}, kB{{"beta", "second", "chunk"}}, kC{{"gamma", "", ""}};

void check_registry() {
  const petacomm::StrategyRegistry<Entry> r({&kA, &kB, &kC});
  CHECK(r.size() == 3 && r.find("beta") == &kB && r.find("delta") == nullptr);
  CHECK(r.index_of("gamma") == 2 && r.index_of("") == -1);
  CHECK(r.names() == "alpha, beta or gamma");
  CHECK(r.names("auto") == "auto, alpha, beta or gamma");
  bool threw = false;
  try {
    r.require("strategy", "delta");
  } catch (const petacomm::Error &e) {
    threw = e.status() == PETACOMM_ERR_ARG &&
            std::string(e.what()) ==
                "strategy: unknown strategy 'delta' (expected alpha, beta or gamma)";
  }
  CHECK(threw);
  petacomm_strategy_info info{};
  r.info(1, &info);
  CHECK(std::strcmp(info.name, "beta") == 0 && std::strcmp(info.options, "chunk") == 0);
  threw = false;
  try {
    r.info(3, &info);
  } catch (const petacomm::Error &e) {
    threw = e.status() == PETACOMM_ERR_ARG;
  }
  CHECK(threw);
  threw = false;
  try {
    const petacomm::StrategyRegistry<Entry> twice({&kA, &kA});
  } catch (const petacomm::Error &e) {
    threw = e.status() == PETACOMM_ERR_INTERNAL;
  }
  CHECK(threw);
}

void check_decide() {
  using petacomm::CandidateCost;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Predicted: the cheapest applicable wins; the inapplicable cheaper one does not.
  auto d = petacomm::decide_cheapest({{"a", true, "", 3e-6, nan},
                                      {"b", false, "needs a power of two", 1e-6, nan},
                                      {"c", true, "", 2e-6, nan},
                                      {"d", true, "", nan, nan}});
  CHECK(d.choice == "c" && !d.measured && d.candidates.size() == 4);
  CHECK(d.reason == "lowest predicted time: c 2 us vs a 3 us");
  // Measured times override predictions once every applicable candidate is timed.
  d = petacomm::decide_cheapest({{"a", true, "", 1e-6, 5e-6}, {"c", true, "", 9e-6, 4e-6}});
  CHECK(d.choice == "c" && d.measured);
  // Ties go to the earlier candidate.
  d = petacomm::decide_cheapest({{"a", true, "", 1e-6, nan}, {"c", true, "", 1e-6, nan}});
  CHECK(d.choice == "a");
  bool threw = false;
  try {
    petacomm::decide_cheapest({{"x", false, "needs p even", 1, nan}});
  } catch (const petacomm::Error &e) {
    threw = std::string(e.what()) == "strategy: no candidate applies (x: needs p even)";
  }
  CHECK(threw);
}

void check_macros() {
  bool threw = false;
  try {
    PETACOMM_CHECK_INTERNAL(1 + 1 == 3, "arithmetic");
  } catch (const petacomm::Error &e) {
    threw = e.status() == PETACOMM_ERR_INTERNAL &&
            std::string(e.what()) == "internal error: arithmetic (1 + 1 == 3)";
  }
  CHECK(threw);
  CHECK(petacomm::guard([] { PETACOMM_CHECK_STATE(false, "plan: freed"); }) == PETACOMM_ERR_STATE);
  CHECK(std::strcmp(petacomm_last_error(), "plan: freed") == 0);
  CHECK(petacomm::guard([] { PETACOMM_CHECK_ARG(false, "n: bad ", 7); }) == PETACOMM_ERR_ARG);
  CHECK(std::strcmp(petacomm_last_error(), "n: bad 7") == 0);
}

}  // namespace

int main(int argc, char **argv) {
  check_registry();
  check_decide();
  check_macros();
  char version[512];
  // Allowed before MPI_Init by the standard.
  CHECK(petacomm_mpi_library_version(version, sizeof version) == PETACOMM_SUCCESS);
  CHECK(std::strlen(version) > 0);
  MPI_Init(&argc, &argv);
  CHECK(std::strcmp(petacomm_version(), "") != 0);
  CHECK(petacomm_mpi_library_version(nullptr, 10) == PETACOMM_ERR_ARG);
  CHECK(std::strstr(petacomm_last_error(), "buf") != nullptr);
  CHECK(petacomm_mpi_library_version(version, 0) == PETACOMM_ERR_ARG);
  CHECK(std::strstr(petacomm_last_error(), "buflen") != nullptr);
  char tiny[4];
  CHECK(petacomm_mpi_library_version(tiny, sizeof tiny) == PETACOMM_SUCCESS);
  CHECK(std::strlen(tiny) == 3);
  CHECK(std::strcmp(petacomm_last_error(), "") == 0);
  int v = 0, sv = 0;
  CHECK(petacomm_mpi_standard_version(&v, &sv) == PETACOMM_SUCCESS && v >= 3);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("test_core: %s (%d failures)\n", all ? "FAILED" : "passed", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
