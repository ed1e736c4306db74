#include "kernels.hpp"

#include <algorithm>
#include <cstring>

namespace petacomm::transpose {
namespace {

// Tiles of about 256 bytes a side stay in L1 while the strided reads of one tile column
// reuse the cache lines the previous columns brought in.
template <std::size_t E>
void transpose_fixed(const char *src, std::size_t src_stride, char *dst, std::size_t dst_stride,
                     std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t kTile = E >= 256 ? 1 : static_cast<std::int64_t>(256 / E);
  for (std::int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const std::int64_t i1 = std::min(rows, i0 + kTile);
    for (std::int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const std::int64_t j1 = std::min(cols, j0 + kTile);
      for (std::int64_t j = j0; j < j1; ++j) {
        char *d = dst + j * dst_stride + i0 * E;
        const char *s = src + i0 * src_stride + j * E;
        for (std::int64_t i = i0; i < i1; ++i, d += E, s += src_stride) std::memcpy(d, s, E);
      }
    }
  }
}

void transpose_any(const char *src, std::size_t src_stride, char *dst, std::size_t dst_stride,
                   std::int64_t rows, std::int64_t cols, std::size_t elem) {
  const std::int64_t tile = std::max<std::int64_t>(1, 256 / static_cast<std::int64_t>(elem));
  for (std::int64_t i0 = 0; i0 < rows; i0 += tile) {
    const std::int64_t i1 = std::min(rows, i0 + tile);
    for (std::int64_t j0 = 0; j0 < cols; j0 += tile) {
      const std::int64_t j1 = std::min(cols, j0 + tile);
      for (std::int64_t j = j0; j < j1; ++j) {
        char *d = dst + j * dst_stride + i0 * elem;
        const char *s = src + i0 * src_stride + j * elem;
        for (std::int64_t i = i0; i < i1; ++i, d += elem, s += src_stride) std::memcpy(d, s, elem);
      }
    }
  }
}

}  // namespace

void transpose_tile(const char *src, std::size_t src_stride, char *dst, std::size_t dst_stride,
                    std::int64_t rows, std::int64_t cols, std::size_t elem) {
  if (rows <= 0 || cols <= 0) return;
  if (rows == 1 || cols == 1) {  // a row becomes a column or vice versa: strided copies
    if (rows == 1) {
      for (std::int64_t j = 0; j < cols; ++j)
        std::memcpy(dst + j * dst_stride, src + j * elem, elem);
    } else {
      for (std::int64_t i = 0; i < rows; ++i)
        std::memcpy(dst + i * elem, src + i * src_stride, elem);
    }
    return;
  }
  switch (elem) {
    case 4:
      return transpose_fixed<4>(src, src_stride, dst, dst_stride, rows, cols);
    case 8:
      return transpose_fixed<8>(src, src_stride, dst, dst_stride, rows, cols);
    case 16:
      return transpose_fixed<16>(src, src_stride, dst, dst_stride, rows, cols);
    case 32:
      return transpose_fixed<32>(src, src_stride, dst, dst_stride, rows, cols);
    default:
      return transpose_any(src, src_stride, dst, dst_stride, rows, cols, elem);
  }
}

void copy_rows(const char *src, std::size_t src_stride, char *dst, std::size_t dst_stride,
               std::int64_t rows, std::size_t bytes) {
  if (bytes == 0) return;
  if (src_stride == bytes && dst_stride == bytes) {
    std::memcpy(dst, src, bytes * static_cast<std::size_t>(rows));
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_stride, src + r * src_stride, bytes);
}

void zero_rows(char *dst, std::size_t dst_stride, std::int64_t rows, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_stride == bytes) {
    std::memset(dst, 0, bytes * static_cast<std::size_t>(rows));
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) std::memset(dst + r * dst_stride, 0, bytes);
}

}  // namespace petacomm::transpose
