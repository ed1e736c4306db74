#include "element_op.hpp"

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>

#include "error.hpp"

namespace petacomm::xchg {
namespace {

template <typename T>
struct Sum {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));  // wraps, no UB
    } else {
      return a + b;
    }
  }
  static T identity() {
    if constexpr (std::is_integral_v<T>) {
      return T(0);
    } else if constexpr (std::is_floating_point_v<T>) {
      return -T(0);  // -0.0 + x == x for every x, including -0.0
    } else {
      using R = typename T::value_type;
      return T(-R(0), -R(0));
    }
  }
};

template <typename T>
struct Prod {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
  static T identity() { return T(1); }
};

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

template <typename T>
struct Min {
  static T apply(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b < a ? b : a;
  }
  static T identity() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();
  }
};

template <typename T>
struct Max {
  static T apply(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? b : a;
  }
  static T identity() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
};

template <typename T, template <typename> class Op>
void fold_kernel(void *acc_v, const std::int32_t *idx, std::size_t count, const void *src_v,
                 int k) {
  T *acc = static_cast<T *>(acc_v);
  const T *src = static_cast<const T *>(src_v);
  const std::size_t kk = static_cast<std::size_t>(k);
  if (idx == nullptr) {
    const std::size_t total = count * kk;
    for (std::size_t i = 0; i < total; ++i) acc[i] = Op<T>::apply(acc[i], src[i]);
    return;
  }
  if (kk == 1) {
    for (std::size_t j = 0; j < count; ++j) acc[idx[j]] = Op<T>::apply(acc[idx[j]], src[j]);
    return;
  }
  for (std::size_t j = 0; j < count; ++j) {
    T *a = acc + static_cast<std::size_t>(idx[j]) * kk;
    const T *s = src + j * kk;
    for (std::size_t c = 0; c < kk; ++c) a[c] = Op<T>::apply(a[c], s[c]);
  }
}

template <typename T, template <typename> class Op>
void gather_kernel(void *acc_v, const std::int32_t *idx, std::size_t count, const void *src_v,
                   int k) {
  T *acc = static_cast<T *>(acc_v);
  const T *src = static_cast<const T *>(src_v);
  const std::size_t kk = static_cast<std::size_t>(k);
  if (kk == 1) {
    for (std::size_t j = 0; j < count; ++j) acc[j] = Op<T>::apply(acc[j], src[idx[j]]);
    return;
  }
  for (std::size_t j = 0; j < count; ++j) {
    T *a = acc + j * kk;
    const T *s = src + static_cast<std::size_t>(idx[j]) * kk;
    for (std::size_t c = 0; c < kk; ++c) a[c] = Op<T>::apply(a[c], s[c]);
  }
}

template <typename T, template <typename> class Op>
void fill_kernel(void *dst_v, std::size_t total) {
  T *dst = static_cast<T *>(dst_v);
  const T e = Op<T>::identity();
  for (std::size_t i = 0; i < total; ++i) dst[i] = e;
}

// The fold and gather kernels of one (dtype, operator).
struct Kernels {
  void *fold = nullptr;
  void *gather = nullptr;
};

template <typename T, template <typename> class Op>
Kernels kernels() {
  return {reinterpret_cast<void *>(&fold_kernel<T, Op>),
          reinterpret_cast<void *>(&gather_kernel<T, Op>)};
}

template <template <typename> class Op>
Kernels kernels_for(petacomm_xchg_dtype dtype) {
  switch (dtype) {
    case PETACOMM_XCHG_FLOAT32:
      return kernels<float, Op>();
    case PETACOMM_XCHG_FLOAT64:
      return kernels<double, Op>();
    case PETACOMM_XCHG_INT32:
      return kernels<std::int32_t, Op>();
    case PETACOMM_XCHG_INT64:
      return kernels<std::int64_t, Op>();
    default:
      return {};
  }
}

template <template <typename> class Op>
Kernels kernels_for_complex(petacomm_xchg_dtype dtype) {
  if (dtype == PETACOMM_XCHG_COMPLEX64) return kernels<std::complex<float>, Op>();
  if (dtype == PETACOMM_XCHG_COMPLEX128) return kernels<std::complex<double>, Op>();
  return kernels_for<Op>(dtype);
}

bool is_complex(petacomm_xchg_dtype dtype) {
  return dtype == PETACOMM_XCHG_COMPLEX64 || dtype == PETACOMM_XCHG_COMPLEX128;
}

}  // namespace

std::size_t dtype_size(petacomm_xchg_dtype dtype, const char *what) {
  switch (dtype) {
    case PETACOMM_XCHG_FLOAT32:
    case PETACOMM_XCHG_INT32:
      return 4;
    case PETACOMM_XCHG_FLOAT64:
    case PETACOMM_XCHG_INT64:
    case PETACOMM_XCHG_COMPLEX64:
      return 8;
    case PETACOMM_XCHG_COMPLEX128:
      return 16;
  }
  fail_arg(what, ": unknown dtype ", static_cast<int>(dtype),
           " (expected float32, float64, int32, int64, complex64 or complex128)");
}

const char *dtype_name(petacomm_xchg_dtype dtype) {
  switch (dtype) {
    case PETACOMM_XCHG_FLOAT32:
      return "float32";
    case PETACOMM_XCHG_FLOAT64:
      return "float64";
    case PETACOMM_XCHG_INT32:
      return "int32";
    case PETACOMM_XCHG_INT64:
      return "int64";
    case PETACOMM_XCHG_COMPLEX64:
      return "complex64";
    case PETACOMM_XCHG_COMPLEX128:
      return "complex128";
  }
  return "unknown";
}

const char *op_name(petacomm_xchg_op op) {
  switch (op) {
    case PETACOMM_XCHG_SUM:
      return "sum";
    case PETACOMM_XCHG_PROD:
      return "prod";
    case PETACOMM_XCHG_MIN:
      return "min";
    case PETACOMM_XCHG_MAX:
      return "max";
    case PETACOMM_XCHG_USER:
      return "user";
  }
  return "unknown";
}

MPI_Datatype dtype_mpi(petacomm_xchg_dtype dtype) {
  switch (dtype) {
    case PETACOMM_XCHG_FLOAT32:
      return MPI_FLOAT;
    case PETACOMM_XCHG_FLOAT64:
      return MPI_DOUBLE;
    case PETACOMM_XCHG_INT32:
      return MPI_INT32_T;
    case PETACOMM_XCHG_INT64:
      return MPI_INT64_T;
    case PETACOMM_XCHG_COMPLEX64:
      return MPI_C_FLOAT_COMPLEX;
    case PETACOMM_XCHG_COMPLEX128:
      return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op op_mpi(petacomm_xchg_op op) {
  switch (op) {
    case PETACOMM_XCHG_SUM:
      return MPI_SUM;
    case PETACOMM_XCHG_PROD:
      return MPI_PROD;
    case PETACOMM_XCHG_MIN:
      return MPI_MIN;
    case PETACOMM_XCHG_MAX:
      return MPI_MAX;
    default:
      return MPI_OP_NULL;
  }
}

ElementOp::ElementOp(petacomm_xchg_dtype dtype, petacomm_xchg_op op, int k,
                     const petacomm_xchg_user_op *user)
    : dtype_(dtype), op_(op), k_(k), user_(user) {
  comp_bytes_ = dtype_size(dtype, "dtype");
  PETACOMM_CHECK_ARG(k >= 1, "k: must be at least 1 component per key, got ", k);
  // An element travels as one MPI datatype of elem_bytes bytes (ElementType).
  constexpr auto kMaxElemBytes = static_cast<std::size_t>(std::numeric_limits<int>::max());
  PETACOMM_CHECK_ARG(static_cast<std::size_t>(k) <= kMaxElemBytes / comp_bytes_, "k: ", k,
                     " components of ", dtype_name(dtype), " are ",
                     static_cast<std::size_t>(k) * comp_bytes_,
                     " bytes per key, above the limit of ", kMaxElemBytes, " bytes (an MPI count)");
  elem_bytes_ = comp_bytes_ * static_cast<std::size_t>(k);
  Kernels fn;
  switch (op) {
    case PETACOMM_XCHG_SUM:
      fn = kernels_for_complex<Sum>(dtype);
      break;
    case PETACOMM_XCHG_PROD:
      fn = kernels_for_complex<Prod>(dtype);
      break;
    case PETACOMM_XCHG_MIN:
    case PETACOMM_XCHG_MAX:
      if (is_complex(dtype))
        fail_arg("op: ", op_name(op), " is not defined for complex dtype ", dtype_name(dtype),
                 " (use sum, prod or a user operator)");
      fn = op == PETACOMM_XCHG_MIN ? kernels_for<Min>(dtype) : kernels_for<Max>(dtype);
      break;
    case PETACOMM_XCHG_USER:
      if (user == nullptr || user->combine == nullptr || user->identity == nullptr)
        fail_arg("user: a user operator needs combine and identity, got ",
                 user == nullptr ? "NULL" : "a NULL member");
      break;
    default:
      fail_arg("op: unknown operator ", static_cast<int>(op),
               " (expected sum, prod, min, max or user)");
  }
  fold_fn_ = reinterpret_cast<FoldFn>(fn.fold);
  gather_fn_ = reinterpret_cast<FoldFn>(fn.gather);
}

void ElementOp::fill_identity(void *dst, std::size_t nelem) const {
  const std::size_t total = nelem * static_cast<std::size_t>(k_);
  if (op_ == PETACOMM_XCHG_USER) {
    char *out = static_cast<char *>(dst);
    for (std::size_t i = 0; i < total; ++i)
      std::memcpy(out + i * comp_bytes_, user_->identity, comp_bytes_);
    return;
  }
#define PETACOMM_FILL(T)                                                         \
  switch (op_) {                                                                 \
    case PETACOMM_XCHG_SUM:                                                      \
      return fill_kernel<T, Sum>(dst, total);                                    \
    case PETACOMM_XCHG_PROD:                                                     \
      return fill_kernel<T, Prod>(dst, total);                                   \
    case PETACOMM_XCHG_MIN:                                                      \
      if constexpr (!std::is_class_v<T>) return fill_kernel<T, Min>(dst, total); \
      break;                                                                     \
    case PETACOMM_XCHG_MAX:                                                      \
      if constexpr (!std::is_class_v<T>) return fill_kernel<T, Max>(dst, total); \
      break;                                                                     \
    default:                                                                     \
      break;                                                                     \
  }                                                                              \
  break;
  switch (dtype_) {
    case PETACOMM_XCHG_FLOAT32:
      PETACOMM_FILL(float)
    case PETACOMM_XCHG_FLOAT64:
      PETACOMM_FILL(double)
    case PETACOMM_XCHG_INT32:
      PETACOMM_FILL(std::int32_t)
    case PETACOMM_XCHG_INT64:
      PETACOMM_FILL(std::int64_t)
    case PETACOMM_XCHG_COMPLEX64:
      PETACOMM_FILL(std::complex<float>)
    case PETACOMM_XCHG_COMPLEX128:
      PETACOMM_FILL(std::complex<double>)
  }
#undef PETACOMM_FILL
  fail_internal("no identity for ", dtype_name(dtype_), " ", op_name(op_));
}

void ElementOp::fold(void *acc, const void *src, std::size_t nelem) const {
  if (nelem == 0) return;
  if (op_ == PETACOMM_XCHG_USER) {
    user_->combine(acc, src, static_cast<std::int64_t>(nelem) * k_, user_->user_data);
    return;
  }
  fold_fn_(acc, nullptr, nelem, src, k_);
}

void ElementOp::fold_indexed(void *acc, const std::int32_t *idx, std::size_t count,
                             const void *src) const {
  if (count == 0) return;
  if (op_ == PETACOMM_XCHG_USER) {
    char *a = static_cast<char *>(acc);
    const char *s = static_cast<const char *>(src);
    for (std::size_t j = 0; j < count; ++j)
      user_->combine(a + static_cast<std::size_t>(idx[j]) * elem_bytes_, s + j * elem_bytes_, k_,
                     user_->user_data);
    return;
  }
  fold_fn_(acc, idx, count, src, k_);
}

void ElementOp::fold_gathered(void *acc, const std::int32_t *idx, std::size_t count,
                              const void *src) const {
  if (count == 0) return;
  if (op_ == PETACOMM_XCHG_USER) {
    char *a = static_cast<char *>(acc);
    const char *s = static_cast<const char *>(src);
    for (std::size_t j = 0; j < count; ++j)
      user_->combine(a + j * elem_bytes_, s + static_cast<std::size_t>(idx[j]) * elem_bytes_, k_,
                     user_->user_data);
    return;
  }
  gather_fn_(acc, idx, count, src, k_);
}

}  // namespace petacomm::xchg
