// Rows of sorted runs (each peer's contribution arrives already ascending): sorted by merging
// them pairwise, ceil(log2 runs) linear passes and no comparison sort; and their distinct
// keys numbered.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "recycled.hpp"

namespace petacomm::xchg {

// items holds runs [bounds[r], bounds[r + 1]), each sorted by `less`; bounds starts at 0 and
// ends at items.size(). Afterwards items is sorted; stable: among equal items, those of
// lower runs come first.
template <class T, class Less>
void merge_sorted_runs(std::vector<T> &items, std::vector<std::size_t> bounds, Less less) {
  if (bounds.size() <= 2) return;  // one run (or none): sorted already
  std::vector<T> merged = Recycled<T>::take(items.size());
  merged.resize(items.size());
  while (bounds.size() > 2) {
    const std::size_t runs = bounds.size() - 1;
    std::vector<std::size_t> next = {0};
    for (std::size_t r = 0; r < runs; r += 2) {
      const auto at = [](auto &v, std::size_t i) {
        return v.begin() + static_cast<std::ptrdiff_t>(i);
      };
      const std::size_t lo = bounds[r], mid = bounds[r + 1];
      const std::size_t hi = r + 2 <= runs ? bounds[r + 2] : mid;
      std::merge(at(items, lo), at(items, mid), at(items, mid), at(items, hi), at(merged, lo),
                 less);
      next.push_back(hi);
    }
    items.swap(merged);
    bounds.swap(next);
  }
  Recycled<T>::give(std::move(merged));
}

// True when `total` keys in [lo, hi] (lo <= hi, keys >= 0) span at most 8 values each: a
// table over the span (two linear passes) is then cheaper than merging sorted runs, and
// its memory stays within 32 bytes per key.
inline bool dense_span(std::int64_t lo, std::int64_t hi, std::size_t total) {
  return static_cast<std::uint64_t>(hi - lo) < 8 * static_cast<std::uint64_t>(total);
}

struct KeyRun {
  const std::int64_t *first, *last;  // ascending, distinct
};

// The slot of every entry of the runs laid end to end, the slots numbering the distinct
// keys in ascending order. When the keys span at most 8 values per entry, a table over the
// span numbers them in two linear passes; otherwise the runs are merged, each entry carrying
// its position, and one pass over the merged row numbers them (memory: 32 bytes per entry
// either way).
inline std::vector<std::int32_t> number_slots(const std::vector<KeyRun> &runs,
                                              std::size_t *slot_count) {
  std::size_t total = 0;
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const KeyRun &run : runs) {
    if (run.first == run.last) continue;
    total += static_cast<std::size_t>(run.last - run.first);
    lo = std::min(lo, run.first[0]);
    hi = std::max(hi, run.last[-1]);
  }
  std::vector<std::int32_t> slot_of_entry(total);
  *slot_count = 0;
  if (total == 0) return slot_of_entry;
  // Keys are in [0, 2^63): the span fits.
  const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
  if (dense_span(lo, hi, total)) {
    std::vector<std::int32_t> table(span, 0);
    for (const KeyRun &run : runs)
      for (const std::int64_t *k = run.first; k != run.last; ++k) table[*k - lo] = 1;
    std::int32_t next = 0;
    for (std::int32_t &t : table) {  // each present key's slot: the present keys below it
      const std::int32_t present = t;
      t = next;
      next += present;
    }
    std::size_t e = 0;
    for (const KeyRun &run : runs)
      for (const std::int64_t *k = run.first; k != run.last; ++k)
        slot_of_entry[e++] = table[*k - lo];
    *slot_count = static_cast<std::size_t>(next);
    return slot_of_entry;
  }
  struct Entry {
    std::int64_t key;
    std::int32_t at;  // position in the runs laid end to end
  };
  std::vector<Entry> entries;
  entries.reserve(total);
  std::vector<std::size_t> bounds = {0};
  for (const KeyRun &run : runs) {
    for (const std::int64_t *k = run.first; k != run.last; ++k)
      entries.push_back({*k, static_cast<std::int32_t>(entries.size())});
    bounds.push_back(entries.size());
  }
  merge_sorted_runs(entries, std::move(bounds),
                    [](const Entry &a, const Entry &b) { return a.key < b.key; });
  std::int32_t slot = -1;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    if (e == 0 || entries[e].key != entries[e - 1].key) ++slot;
    slot_of_entry[static_cast<std::size_t>(entries[e].at)] = slot;
  }
  *slot_count = static_cast<std::size_t>(slot + 1);
  return slot_of_entry;
}

}  // namespace petacomm::xchg
