// The GPU's sort for sort, argsort and topk, built of element kernels so
// that the CPU launcher runs the same code (tests/cpp/sort_bitonic_test.cc):
// each row is copied into temp space as (key, position) pairs padded to a
// power of two p2, sorted by a bitonic network (log2(p2) (log2(p2) + 1) / 2
// passes, one launch each, every pass a compare-exchange of element pairs
// across all rows), then its first k pairs are written out. Ties are broken
// by position, so the result is the stable order the CPU's std::stable_sort
// gives; NaN sorts as the largest value; padding sorts after everything.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/resource/resource.h"
#include "ops/tensor/sort_op-inl.h"

namespace tessera::op {

// The rows in temp space: keys and positions, p2 slots a row (-1: padding).
template <typename V>
struct BitonicRows {
  V* keys;
  int64_t* pos;
  int64_t p2;
  bool ascend;

  // Whether slot a must come before slot b.
  TS_XINLINE bool Before(int64_t a, int64_t b) const {
    if (pos[a] < 0) return false;
    if (pos[b] < 0) return true;
    const V ka = keys[a], kb = keys[b];
    const bool first = ascend ? LessNanLast(ka, kb) : LessNanLast(kb, ka);
    if (first) return true;
    const bool second = ascend ? LessNanLast(kb, ka) : LessNanLast(ka, kb);
    return !second && pos[a] < pos[b];
  }
};

struct BitonicLoad {
  template <typename T, typename V>
  TS_XINLINE static void Map(int64_t i, SortRows g, BitonicRows<V> t, const T* data) {
    const int64_t row = i / t.p2, e = i % t.p2;
    if (e < g.n) {
      t.keys[i] = static_cast<V>(data[g.At(row, e)]);
      t.pos[i] = e;
    } else {
      t.pos[i] = -1;
    }
  }
};

// One pass: the blocks of `size` slots alternate direction; slots `stride`
// apart are compared and exchanged.
struct BitonicPass {
  template <typename V>
  TS_XINLINE static void Map(int64_t i, BitonicRows<V> t, int64_t size, int64_t stride) {
    const int64_t e = i % t.p2, partner = e ^ stride;
    if (partner <= e) return;
    const int64_t a = i, b = i - e + partner;
    const bool up = (e & size) == 0;
    if (up ? t.Before(b, a) : t.Before(a, b)) {
      const V k = t.keys[a];
      t.keys[a] = t.keys[b];
      t.keys[b] = k;
      const int64_t p = t.pos[a];
      t.pos[a] = t.pos[b];
      t.pos[b] = p;
    }
  }
};

struct BitonicEmit {
  template <typename T, typename I, typename V>
  TS_XINLINE static void Map(int64_t i, SortRows g, BitonicRows<V> t, SortOutputs<T, I> out,
                             const T* data) {
    const int64_t row = i / g.k, r = i % g.k;
    out.Emit(g, data, row, r, t.pos[row * t.p2 + r]);
  }
};

inline int64_t PowerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Sorts the rows of `data` into `out` on xpu; temp space holds the pairs.
// A mask output (out0) is zeroed first (unless added to), then marked.
template <typename xpu, typename T, typename I>
void BitonicSortRows(const OpContext& ctx, const SortRows& g, const SortSpec& s, const T* data,
                     const SortOutputs<T, I>& out, const TBlob& out0) {
  using V = AccType<T>;
  if (out.mask && out.value_req != kAddTo && out.value_req != kNullOp)
    ZeroBlob<xpu>(ctx.run_ctx, out0);
  if (g.rows() == 0 || g.n == 0 || g.k == 0) return;
  const int64_t p2 = PowerOfTwoAtLeast(g.n), slots = g.rows() * p2;
  const size_t key_bytes = (static_cast<size_t>(slots) * sizeof(V) + 63) / 64 * 64;
  char* space = static_cast<char*>(
      ctx.requested.at(0).get_space(key_bytes + static_cast<size_t>(slots) * sizeof(int64_t)));
  const BitonicRows<V> t{reinterpret_cast<V*>(space), reinterpret_cast<int64_t*>(space + key_bytes),
                         p2, s.ascend};
  Kernel<BitonicLoad, xpu>::Launch(ctx.run_ctx, slots, g, t, data);
  for (int64_t size = 2; size <= p2; size <<= 1)
    for (int64_t stride = size / 2; stride > 0; stride >>= 1)
      Kernel<BitonicPass, xpu>::Launch(ctx.run_ctx, slots, t, size, stride);
  Kernel<BitonicEmit, xpu>::Launch(ctx.run_ctx, g.rows() * g.k, g, t, out, data);
}

}  // namespace tessera::op
