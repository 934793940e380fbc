// Strided copies and sum-reductions: the kernels behind transpose, slice,
// broadcast_to, tile, repeat, flip, concat, split and their gradients.
//
// A StridedLayout describes how a dense array (the "contiguous side") maps
// onto another one (the "strided side"): for the contiguous element i with
// coordinates c over `dims`, the strided element is offset + sum c_d *
// strides_d. Strides may be 0 (broadcast) or negative (flip). Gather reads a
// strided source into a dense output; Scatter writes a dense source into a
// strided output. One layout type serves every op, so each op only says how
// its shapes relate.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"
#include "ops/tensor/fill_kernel.h"

namespace tessera::op {

struct StridedLayout {
  // tile views every dimension as two (repeat, dim), so twice Shape's limit.
  static constexpr int kMax = 2 * Shape::kMaxNdim;
  int ndim = 0;
  int64_t offset = 0;
  int64_t dims[kMax] = {};
  int64_t strides[kMax] = {};

  void Push(int64_t dim, int64_t stride) {
    TS_CHECK(ndim < kMax) << "strided layout: more than " << kMax << " dimensions";
    dims[ndim] = dim;
    strides[ndim] = stride;
    ++ndim;
  }
  TS_XINLINE int64_t Size() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= dims[d];
    return n;
  }
  // The strided-side element of contiguous element i.
  TS_XINLINE int64_t Map(int64_t i) const {
    int64_t off = offset;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / dims[d];
      off += (i - q * dims[d]) * strides[d];
      i = q;
    }
    return off;
  }
  // Drops size-1 dimensions and merges neighbours that step through memory
  // as one, so the per-element index arithmetic is as short as it can be.
  void Coalesce() {
    int n = 0;
    for (int d = 0; d < ndim; ++d) {
      if (dims[d] == 1) continue;
      if (n > 0 && strides[n - 1] == strides[d] * dims[d]) {
        dims[n - 1] *= dims[d];
        strides[n - 1] = strides[d];
        continue;
      }
      dims[n] = dims[d];
      strides[n] = strides[d];
      ++n;
    }
    ndim = n;
  }
};

// Row-major element strides of `s`.
inline std::vector<int64_t> ContiguousStrides(const Shape& s) {
  std::vector<int64_t> st(static_cast<size_t>(s.ndim()));
  int64_t acc = 1;
  for (int d = s.ndim() - 1; d >= 0; --d) {
    st[static_cast<size_t>(d)] = acc;
    acc *= s[d];
  }
  return st;
}

// The dense layout of `s` itself (used as a starting point by ops).
inline StridedLayout DenseLayout(const Shape& s) {
  StridedLayout l;
  const std::vector<int64_t> st = ContiguousStrides(s);
  for (int d = 0; d < s.ndim(); ++d) l.Push(s[d], st[static_cast<size_t>(d)]);
  return l;
}

// One element of a strided copy: the strided side is `in` (a gather) or,
// with kScatter, `out`; the other side is dense.
template <int req, bool kScatter>
struct strided_copy_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, StridedLayout l) {
    if constexpr (kScatter) {
      AssignReq<req>(out[l.Map(i)], in[i]);
    } else {
      AssignReq<req>(out[i], in[l.Map(i)]);
    }
  }
};

// out[o] = sum over r of in[keep.Map(o) + red.Map(r)] (red.offset is 0).
template <int req>
struct reduce_sum_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, T* out, const T* in, StridedLayout keep, StridedLayout red,
                             int64_t n_red) {
    const T* base = in + keep.Map(o);
    AccType<T> acc = AccType<T>(0);
    if (red.ndim == 1) {
      const int64_t s = red.strides[0];
      for (int64_t r = 0; r < n_red; ++r) acc += static_cast<AccType<T>>(base[r * s]);
    } else {
      for (int64_t r = 0; r < n_red; ++r) acc += static_cast<AccType<T>>(base[red.Map(r)]);
    }
    AssignReq<req>(out[o], acc);
  }
};

namespace detail {

// Dense out, strided in, where the output's fastest dimension walks the input
// with a stride and another dimension `k` walks it with stride 1: a batch of
// 2-D transposes, done in square tiles so both sides stay in cache.
template <int req, typename T>
void BlockedTransposeCPU(const RunContext& rctx, T* out, const T* in, const StridedLayout& l,
                         int k) {
  constexpr int64_t kTile = 32;
  const int last = l.ndim - 1;
  int64_t out_strides[StridedLayout::kMax];
  int64_t acc = 1;
  for (int d = last; d >= 0; --d) {
    out_strides[d] = acc;
    acc *= l.dims[d];
  }
  const int64_t n = acc, K = l.dims[k], N = l.dims[last], s = l.strides[last];
  const int64_t outer = n / (K * N), tiles_k = (K + kTile - 1) / kTile;
  const int64_t tasks = outer * tiles_k;
  [[maybe_unused]] const int threads = CpuThreads(rctx, n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t rem = t / tiles_k;
    const int64_t kb = (t % tiles_k) * kTile, ke = std::min(K, kb + kTile);
    int64_t in_base = l.offset, out_base = 0;
    for (int d = last - 1; d >= 0; --d) {
      if (d == k) continue;
      const int64_t c = rem % l.dims[d];
      rem /= l.dims[d];
      in_base += c * l.strides[d];
      out_base += c * out_strides[d];
    }
    for (int64_t nb = 0; nb < N; nb += kTile) {
      const int64_t ne = std::min(N, nb + kTile);
      for (int64_t kk = kb; kk < ke; ++kk) {
        T* dst = out + out_base + kk * out_strides[k];
        const T* src = in + in_base + kk;
        for (int64_t j = nb; j < ne; ++j) AssignReq<req>(dst[j], src[j * s]);
      }
    }
  }
}

// Gather (kScatter false): out dense, in viewed through l; scatter: the
// other way round. Row r of the dense side pairs with the elements of the
// strided side from l.Map(r * inner), s apart; a gather whose rows walk the
// input with a stride while another dimension walks it contiguously is a
// batch of transposes instead.
template <int req, bool kScatter, typename T>
void StridedCopyCPU(const RunContext& rctx, T* out, const T* in, const StridedLayout& l) {
  if (l.ndim == 0) {
    if constexpr (kScatter)
      AssignReq<req>(out[l.offset], in[0]);
    else
      AssignReq<req>(out[0], in[l.offset]);
    return;
  }
  const int last = l.ndim - 1;
  const int64_t inner = l.dims[last], s = l.strides[last];
  if constexpr (!kScatter) {
    if (s != 1 && s != 0 && inner >= 16) {
      for (int k = last - 1; k >= 0; --k) {
        if (l.strides[k] == 1 && l.dims[k] >= 16) {
          BlockedTransposeCPU<req>(rctx, out, in, l, k);
          return;
        }
      }
    }
  }
  const int64_t n = l.Size(), rows = n / inner;
  [[maybe_unused]] const int threads = CpuThreads(rctx, n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t strided = l.Map(r * inner), dense = r * inner;
    T* dst = out + (kScatter ? strided : dense);
    const T* src = in + (kScatter ? dense : strided);
    if (s == 1) {
      for (int64_t j = 0; j < inner; ++j) AssignReq<req>(dst[j], src[j]);
    } else if constexpr (kScatter) {
      for (int64_t j = 0; j < inner; ++j) AssignReq<req>(dst[j * s], src[j]);
    } else {
      for (int64_t j = 0; j < inner; ++j) AssignReq<req>(dst[j], src[j * s]);
    }
  }
}

}  // namespace detail

// Gather: out (dense, l.Size() elements) (req)= in viewed through l.
// kScatter: out viewed through l (req)= in (dense, l.Size() elements).
template <typename xpu, int req, bool kScatter, typename T>
void StridedCopy(const RunContext& rctx, T* out, const T* in, StridedLayout l) {
  l.Coalesce();
  if constexpr (std::is_same_v<xpu, cpu>) {
    detail::StridedCopyCPU<req, kScatter>(rctx, out, in, l);
  } else {
    Kernel<strided_copy_kernel<req, kScatter>, xpu>::Launch(rctx, l.Size(), out, in, l);
  }
}

template <typename xpu, int req, typename T>
void StridedGather(const RunContext& rctx, T* out, const T* in, StridedLayout l) {
  StridedCopy<xpu, req, false>(rctx, out, in, l);
}

template <typename xpu, int req, typename T>
void StridedScatter(const RunContext& rctx, T* out, const T* in, StridedLayout l) {
  StridedCopy<xpu, req, true>(rctx, out, in, l);
}

// Runtime-typed, runtime-req forms over blobs (every dtype).
template <typename xpu, bool kScatter>
void StridedCopyBlob(const RunContext& rctx, OpReqType req, const TBlob& out, const TBlob& in,
                     const StridedLayout& l) {
  SwitchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req, [&](auto r) {
      StridedCopy<xpu, r.value, kScatter>(rctx, out.dptr<T>(), in.dptr<T>(), l);
    });
  });
}
template <typename xpu>
constexpr auto GatherBlob = StridedCopyBlob<xpu, false>;
template <typename xpu>
constexpr auto ScatterBlob = StridedCopyBlob<xpu, true>;

// Sums `in`, whose dense layout is `dims`, over the dimensions marked in
// `reduced`, into `out` (the kept dimensions, dense, in order).
template <typename xpu>
void ReduceSumBlob(const RunContext& rctx, OpReqType req, const TBlob& out, const TBlob& in,
                   const std::vector<int64_t>& dims, const std::vector<bool>& reduced,
                   const char* op_name) {
  StridedLayout keep, red;
  int64_t stride = 1;
  std::vector<int64_t> strides(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= dims[d];
  }
  for (size_t d = 0; d < dims.size(); ++d) (reduced[d] ? red : keep).Push(dims[d], strides[d]);
  keep.Coalesce();
  red.Coalesce();
  const int64_t n_red = red.Size();
  SwitchNumericDType(
      out.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req, [&](auto r) {
          Kernel<reduce_sum_kernel<r.value>, xpu>::Launch(rctx, out.Size(), out.dptr<T>(),
                                                          in.dptr<T>(), keep, red, n_red);
        });
      },
      op_name);
}

template <int req>
struct dense_copy_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in) {
    AssignReq<req>(out[i], in[i]);
  }
};

// out (req)= in, same number of elements (reshape-like ops). In place is a no-op.
template <typename xpu>
void CopyBlob(const RunContext& rctx, OpReqType req, const TBlob& out, const TBlob& in) {
  if (req == kNullOp || (req == kWriteInplace && out.dptr_ == in.dptr_)) return;
  SwitchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req, [&](auto r) {
      Kernel<dense_copy_kernel<r.value>, xpu>::Launch(rctx, out.Size(), out.dptr<T>(),
                                                      in.dptr<T>());
    });
  });
}

// Sets every element of `out` to zero (the first step of a scatter gradient).
template <typename xpu>
void ZeroBlob(const RunContext& rctx, const TBlob& out) {
  SwitchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Kernel<fill_value_kernel<kWriteTo>, xpu>::Launch(rctx, out.Size(), out.dptr<T>(), T(0));
  });
}

}  // namespace tessera::op
