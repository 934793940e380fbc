// A stable sort of indices for one thread's work inside a kernel (device
// code too): bottom-up merges through a scratch array of the same length.
// It orders as std::stable_sort with the same comparator, so an op whose
// CPU and GPU kernels sort this way (the detection ops' per-image passes)
// keep the CPU's order for ties.
#pragma once

#include <cstdint>

#include "engine/base/host_device.h"

namespace tessera::op {

// Sorts idx[0, n) so that no element is `before` one left of it, ties in
// their first order. `before(a, b)`: index a goes strictly before index b.
// tmp: scratch for n indices.
template <typename Before>
TS_XINLINE void StableSortIndices(int64_t* idx, int64_t* tmp, int64_t n, const Before& before) {
  int64_t* src = idx;
  int64_t* dst = tmp;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = lo + width < n ? lo + width : n;
      const int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t i = lo, j = mid, k = lo;
      // The right run's element goes first only when strictly before: stable.
      while (i < mid && j < hi) dst[k++] = before(src[j], src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    int64_t* t = src;
    src = dst;
    dst = t;
  }
  if (src != idx)
    for (int64_t k = 0; k < n; ++k) idx[k] = src[k];
}

}  // namespace tessera::op
