// Element operators: one (dtype, operator, k) resolved to reduction kernels. All reductions
// in xchg go through here, so every strategy combines values identically (the basis of the
// bitwise-identical deterministic mode).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "petacomm/xchg.h"

namespace petacomm::xchg {

// Bytes of one component of dtype; throws on an unknown dtype naming `what`.
std::size_t dtype_size(petacomm_xchg_dtype dtype, const char *what);
const char *dtype_name(petacomm_xchg_dtype dtype);
const char *op_name(petacomm_xchg_op op);
// The MPI datatype of one component (for MPI_Allreduce with a built-in operator).
MPI_Datatype dtype_mpi(petacomm_xchg_dtype dtype);
MPI_Op op_mpi(petacomm_xchg_op op);

class ElementOp {
 public:
  // Validates the combination (throws fail_arg naming the argument and value).
  ElementOp(petacomm_xchg_dtype dtype, petacomm_xchg_op op, int k,
            const petacomm_xchg_user_op *user);

  petacomm_xchg_dtype dtype() const { return dtype_; }
  petacomm_xchg_op op() const { return op_; }
  int k() const { return k_; }
  std::size_t elem_bytes() const { return elem_bytes_; }  // k components
  bool builtin() const { return op_ != PETACOMM_XCHG_USER; }

  // dst[0 .. nelem) = identity (nelem keys of k components).
  void fill_identity(void *dst, std::size_t nelem) const;
  // acc[j] = acc[j] (+) src[j] for j < nelem (contiguous keys).
  void fold(void *acc, const void *src, std::size_t nelem) const;
  // acc[idx[j]] = acc[idx[j]] (+) src[j] for j < count (src packed).
  void fold_indexed(void *acc, const std::int32_t *idx, std::size_t count, const void *src) const;
  // acc[j] = acc[j] (+) src[idx[j]] for j < count (acc packed).
  void fold_gathered(void *acc, const std::int32_t *idx, std::size_t count, const void *src) const;

 private:
  using FoldFn = void (*)(void *acc, const std::int32_t *idx, std::size_t count, const void *src,
                          int k);
  petacomm_xchg_dtype dtype_;
  petacomm_xchg_op op_;
  int k_;
  std::size_t comp_bytes_;
  std::size_t elem_bytes_;
  const petacomm_xchg_user_op *user_;
  FoldFn fold_fn_ = nullptr;    // acc indexed (or contiguous with idx == nullptr)
  FoldFn gather_fn_ = nullptr;  // src indexed
};

}  // namespace petacomm::xchg
