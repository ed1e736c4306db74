// merge_sorted_runs and number_slots against plain references (std::stable_sort, std::set)
// on random runs: dense spans (a table numbers the keys) and sparse ones (a merge does),
// with keys shared between runs, empty runs and keys near 2^63. No MPI.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "sorted_runs.hpp"

namespace {

int failures = 0;

void check(bool ok, const char *what, int trial) {
  if (!ok && failures++ < 20) std::fprintf(stderr, "trial %d: %s\n", trial, what);
}

// runs ascending, distinct within each run, keys drawn from [base, base + span).
std::vector<std::vector<std::int64_t>> random_runs(std::mt19937_64 &rng, std::int64_t base,
                                                   std::uint64_t span, int runs, int per_run) {
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(runs));
  for (auto &run : out) {
    std::set<std::int64_t> keys;
    const int n = static_cast<int>(rng() % static_cast<std::uint64_t>(per_run + 1));
    for (int i = 0; i < n; ++i) keys.insert(base + static_cast<std::int64_t>(rng() % span));
    run.assign(keys.begin(), keys.end());
  }
  return out;
}

void check_number_slots(const std::vector<std::vector<std::int64_t>> &lists, int trial) {
  std::vector<petacomm::xchg::KeyRun> runs;
  std::set<std::int64_t> distinct;
  for (const auto &l : lists) {
    runs.push_back({l.data(), l.data() + l.size()});
    distinct.insert(l.begin(), l.end());
  }
  std::size_t count = 12345;
  const std::vector<std::int32_t> slots = petacomm::xchg::number_slots(runs, &count);
  check(count == distinct.size(), "slot count differs from the distinct keys", trial);
  std::size_t e = 0;
  for (const auto &l : lists)
    for (std::int64_t key : l) {
      const auto want = std::distance(distinct.begin(), distinct.find(key));
      check(e < slots.size() && slots[e] == want, "an entry's slot is not its key's rank", trial);
      ++e;
    }
  check(e == slots.size(), "one slot per entry", trial);
}

void check_merge(std::mt19937_64 &rng, int trial) {
  // (key, run) pairs: stable means equal keys keep the runs' order.
  const auto lists = random_runs(rng, 0, 50, 1 + static_cast<int>(rng() % 9), 30);
  std::vector<std::pair<std::int64_t, int>> items;
  std::vector<std::size_t> bounds = {0};
  for (std::size_t r = 0; r < lists.size(); ++r) {
    for (std::int64_t k : lists[r]) items.push_back({k, static_cast<int>(r)});
    bounds.push_back(items.size());
  }
  auto want = items;
  const auto by_key = [](const auto &a, const auto &b) { return a.first < b.first; };
  std::stable_sort(want.begin(), want.end(), by_key);
  petacomm::xchg::merge_sorted_runs(items, bounds, by_key);
  check(items == want, "merge_sorted_runs differs from a stable sort", trial);
}

}  // namespace

int main() {
  std::mt19937_64 rng(20261127);
  for (int trial = 0; trial < 400; ++trial) {
    const int runs = 1 + static_cast<int>(rng() % 9);
    // Dense: span <= 8 entries per key on average (the table); sparse: spans far wider
    // (the merge), one near the top of the key range.
    check_number_slots(random_runs(rng, 1000, 40, runs, 30), trial);
    check_number_slots(random_runs(rng, 5, std::uint64_t{1} << 40, runs, 30), trial);
    check_number_slots(random_runs(rng, INT64_MAX - 1000, 1000, runs, 3), trial);
    check_merge(rng, trial);
  }
  check_number_slots({}, -1);
  check_number_slots({{}, {}, {}}, -2);
  check_number_slots({{7}}, -3);
  check_number_slots({{0, INT64_MAX}, {INT64_MAX}}, -4);
  if (failures)
    std::fprintf(stderr, "%d failures\n", failures);
  else
    std::printf("sorted runs: all checks passed\n");
  return failures ? 1 : 0;
}
