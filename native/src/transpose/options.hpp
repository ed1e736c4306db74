// The options of a transpose plan, checked: petacomm_transpose_options as the C API takes
// it, validated once into TransposeOptions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "petacomm/transpose.h"

namespace petacomm::transpose {

petacomm_transpose_options default_options();

struct TransposeOptions {
  std::string strategy = "auto";  // "auto" or a registry name
  bool measure = false;           // planner "measure"
  int window = 4, measure_reps = 3, node_size = 0;
  std::vector<unsigned char> mask;  // empty, or n1 flags (0/1)
  petacomm_transpose_cost_params cost{};
};

// The options (NULL: defaults) checked against a transpose of n1 columns; a non-empty
// *problem names the argument at fault (then the result is unusable). mask_allowed: false
// for pencils and filters, which take no mask.
TransposeOptions validate_options(const petacomm_transpose_options *opts, std::int64_t n1,
                                  bool mask_allowed, std::string *problem);

// "" or the first cost parameter that is negative, infinite or NaN, named as
// "cost.<field>" (the options' and petacomm_transpose_model_decide's check).
std::string cost_problem(const petacomm_transpose_cost_params &cost);

// A hash of everything all ranks must agree on (strategy, planner, numbers, mask).
std::uint64_t fingerprint(const TransposeOptions &o, std::uint64_t seed);

// Combines v into a running fingerprint.
std::uint64_t mix(std::uint64_t h, std::uint64_t v);

// Bytes of one value of dtype; 0 for an unknown dtype.
std::size_t dtype_bytes(int dtype);
const char *dtype_name(int dtype);

// "" or why arrays of `extents` elements, each howmany values of dtype (howmany >= 1, dtype
// known, extents >= 1), cannot be transposed: an element travels as one MPI datatype of at
// most 2^31 - 1 bytes, and a whole array's bytes must stay below 9e18 (int64 offsets).
// names spells the extents as the caller does ("n0 x n1").
std::string size_problem(const char *names, std::initializer_list<std::int64_t> extents,
                         std::int64_t howmany, int dtype);

}  // namespace petacomm::transpose
