// Checks of the arguments of executions, producing the problem text that agree_or_fail
// shares with every rank ("" when the argument is fine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "petacomm/transpose.h"

namespace petacomm::transpose {

// name: "in" or "out"; shape: what this rank's array must be; dtype: the plan's.
std::string check_array(const char *name, const petacomm_transpose_array *array,
                        const std::vector<std::int64_t> &shape, int dtype, bool writeable);

// Raw buffers: NULL where bytes are needed, or in and out overlapping without being equal.
std::string check_buffers(const void *in, std::size_t in_bytes, const void *out,
                          std::size_t out_bytes);

std::string shape_text(const std::vector<std::int64_t> &shape);

// MPI must be initialised and not finalised for collective calls (ERR_STATE otherwise).
void require_mpi_running(const char *call);

}  // namespace petacomm::transpose
