// Copies between the row-major layout of a float32 (n, c, h, w) array and
// oneDNN's channel-blocked one (MemLayout::kNChw16c, c a multiple of 16),
// for kernels that take blocked arrays (FLayoutClasses) but run a
// row-major loop for some shapes: the GEMM convolution, the pooling loops.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::op {

// The offset of element (i, ch, p) of a blocked array with `c` channels and
// `hw` positions per channel.
inline int64_t BlockedAt(int64_t i, int64_t ch, int64_t p, int64_t c, int64_t hw) {
  return ((i * (c / 16) + ch / 16) * hw + p) * 16 + ch % 16;
}

inline void Unblock(const float* src, float* dst, int64_t n, int64_t c, int64_t hw) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* from = src + BlockedAt(i, ch, 0, c, hw);
      float* to = dst + (i * c + ch) * hw;
      for (int64_t p = 0; p < hw; ++p) to[p] = from[p * 16];
    }
}

inline void Block(const float* src, float* dst, int64_t n, int64_t c, int64_t hw) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* from = src + (i * c + ch) * hw;
      float* to = dst + BlockedAt(i, ch, 0, c, hw);
      for (int64_t p = 0; p < hw; ++p) to[p * 16] = from[p];
    }
}

// Buffer `slot` (0-3) of this thread, n * c * hw floats, holding a
// row-major copy of the blocked `src` (or uninitialised when null). The
// buffers grow to the largest use and stay: these paths serve small arrays.
inline float* RowMajorCopy(int slot, const float* src, int64_t n, int64_t c, int64_t hw) {
  thread_local std::vector<float> bufs[4];
  auto& b = bufs[slot];
  b.resize(size_t(n * c * hw));
  if (src) Unblock(src, b.data(), n, c, hw);
  return b.data();
}

}  // namespace tessera::op
