// Byte counts of calls: 64-bit, from counts and datatype sizes (derived types included) or
// from a receive's status. MPI_DATATYPE_NULL, negative or zero counts give 0, so junk
// arguments that are not significant on the calling rank are harmless.
#include "state.hpp"

namespace petacomm::prof {

uint64_t tsz(MPI_Count count, MPI_Datatype type) {
  if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  MPI_Count size = 0;
  if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size <= 0 || size == MPI_UNDEFINED) return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

uint64_t tsz_sum(const int *counts, int n, MPI_Datatype type) {
  if (!counts || n <= 0) return 0;
  int64_t total = 0;
  for (int i = 0; i < n; ++i)
    if (counts[i] > 0) total += counts[i];
  return tsz(total, type);
}

uint64_t tsz_at(const int *counts, int index, MPI_Datatype type) {
  if (!counts || index < 0) return 0;
  return tsz(counts[index], type);
}

uint64_t tsz_w(const int *counts, const MPI_Datatype *types, int n) {
  if (!counts || !types || n <= 0) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += tsz(counts[i], types[i]);
  return total;
}

uint64_t tsz_wf(const int *counts, const MPI_Fint *types, int n) {
  if (!counts || !types || n <= 0) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i)
    if (counts[i] > 0) total += tsz(counts[i], PMPI_Type_f2c(types[i]));
  return total;
}

uint64_t status_bytes(const MPI_Status *status) {
  if (!status || status == MPI_STATUS_IGNORE) return 0;
  if (status->MPI_SOURCE == MPI_PROC_NULL) return 0;
  MPI_Count n = 0;
  if (PMPI_Get_elements_x(status, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0)
    return 0;
  return static_cast<uint64_t>(n);
}

}  // namespace petacomm::prof
