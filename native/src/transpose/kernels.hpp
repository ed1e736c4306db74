// Local data movement kernels: the cache-blocked tile transpose that packs blocks, and the
// strided row copies that unpack them. Strides are in bytes; elements are elem bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace petacomm::transpose {

// dst[j * dst_stride + i * elem] = src[i * src_stride + j * elem] for i < rows, j < cols.
void transpose_tile(const char *src, std::size_t src_stride, char *dst, std::size_t dst_stride,
                    std::int64_t rows, std::int64_t cols, std::size_t elem);

// rows rows of `bytes` contiguous bytes each: dst + r * dst_stride <- src + r * src_stride.
void copy_rows(const char *src, std::size_t src_stride, char *dst, std::size_t dst_stride,
               std::int64_t rows, std::size_t bytes);

// rows rows of `bytes` zero bytes each, dst_stride apart.
void zero_rows(char *dst, std::size_t dst_stride, std::int64_t rows, std::size_t bytes);

}  // namespace petacomm::transpose
