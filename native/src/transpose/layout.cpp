#include "layout.hpp"

namespace petacomm::transpose {

std::vector<Run> kept_runs(const std::vector<unsigned char> &kept, std::int64_t offset,
                           std::int64_t count) {
  std::vector<Run> runs;
  if (kept.empty()) {
    if (count > 0) runs.push_back({0, count});
    return runs;
  }
  for (std::int64_t k = 0; k < count;) {
    if (!kept[offset + k]) {
      ++k;
      continue;
    }
    std::int64_t end = k;
    while (end < count && kept[offset + end]) ++end;
    runs.push_back({k, end - k});
    k = end;
  }
  return runs;
}

}  // namespace petacomm::transpose
