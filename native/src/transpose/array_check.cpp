#include "array_check.hpp"

#include <mpi.h>

#include "error.hpp"
#include "options.hpp"

namespace petacomm::transpose {

std::string shape_text(const std::vector<std::int64_t> &shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

std::string check_array(const char *name, const petacomm_transpose_array *a,
                        const std::vector<std::int64_t> &shape, int dtype, bool writeable) {
  if (a == nullptr) return concat(name, ": NULL array descriptor");
  if (a->ndim < 0 || a->ndim > 4) return concat(name, ": ndim ", a->ndim, " is not in [0, 4]");
  const std::vector<std::int64_t> got(a->shape, a->shape + a->ndim);
  if (a->dtype != dtype)
    return concat(name, ": dtype ", dtype_name(a->dtype), " does not match the plan's ",
                  dtype_name(dtype));
  if (got != shape)
    return concat(name, ": shape ", shape_text(got), " does not match this rank's local shape ",
                  shape_text(shape));
  // C-contiguous: strides of extent-1 axes (and of empty arrays) do not matter.
  std::int64_t elements = 1;
  for (std::int64_t n : got) elements *= n;
  if (elements == 0) return {};
  std::int64_t expected = static_cast<std::int64_t>(dtype_bytes(dtype));
  for (int k = a->ndim - 1; k >= 0; --k) {
    if (a->shape[k] > 1 && a->strides[k] != expected)
      return concat(name, ": not C-contiguous (strides ",
                    shape_text(std::vector<std::int64_t>(a->strides, a->strides + a->ndim)),
                    " bytes); pass a contiguous array (numpy.ascontiguousarray)");
    expected *= a->shape[k];
  }
  if (expected > 0 && a->data == nullptr) return concat(name, ": NULL data");
  if (writeable && !a->writeable) return concat(name, ": read-only, the output must be writeable");
  return {};
}

std::string check_buffers(const void *in, std::size_t in_bytes, const void *out,
                          std::size_t out_bytes) {
  if (in_bytes > 0 && in == nullptr) return "in: NULL";
  if (out_bytes > 0 && out == nullptr) return "out: NULL";
  if (in == out || in_bytes == 0 || out_bytes == 0) return {};
  const char *a = static_cast<const char *>(in), *b = static_cast<const char *>(out);
  if (a < b + out_bytes && b < a + in_bytes)
    return "out: overlaps in without starting at the same address (in place needs in == out)";
  return {};
}

void require_mpi_running(const char *call) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    fail_state(call, ": MPI is ", finalized ? "finalised" : "not initialised");
}

}  // namespace petacomm::transpose
