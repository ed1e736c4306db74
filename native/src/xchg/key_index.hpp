// Key index: the distinct keys of one rank (sorted), the map from each position to its
// distinct key, and the local combine/scatter between positions and distinct keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "element_op.hpp"

namespace petacomm::xchg {

class KeyIndex {
 public:
  // Validates keys (throws fail_arg naming the first bad position) and builds the index.
  KeyIndex(const std::int64_t *keys, std::int64_t n);
  KeyIndex() = default;

  std::int64_t positions() const { return n_; }
  // True when every position holds a distinct key and they ascend: positions are keys.
  bool identity() const { return unique_of_position_.empty(); }
  std::size_t unique() const { return keys_.size(); }
  const std::vector<std::int64_t> &keys() const { return keys_; }  // sorted, distinct
  // Index of key in keys(), or -1.
  std::int64_t find(std::int64_t key) const;

  // unique_values[u] = values of key u combined over its positions, in position order.
  void combine(const ElementOp &op, const void *values, void *unique_values) const;
  // values[i] = unique_values[u(i)] for every position i.
  void scatter(std::size_t elem_bytes, const void *unique_values, void *values) const;

  std::size_t memory_bytes() const;

 private:
  std::int64_t n_ = 0;
  std::vector<std::int64_t> keys_;
  std::vector<std::int32_t> unique_of_position_;  // empty when positions are already distinct
                                                  // and sorted (identity map)
  std::vector<std::int64_t> first_position_;      // per distinct key
  std::vector<std::int64_t> repeat_positions_;    // positions after the first, in order
};

// Throws unless keys are valid: n >= 0, keys != NULL when n > 0, every key in [0, 2^63).
// Returns "" or the message (used to agree on errors collectively before throwing).
std::string validate_keys(const std::int64_t *keys, std::int64_t n);

}  // namespace petacomm::xchg
