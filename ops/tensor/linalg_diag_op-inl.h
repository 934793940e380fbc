// The diagonal and triangle ops' kernels (linalg.extractdiag / makediag,
// extracttrian / maketrian, sumlogdiag), shared by the CPU
// (linalg_diag_op.cc) and GPU (linalg_diag_op.cu) registrations: a thread
// per packed element, which finds its place in the matrix itself, so no two
// threads write one element.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "ops/tensor/linalg_op-inl.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

// Which elements of an n x n matrix a packed vector holds, in its order.
// Diagonal k: element i is (i + max(-k, 0), i + max(k, 0)). The triangle of
// diagonal k: below and on it (k < 0, or k = 0 and lower), packed row by row;
// else above and on it, packed column by column (the lower packing of the
// transpose, MXNet's order).
struct PackedSelection {
  int64_t n = 0;
  int k = 0;
  bool trian = false, lower = true;

  TS_XINLINE int64_t side() const { return n - (k < 0 ? -k : k); }
  TS_XINLINE int64_t count() const { return trian ? side() * (side() + 1) / 2 : side(); }
  // Packed element i's offset in its matrix.
  TS_XINLINE int64_t At(int64_t i) const {
    const int64_t d = k < 0 ? -k : k;
    if (!trian) return (i + (k < 0 ? d : 0)) * n + i + (k > 0 ? d : 0);
    // Row p of the packing holds p + 1 elements, from p (p + 1) / 2 on.
    int64_t p = static_cast<int64_t>((sqrt(8.0 * double(i) + 1.0) - 1.0) / 2.0);
    while (p * (p + 1) / 2 > i) --p;
    while ((p + 1) * (p + 2) / 2 <= i) ++p;
    const int64_t q = i - p * (p + 1) / 2;
    return k < 0 || (k == 0 && lower) ? (p + d) * n + q : q * n + p + d;
  }
};

inline PackedSelection DiagOf(const NodeAttrs& attrs, int64_t n) {
  return {n, ParamsOf<LinalgDiagParam>(attrs).offset, false, true};
}
inline PackedSelection TrianOf(const NodeAttrs& attrs, int64_t n) {
  const auto& p = ParamsOf<LinalgTrianParam>(attrs);
  return {n, p.offset, true, p.lower};
}

// Packed element j (matrix j / count, element j % count) to or from its matrix.
template <bool kExtract>
struct PackedElement {
  template <typename T>
  TS_XINLINE static void Map(int64_t j, const T* x, T* y, PackedSelection sel, OpReqType req) {
    const int64_t len = sel.count();
    const int64_t at = (j / len) * sel.n * sel.n + sel.At(j % len);
    T& to = kExtract ? y[j] : y[at];
    const T v = kExtract ? x[at] : x[j];
    to = req == kAddTo ? T(to + v) : v;
  }
};

// Packed values <-> matrices, for every matrix of the stack.
template <bool kTrian, bool kExtract, typename xpu>
void DiagTrianCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg diag/trian", [&](auto zero) {
    using T = decltype(zero);
    const Shape& ms = kExtract ? in[0].shape() : out[0].shape();
    const int64_t n = ms[ms.ndim() - 1], count = ms.Size() / (n * n);
    const PackedSelection sel = kTrian ? TrianOf(attrs, n) : DiagOf(attrs, n);
    if (!kExtract && req[0] != kAddTo) ZeroBlob<xpu>(ctx.run_ctx, out[0]);
    Kernel<PackedElement<kExtract>, xpu>::Launch(ctx.run_ctx, count * sel.count(), in[0].dptr<T>(),
                                                 out[0].dptr<T>(), sel, req[0]);
  });
}

// Matrix b: the sum of the logarithms of its diagonal, in order.
struct SumLogDiagMatrix {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, const T* a, T* y, int64_t n, OpReqType req) {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s += log(a[b * n * n + i * n + i]);
    y[b] = req == kAddTo ? y[b] + s : s;
  }
};

// Diagonal element (b, i) of dA: dOut[b] / A_ii (the rest is zero).
struct SumLogDiagGrad {
  template <typename T>
  TS_XINLINE static void Map(int64_t j, const T* g, const T* a, T* da, int64_t n, OpReqType req) {
    const int64_t b = j / n, i = j % n, at = b * n * n + i * n + i;
    da[at] = (req == kAddTo ? da[at] : T(0)) + g[b] / a[at];
  }
};

template <typename xpu>
void SumLogDiagForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.sumlogdiag", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[0].shape(), "A");
    Kernel<SumLogDiagMatrix, xpu>::Launch(ctx.run_ctx, l.count(), in[0].dptr<T>(), out[0].dptr<T>(),
                                          l.rows, req[0]);
  });
}

// in dOut, A; out dA.
template <typename xpu>
void SumLogDiagBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.sumlogdiag backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[1].shape(), "A");
    if (req[0] != kAddTo) ZeroBlob<xpu>(ctx.run_ctx, out[0]);
    Kernel<SumLogDiagGrad, xpu>::Launch(ctx.run_ctx, l.count() * l.rows, in[0].dptr<T>(),
                                        in[1].dptr<T>(), out[0].dptr<T>(), l.rows, req[0]);
  });
}

}  // namespace tessera::op
