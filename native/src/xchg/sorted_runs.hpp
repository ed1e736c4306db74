// Sorting a row of sorted runs by merging them pairwise: ceil(log2 runs) linear passes, no
// comparison sort. Used where each peer's contribution arrives already ascending.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace petacomm::xchg {

// items holds runs [bounds[r], bounds[r + 1]), each sorted by `less`; bounds starts at 0 and
// ends at items.size(). Afterwards items is sorted; stable: among equal items, those of
// lower runs come first.
template <class T, class Less>
void merge_sorted_runs(std::vector<T> &items, std::vector<std::size_t> bounds, Less less) {
  if (bounds.size() <= 2) return;  // one run (or none): sorted already
  std::vector<T> merged(items.size());
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
}

}  // namespace petacomm::xchg
