#include "key_index.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "error.hpp"

namespace petacomm::xchg {

std::string validate_keys(const std::int64_t *keys, std::int64_t n) {
  if (n < 0) return concat("n: number of keys must be >= 0, got ", n);
  if (n > 0 && keys == nullptr) return concat("keys: NULL with n = ", n);
  for (std::int64_t i = 0; i < n; ++i) {
    if (keys[i] < 0)
      return concat("keys[", i, "]: key ", keys[i], " is outside [0, 2^63) (negative)");
  }
  return {};
}

namespace {

struct KeyAt {
  std::int64_t key;
  std::int64_t position;
};

// Positions ordered by key, equal keys in position order: an LSD radix sort of (key,
// position) pairs over the bits in which the keys differ from the smallest, 11 bits a pass.
// Indirect comparison sorting held a third of a plan's setup on scan-ordered keys (20,000
// keys: perf); radix passes touch each pair a few times, in order.
std::vector<KeyAt> sorted_by_key(const std::int64_t *keys, std::size_t count) {
  std::vector<KeyAt> pairs(count);
  for (std::size_t i = 0; i < count; ++i) pairs[i] = {keys[i], static_cast<std::int64_t>(i)};
  if (count < 64) {  // a radix pass's histogram costs more than sorting a few pairs
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const KeyAt &a, const KeyAt &b) { return a.key < b.key; });
    return pairs;
  }
  const auto [lo, hi] = std::minmax_element(keys, keys + count);
  const auto span = static_cast<std::uint64_t>(*hi - *lo);  // keys are >= 0: no overflow
  int bits = 0;
  while (bits < 64 && (span >> bits) != 0) ++bits;
  constexpr int kDigitBits = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kDigitBits;
  std::vector<KeyAt> other(count);
  std::vector<std::size_t> start(kBuckets);
  const std::int64_t base = *lo;
  for (int shift = 0; shift < bits; shift += kDigitBits) {
    const auto digit = [base, shift](const KeyAt &e) {
      return static_cast<std::size_t>((static_cast<std::uint64_t>(e.key - base) >> shift) &
                                      (kBuckets - 1));
    };
    std::fill(start.begin(), start.end(), 0);
    for (const KeyAt &e : pairs) ++start[digit(e)];
    std::size_t sum = 0;
    for (std::size_t &b : start) sum += std::exchange(b, sum);
    for (const KeyAt &e : pairs) other[start[digit(e)]++] = e;
    pairs.swap(other);
  }
  return pairs;
}

}  // namespace

KeyIndex::KeyIndex(const std::int64_t *keys, std::int64_t n) : n_(n) {
  const std::string problem = validate_keys(keys, n);
  PETACOMM_CHECK_ARG(problem.empty(), problem);
  const std::size_t count = static_cast<std::size_t>(n);
  bool sorted_distinct = true;
  for (std::size_t i = 1; i < count && sorted_distinct; ++i)
    sorted_distinct = keys[i - 1] < keys[i];
  if (sorted_distinct) {
    keys_.assign(keys, keys + count);
    return;
  }
  const std::vector<KeyAt> order = sorted_by_key(keys, count);
  unique_of_position_.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
    const std::int64_t pos = order[j].position;
    if (j == 0 || order[j - 1].key != order[j].key) {
      PETACOMM_CHECK_ARG(
          keys_.size() < static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
          "keys: more than 2^31-1 distinct keys on one rank are not supported");
      keys_.push_back(keys[pos]);
      first_position_.push_back(pos);
    }
    unique_of_position_[pos] = static_cast<std::int32_t>(keys_.size() - 1);
  }
  std::vector<char> is_first(count, 0);
  for (std::int64_t pos : first_position_) is_first[pos] = 1;
  for (std::size_t i = 0; i < count; ++i)
    if (!is_first[i]) repeat_positions_.push_back(static_cast<std::int64_t>(i));
  keys_.shrink_to_fit();
}

std::int64_t KeyIndex::find(std::int64_t key) const {
  auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (it == keys_.end() || *it != key) return -1;
  return it - keys_.begin();
}

void KeyIndex::combine(const ElementOp &op, const void *values, void *unique_values) const {
  const std::size_t eb = op.elem_bytes();
  const char *in = static_cast<const char *>(values);
  char *out = static_cast<char *>(unique_values);
  if (unique_of_position_.empty()) {
    if (!keys_.empty()) std::memcpy(out, in, keys_.size() * eb);
    return;
  }
  for (std::size_t u = 0; u < first_position_.size(); ++u)
    std::memcpy(out + u * eb, in + static_cast<std::size_t>(first_position_[u]) * eb, eb);
  for (std::int64_t pos : repeat_positions_) {
    const std::int32_t u = unique_of_position_[pos];
    op.fold_indexed(out, &u, 1, in + static_cast<std::size_t>(pos) * eb);
  }
}

void KeyIndex::scatter(std::size_t eb, const void *unique_values, void *values) const {
  const char *in = static_cast<const char *>(unique_values);
  char *out = static_cast<char *>(values);
  if (unique_of_position_.empty()) {
    if (!keys_.empty()) std::memcpy(out, in, keys_.size() * eb);
    return;
  }
  const std::size_t count = unique_of_position_.size();
  if (eb == 8) {
    for (std::size_t i = 0; i < count; ++i)
      std::memcpy(out + i * 8, in + static_cast<std::size_t>(unique_of_position_[i]) * 8, 8);
    return;
  }
  for (std::size_t i = 0; i < count; ++i)
    std::memcpy(out + i * eb, in + static_cast<std::size_t>(unique_of_position_[i]) * eb, eb);
}

std::size_t KeyIndex::memory_bytes() const {
  return keys_.capacity() * sizeof(std::int64_t) +
         unique_of_position_.capacity() * sizeof(std::int32_t) +
         first_position_.capacity() * sizeof(std::int64_t) +
         repeat_positions_.capacity() * sizeof(std::int64_t);
}

}  // namespace petacomm::xchg
