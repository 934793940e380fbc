// Factorisations: linalg.potrf (Cholesky), linalg.potri (inverse from a
// Cholesky factor), linalg.gelqf (LQ), linalg.syevd (symmetric
// eigen-decomposition), with MXNet's gradients.
#include <cmath>
#include <limits>

#include "ops/tensor/gemm.h"
#include "ops/tensor/lapack.h"
#include "ops/tensor/linalg_op-inl.h"

namespace tessera::op {
namespace {

// Throws when a matrix of the batch failed: "<op>: matrix 3 of the batch
// <what> (LAPACK <routine> info 2)".
void CheckFactored(const NodeAttrs& attrs, const MatrixFailure& f, const char* routine,
                   const std::string& what) {
  if (f.index < 0) return;
  TS_THROW << OpLabel(attrs) << ": matrix " << f.index << " of the batch " << what << " (LAPACK "
           << routine << " info " << f.info << ")";
}

// A stack of square matrices, (..., n, n).
MatrixLayout SquareStack(const NodeAttrs& attrs, const Shape& s, const char* arg) {
  const MatrixLayout l = StackOf(attrs, s, arg);
  TS_CHECK(l.rows == l.cols) << OpLabel(attrs) << ": " << arg << " has shape " << s
                             << "; its last two axes must be equal (square matrices)";
  return l;
}

bool SquareSameShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) AssignShape(attrs, in, 0, (*out)[0], "input A");
  if (!(*in)[0].known()) return false;
  SquareStack(attrs, (*in)[0], "A");
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return true;
}

// The backward of potrf (dL, L) and potri (dOut, A, out): every input has
// the shape of input 1, a stack of square matrices; so has the gradient.
bool SquareBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[1];
  if (!a.known()) return false;
  SquareStack(attrs, a, "A");
  for (size_t i = 0; i < in->size(); ++i)
    if (i != 1) AssignShape(attrs, in, i, a, "input");
  AssignShape(attrs, out, 0, a, "gradient of A");
  return true;
}

// The backward of gelqf (dQ, dL, Q, L) and syevd (dU, dL, U, L): each
// output's gradient has that output's shape, as the forward gives them for
// an input shaped as Q (or U).
template <bool (*kForwardShape)(const NodeAttrs&, std::vector<Shape>*, std::vector<Shape>*)>
bool TwoOutputBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                            std::vector<Shape>* out) {
  std::vector<Shape> fin{(*in)[2]}, fout{(*in)[2], (*in)[3]};
  if (!kForwardShape(attrs, &fin, &fout)) return false;
  AssignShape(attrs, in, 0, fout[0], "gradient of output 0");
  AssignShape(attrs, in, 1, fout[1], "gradient of output 1");
  AssignShape(attrs, in, 3, fout[1], "output 1");
  AssignShape(attrs, out, 0, fin[0], "gradient of A");
  return true;
}

// ---------------------------------------------------------------------------
// potrf

// dst (n x n) = the lower (or upper) triangle of src, zeros elsewhere; src
// may be dst.
template <typename T>
void CopyTriangle(const T* src, T* dst, int64_t n, bool lower) {
  for (int64_t r = 0; r < n; ++r) {
    const int64_t lo = lower ? 0 : r, hi = lower ? r + 1 : n;  // the kept columns
    if (src != dst) std::copy(src + r * n + lo, src + r * n + hi, dst + r * n + lo);
    std::fill(dst + r * n, dst + r * n + lo, T(0));
    std::fill(dst + r * n + hi, dst + (r + 1) * n, T(0));
  }
}

void PotrfForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool lower = ParamsOf<LinalgLowerParam>(attrs).lower;
  ForFloatAndDouble(attrs, out[0].dtype(), "linalg.potrf", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareStack(attrs, in[0].shape(), "A");
    const int64_t n = l.rows;
    ReqOutput<T> o(out[0], req[0]);
    const T* a = in[0].dptr<T>();
    const MatrixFailure f = ForEachMatrix<T>(ctx, l.count(), n * n * n / 3, 0, [&](int64_t i, T*) {
      T* c = o.data() + i * n * n;
      // The triangle potrf reads and writes, the other one zero: one pass.
      CopyTriangle(a + i * n * n, c, n, lower);
      return lapack::Potrf(lower, n, c, n);
    });
    CheckFactored(attrs, f, "potrf",
                  "is not positive definite (the input must be symmetric positive definite; "
                  "only its " +
                      std::string(lower ? "lower" : "upper") + " triangle is read)");
    o.Commit();
  });
}

// in dL, L; dA = 0.5 L^-T sym(L^T dL) L^-1, sym mirroring the lower triangle
// (upper: dA = 0.5 U^-1 sym(dU U^T) U^-T, mirroring the upper). Symmetric:
// the gradient for symmetric changes of A.
void PotrfBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool lower = ParamsOf<LinalgLowerParam>(attrs).lower;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.potrf backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareStack(attrs, in[1].shape(), "L");
    const int64_t n = l.rows;
    ReqOutput<T> o(out[0], req[0]);
    const T* dl = in[0].dptr<T>();
    const T* f = in[1].dptr<T>();
    ForEachMatrix<T>(ctx, l.count(), 2 * n * n * n, 0, [&](int64_t i, T*) {
      T* g = o.data() + i * n * n;
      const T* li = f + i * n * n;
      std::copy(dl + i * n * n, dl + (i + 1) * n * n, g);
      // L^T dL (upper: dU U^T), then mirrored from the same triangle.
      lapack::Trmm(/*right=*/!lower, lower, /*transpose=*/true, n, n, T(1), li, n, g, n);
      Symmetrize(g, n, n, /*lower_to_upper=*/lower);
      lapack::Trsm(false, lower, /*transpose=*/lower, n, n, T(1), li, n, g, n);
      lapack::Trsm(true, lower, /*transpose=*/!lower, n, n, T(0.5), li, n, g, n);
      return 0;
    });
    o.Commit();
  });
}

// ---------------------------------------------------------------------------
// potri

void PotriForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool lower = ParamsOf<LinalgLowerParam>(attrs).lower;
  ForFloatAndDouble(attrs, out[0].dtype(), "linalg.potri", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareStack(attrs, in[0].shape(), "A");
    const int64_t n = l.rows;
    ReqOutput<T> o(out[0], req[0]);
    const T* a = in[0].dptr<T>();
    const MatrixFailure f = ForEachMatrix<T>(ctx, l.count(), n * n * n, 0, [&](int64_t i, T*) {
      T* c = o.data() + i * n * n;
      if (c != a + i * n * n) std::copy(a + i * n * n, a + (i + 1) * n * n, c);
      const int info = lapack::Potri(lower, n, c, n);
      Symmetrize(c, n, n, /*lower_to_upper=*/lower);
      return info;
    });
    CheckFactored(attrs, f, "potri",
                  "has a zero on its diagonal (the input must be a Cholesky factor, as "
                  "linalg.potrf gives)");
    o.Commit();
  });
}

// in dOut, B (the factor), X = the forward output; S = dOut + dOut^T:
// lower: dB = -tril(X S B^-T); upper: dB = -triu(B^-T S X).
void PotriBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool lower = ParamsOf<LinalgLowerParam>(attrs).lower;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.potri backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareStack(attrs, in[1].shape(), "A");
    const int64_t n = l.rows, nn = n * n;
    ReqOutput<T> o(out[0], req[0]);
    const T* dx = in[0].dptr<T>();
    const T* b = in[1].dptr<T>();
    const T* x = in[2].dptr<T>();
    ForEachMatrix<T>(ctx, l.count(), 2 * n * nn, nn, [&](int64_t i, T* s) {
      T* g = o.data() + i * nn;
      AddTranspose(dx + i * nn, s, n);
      if (lower) {
        Gemm(false, false, n, n, n, T(1), x + i * nn, n, s, n, T(0), g, n, 1);
        lapack::Trsm(true, true, true, n, n, T(-1), b + i * nn, n, g, n);
        ZeroStrictUpper(g, n, n);
      } else {
        Gemm(false, false, n, n, n, T(1), s, n, x + i * nn, n, T(0), g, n, 1);
        lapack::Trsm(false, false, true, n, n, T(-1), b + i * nn, n, g, n);
        ZeroStrictLower(g, n, n);
      }
      return 0;
    });
    o.Commit();
  });
}

// ---------------------------------------------------------------------------
// gelqf

bool GelqfShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) AssignShape(attrs, in, 0, (*out)[0], "input A");
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  const MatrixLayout l = StackOf(attrs, a, "A");
  TS_CHECK(l.rows <= l.cols) << OpLabel(attrs) << ": A has shape " << a
                             << "; it needs no more rows than columns (m <= n)";
  Shape ls = a;
  ls[a.ndim() - 1] = l.rows;
  AssignShape(attrs, out, 0, a, "output Q");
  AssignShape(attrs, out, 1, ls, "output L");
  return true;
}

void GelqfForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp && req[1] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.gelqf", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[0].shape(), "A");
    const int64_t m = l.rows, n = l.cols;
    ReqOutput<T> q(out[0], req[0]), lo(out[1], req[1]);
    const T* a = in[0].dptr<T>();
    const MatrixFailure f = ForEachMatrix<T>(ctx, l.count(), 4 * m * m * n, 0, [&](int64_t i, T*) {
      T* qi = q.data() + i * m * n;
      if (qi != a + i * m * n) std::copy(a + i * m * n, a + (i + 1) * m * n, qi);
      return lapack::Gelqf(m, n, qi, n, lo.data() + i * m * m, m);
    });
    CheckFactored(attrs, f, "geqrf/orgqr", "could not be factored");
    q.Commit();
    lo.Commit();
  });
}

// in dQ, dL, Q, L; M = L^T dL - dQ Q^T mirrored from its lower triangle;
// dA = L^-T (dQ + M Q).
void GelqfBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.gelqf backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[2].shape(), "Q");
    const int64_t m = l.rows, n = l.cols, mn = m * n, mm = m * m;
    ReqOutput<T> o(out[0], req[0]);
    const T* dq = in[0].dptr<T>();
    const T* dl = in[1].dptr<T>();
    const T* q = in[2].dptr<T>();
    const T* lf = in[3].dptr<T>();
    ForEachMatrix<T>(ctx, l.count(), 4 * mm * n, mm, [&](int64_t i, T* mat) {
      const T* qi = q + i * mn;
      const T* li = lf + i * mm;
      Gemm(true, false, m, m, m, T(1), li, m, dl + i * mm, m, T(0), mat, m, 1);
      Gemm(false, true, m, m, n, T(-1), dq + i * mn, n, qi, n, T(1), mat, m, 1);
      Symmetrize(mat, m, m, /*lower_to_upper=*/true);
      T* g = o.data() + i * mn;
      std::copy(dq + i * mn, dq + (i + 1) * mn, g);
      Gemm(false, false, m, n, m, T(1), mat, m, qi, n, T(1), g, n, 1);
      lapack::Trsm(false, true, true, m, n, T(1), li, m, g, n);
      return 0;
    });
    o.Commit();
  });
}

// ---------------------------------------------------------------------------
// syevd

bool SyevdShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) AssignShape(attrs, in, 0, (*out)[0], "input A");
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  SquareStack(attrs, a, "A");
  AssignShape(attrs, out, 0, a, "output U");
  AssignShape(attrs, out, 1, Shape(a.begin(), a.end() - 1), "output L");
  return true;
}

// Each eigenvector (a row of u) turned so that its entry of largest
// magnitude, the first of equals, is positive: MXNet's rule, which makes the
// result independent of LAPACK's signs.
template <typename T>
void NormaliseSigns(T* u, int64_t n) {
  for (int64_t r = 0; r < n; ++r) {
    T* row = u + r * n;
    int64_t k = 0;
    for (int64_t j = 1; j < n; ++j)
      if (std::abs(row[j]) > std::abs(row[k])) k = j;
    if (row[k] < 0)
      for (int64_t j = 0; j < n; ++j) row[j] = -row[j];
  }
}

void SyevdForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp && req[1] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.syevd", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareStack(attrs, in[0].shape(), "A");
    const int64_t n = l.rows;
    ReqOutput<T> u(out[0], req[0]), w(out[1], req[1]);
    const T* a = in[0].dptr<T>();
    const MatrixFailure f = ForEachMatrix<T>(ctx, l.count(), 9 * n * n * n, 0, [&](int64_t i, T*) {
      T* ui = u.data() + i * n * n;
      if (ui != a + i * n * n) std::copy(a + i * n * n, a + (i + 1) * n * n, ui);
      const int info = lapack::Syevd(n, ui, n, w.data() + i * n);
      NormaliseSigns(ui, n);
      return info;
    });
    CheckFactored(attrs, f, "syevd", "did not converge");
    u.Commit();
    w.Commit();
  });
}

// in dU, dL, U, L; X = dU U^T; Y symmetric with Y_ii = dL_i and, for i > j,
// Y_ij = Y_ji = (X_ij - X_ji) / (2 max(L_i - L_j, eps)); dA = U^T Y U.
// Undefined for repeated eigenvalues (as MXNet's); eps keeps it finite.
void SyevdBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.syevd backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareStack(attrs, in[2].shape(), "U");
    const int64_t n = l.rows, nn = n * n;
    const T eps = std::is_same_v<T, float> ? T(1e-30) : T(1e-100);
    const T* du = in[0].dptr<T>();
    const T* dw = in[1].dptr<T>();
    const T* u = in[2].dptr<T>();
    const T* w = in[3].dptr<T>();
    T* da = out[0].dptr<T>();
    const T beta = req[0] == kAddTo ? T(1) : T(0);
    ForEachMatrix<T>(ctx, l.count(), 3 * n * nn, 2 * nn, [&](int64_t i, T* x) {
      T* y = x + nn;
      const T* ui = u + i * nn;
      const T* wi = w + i * n;
      Gemm(false, true, n, n, n, T(1), du + i * nn, n, ui, n, T(0), x, n, 1);
      for (int64_t r = 0; r < n; ++r) {
        y[r * n + r] = dw[i * n + r];
        for (int64_t c = 0; c < r; ++c)
          y[r * n + c] = y[c * n + r] =
              (x[r * n + c] - x[c * n + r]) / (2 * std::max(wi[r] - wi[c], eps));
      }
      Gemm(false, false, n, n, n, T(1), y, n, ui, n, T(0), x, n, 1);  // Y U
      Gemm(true, false, n, n, n, T(1), ui, n, x, n, beta, da + i * nn, n, 1);
      return 0;
    });
  });
}

std::vector<NodeEntry> TwoOutputGrad(const char* op, const NodePtr& n,
                                     const std::vector<NodeEntry>& og) {
  return MakeGradNode(op, n, {og[0], og[1], NodeEntry{n, 0, 0}, NodeEntry{n, 1, 0}});
}

// The first input's memory may hold the output.
std::vector<std::pair<int, int>> InplaceA(const NodeAttrs&) {
  return {{0, 0}};
}

// potrf and potri: one stack of square matrices in, one out, parameter
// `lower`; their backward ops take `grad_inputs` arrays.
Op& DefineCholesky(Op& op, Op& backward, const char* alias, const char* arg_doc, const char* doc,
                   FCompute forward, FGradient grad, FCompute grad_compute, uint32_t grad_inputs,
                   const char* grad_doc) {
  backward.describe(grad_doc)
      .set_num_inputs(grad_inputs)
      .set_num_outputs(1)
      .set_attr_parser(ParamParser<LinalgLowerParam>)
      .set_attr<TIsBackward>("TIsBackward", true)
      .set_attr<FInferShape>("FInferShape", SquareBackwardShape)
      .set_attr<FInferType>("FInferType", LinalgType)
      .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
      .set_attr<FCompute>(kFComputeCPU, grad_compute);
  return op.describe(doc)
      .set_num_inputs(1)
      .set_attr_parser(ParamParser<LinalgLowerParam>)
      .add_alias(alias)
      .add_argument("A", "NDArray", arg_doc)
      .add_arguments(LinalgLowerParam::Fields())
      .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
      .set_attr<FInferShape>("FInferShape", SquareSameShape)
      .set_attr<FInferType>("FInferType", LinalgType)
      .set_attr<FInplaceOption>("FInplaceOption", InplaceA)
      .set_attr<FCompute>(kFComputeCPU, forward)
      .set_attr<FGradient>("FGradient", grad);
}

[[maybe_unused]] const Op& kPotrf =
    DefineCholesky(Op::Register("_linalg_potrf"), Op::Register("_backward_linalg_potrf"),
                   "linalg_potrf", "Symmetric positive-definite matrices, (..., n, n).",
                   R"(Cholesky factorisation of every symmetric positive-definite matrix of
a batch (MXNet's linalg.potrf): L with A = L L^T, L lower triangular with a
positive diagonal (with lower=0, U upper with A = U^T U). Only that triangle
of A is read; the other triangle of the output is zero. A matrix that is not
positive definite is an error naming its place in the batch. The gradient is
symmetric (for symmetric changes of A), as MXNet's. float32 and float64.

Example: potrf([[4, 1], [1, 4.25]]) = [[2, 0], [0.5, 2]].)",
                   PotrfForward, ElemwiseGradUseOut{"_backward_linalg_potrf"}, PotrfBackward, 2,
                   "Gradient of linalg.potrf: inputs dL, L; output dA.");

[[maybe_unused]] const Op& kPotri =
    DefineCholesky(Op::Register("_linalg_potri"), Op::Register("_backward_linalg_potri"),
                   "linalg_potri", "Cholesky factors, (..., n, n), as linalg.potrf gives.",
                   R"(The inverse of A = L L^T from its Cholesky factor L (MXNet's
linalg.potri), for every matrix of a batch: out = L^-T L^-1 (with lower=0,
U^-1 U^-T for A = U^T U). Only the factor's triangle is read; the output is
symmetric. float32 and float64.

Example: potri([[2, 0], [0.5, 2]]) = [[0.265625, -0.0625], [-0.0625, 0.25]].)",
                   PotriForward, ElemwiseGradUseInOut{"_backward_linalg_potri"}, PotriBackward, 3,
                   "Gradient of linalg.potri: inputs dOut, A, the forward output; output dA.");

}  // namespace

TS_REGISTER_OP(_linalg_gelqf)
    .describe(R"(LQ factorisation of every matrix of a batch (MXNet's linalg.gelqf):
A (m x n, m <= n) = L Q, L (m x m) lower triangular, Q (m x n) with
orthonormal rows. Outputs Q, then L. Signs are LAPACK's (L's diagonal may be
negative), as MXNet's; the gradient needs A of full rank. float32 and
float64.

Example: gelqf([[1, 2, 3], [4, 5, 6]]): Q = [[-0.26726, -0.53452, -0.80178],
[0.87287, 0.21822, -0.43644]], L = [[-3.74166, 0], [-8.55236, 1.96396]].)")
    .set_num_inputs(1)
    .set_num_outputs(2)
    .add_alias("linalg_gelqf")
    .add_argument("A", "NDArray", "Matrices, (..., m, n) with m <= n.")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"Q", "L"};
                                })
    .set_attr<FInferShape>("FInferShape", GelqfShape)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, GelqfForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return TwoOutputGrad("_backward_linalg_gelqf", n, og);
    });

TS_REGISTER_OP(_backward_linalg_gelqf)
    .describe("Gradient of linalg.gelqf: inputs dQ, dL, Q, L; output dA.")
    .set_num_inputs(4)
    .set_num_outputs(1)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", TwoOutputBackwardShape<GelqfShape>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, GelqfBackward);

TS_REGISTER_OP(_linalg_syevd)
    .describe(R"(Eigen-decomposition of every symmetric matrix of a batch (MXNet's
linalg.syevd): A = U^T diag(L) U, the eigenvalues L ascending, the
eigenvectors the rows of U, each turned so that its entry of largest
magnitude is positive. Only A's lower triangle is read. Outputs U, then L.
The gradient is undefined for repeated eigenvalues. float32 and float64.

Example: syevd([[1, 2], [2, 4]]): U = [[0.89443, -0.44721], [0.44721,
0.89443]], L = [0, 5].)")
    .set_num_inputs(1)
    .set_num_outputs(2)
    .add_argument("A", "NDArray", "Symmetric matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"U", "L"};
                                })
    .set_attr<FInferShape>("FInferShape", SyevdShape)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, SyevdForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return TwoOutputGrad("_backward_linalg_syevd", n, og);
    });

TS_REGISTER_OP(_backward_linalg_syevd)
    .describe("Gradient of linalg.syevd: inputs dU, dL, U, L; output dA.")
    .set_num_inputs(4)
    .set_num_outputs(1)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", TwoOutputBackwardShape<SyevdShape>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, SyevdBackward);

}  // namespace tessera::op
