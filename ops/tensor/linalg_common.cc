// What the linalg operators share: matrix layouts, the batched product,
// outputs under a request, triangles, type inference, the backward ops'
// registration.
#include <algorithm>
#include <utility>

#include "ops/tensor/gemm.h"
#include "ops/tensor/linalg_op-inl.h"

namespace tessera::op {

MatrixLayout LayoutOf(const Shape& s, int axis) {
  const int nd = s.ndim();
  TS_DCHECK(nd >= 2 && axis >= 0 && axis < nd - 1);
  MatrixLayout l;
  l.outer = s.ProdRange(0, axis);
  l.rows = s[axis];
  l.inner = s.ProdRange(axis + 1, nd - 1);
  l.cols = s[nd - 1];
  return l;
}

MatrixLayout StackOf(const NodeAttrs& attrs, const Shape& s, const char* arg) {
  TS_CHECK(s.ndim() >= 2) << OpLabel(attrs) << ": " << arg << " has shape " << s
                          << "; it needs 2 or more axes (a stack of matrices on the last two)";
  return LayoutOf(s, s.ndim() - 2);
}

Shape PerMatrixShape(const Shape& s) {
  return s.ndim() == 2 ? Shape{1} : Shape(s.begin(), s.end() - 2);
}

Shape ProductShape(const NodeAttrs& attrs, const Shape& a, const Shape& b, bool ta, bool tb,
                   int axis) {
  const int nd = a.ndim();
  TS_CHECK(nd >= 2 && b.ndim() == nd) << OpLabel(attrs) << ": A " << a << " and B " << b
                                      << " must have the same number of axes, 2 or more";
  const int ax = NormalizeAxis(axis, nd, OpLabel(attrs).c_str());
  TS_CHECK(ax < nd - 1) << OpLabel(attrs) << ": axis " << axis
                        << " is the columns' axis; the rows need another one (shape " << a << ")";
  for (int d = 0; d < nd - 1; ++d)
    TS_CHECK(d == ax || a[d] == b[d])
        << OpLabel(attrs) << ": A " << a << " and B " << b << " differ on batch axis " << d;
  const int64_t ka = ta ? a[ax] : a[nd - 1], kb = tb ? b[nd - 1] : b[ax];
  TS_CHECK(ka == kb) << OpLabel(attrs) << ": op(A) from " << a << " has " << ka
                     << " columns but op(B) from " << b << " has " << kb << " rows"
                     << (ta || tb ? " (after the transposes asked for)" : "");
  Shape out = a;
  out[ax] = ta ? a[nd - 1] : a[ax];
  out[nd - 1] = tb ? b[ax] : b[nd - 1];
  return out;
}

template <typename T>
void BatchedProduct(bool ta, bool tb, T alpha, const T* a, const MatrixLayout& la, const T* b,
                    const MatrixLayout& lb, T beta, T* c, const MatrixLayout& lc, int threads) {
  const int64_t m = lc.rows, n = lc.cols, k = ta ? la.rows : la.cols;
  if (lc.inner == 1 && la.inner == 1 && lb.inner == 1) {
    GemmBatched(ta, tb, m, n, k, alpha, a, la.ld(), b, lb.ld(), beta, c, lc.ld(), lc.count(),
                la.rows * la.cols, lb.rows * lb.cols, lc.rows * lc.cols, threads);
    return;
  }
  // Rows on another axis: the matrices interleave (rows ld apart, matrices
  // cols apart), which GemmBatched does not take; one product at a time.
  for (int64_t i = 0; i < lc.count(); ++i)
    Gemm(ta, tb, m, n, k, alpha, a + la.Offset(i), la.ld(), b + lb.Offset(i), lb.ld(), beta,
         c + lc.Offset(i), lc.ld(), threads);
}

template <typename T>
ReqOutput<T>::ReqOutput(const TBlob& out, OpReqType req)
    : out_(out.dptr<T>()),
      size_(out.Size()),
      req_(req),
      direct_(req == kWriteTo || req == kWriteInplace) {
  if (!direct_) scratch_.resize(size_t(size_));
}

template <typename T>
void ReqOutput<T>::Commit() {
  if (req_ != kAddTo) return;
  for (int64_t i = 0; i < size_; ++i) out_[i] += scratch_[size_t(i)];
}

template <typename T>
void ZeroStrictUpper(T* a, int64_t n, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) std::fill(a + r * ld + r + 1, a + r * ld + n, T(0));
}

template <typename T>
void ZeroStrictLower(T* a, int64_t n, int64_t ld) {
  for (int64_t r = 1; r < n; ++r) std::fill(a + r * ld, a + r * ld + r, T(0));
}

template <typename T>
void Symmetrize(T* a, int64_t n, int64_t ld, bool lower_to_upper) {
  for (int64_t r = 1; r < n; ++r)
    for (int64_t c = 0; c < r; ++c) {
      if (lower_to_upper)
        a[c * ld + r] = a[r * ld + c];
      else
        a[r * ld + c] = a[c * ld + r];
    }
}

template <typename T>
void AddTranspose(const T* a, T* b, int64_t n) {
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) b[r * n + c] = a[r * n + c] + a[c * n + r];
}

bool LinalgType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  for (const auto* list : {in, out})
    for (DType t : *list)
      TS_CHECK(t == DType::kUnknown || t == DType::kFloat32 || t == DType::kFloat64)
          << OpLabel(attrs) << ": dtype " << DTypeName(t)
          << " is not supported (float32, float64, as LAPACK)";
  return SameTypeAll(attrs, in, out);
}

std::vector<ResourceRequest> LinalgTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

Op& LinalgBackward(Op& op, std::string doc, uint32_t num_inputs, uint32_t num_outputs,
                   FInferShape shape, FCompute compute, FInferType type) {
  return op.describe(std::move(doc))
      .set_num_inputs(num_inputs)
      .set_num_outputs(num_outputs)
      .set_attr<TIsBackward>("TIsBackward", true)
      .set_attr<FInferShape>("FInferShape", std::move(shape))
      .set_attr<FInferType>("FInferType", std::move(type))
      .set_attr<FCompute>(kFComputeCPU, std::move(compute));
}

#define TS_LINALG_INSTANTIATE(T)                                                          \
  template void BatchedProduct<T>(bool, bool, T, const T*, const MatrixLayout&, const T*, \
                                  const MatrixLayout&, T, T*, const MatrixLayout&, int);  \
  template class ReqOutput<T>;                                                            \
  template void ZeroStrictUpper<T>(T*, int64_t, int64_t);                                 \
  template void ZeroStrictLower<T>(T*, int64_t, int64_t);                                 \
  template void Symmetrize<T>(T*, int64_t, int64_t, bool);                                \
  template void AddTranspose<T>(const T*, T*, int64_t);
TS_LINALG_INSTANTIATE(float)
TS_LINALG_INSTANTIATE(double)
#undef TS_LINALG_INSTANTIATE

}  // namespace tessera::op
