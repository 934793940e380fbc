// Factorisations: linalg.potrf (Cholesky), linalg.potri (inverse from a
// Cholesky factor), linalg.gelqf (LQ), linalg.syevd (symmetric
// eigen-decomposition), with MXNet's gradients. The Cholesky ops' computation
// is linalg_cholesky_op-inl.h, shared with the GPU (linalg_cholesky_op.cu).
#include <cmath>
#include <limits>

#include "ops/tensor/gemm.h"
#include "ops/tensor/lapack.h"
#include "ops/tensor/linalg_factor_op-inl.h"
#include "ops/tensor/linalg_op-inl.h"

namespace tessera::op {

template <typename T>
void CholeskyCpu(const OpContext& ctx, const GpuCholesky& c, T* a, int* info) {
  ForEachMatrix<T>(
      ctx, c.batch, c.inverse ? c.n * c.n * c.n : c.n * c.n * c.n / 3, 0, [&](int64_t i, T*) {
        T* m = a + i * c.n * c.n;
        info[i] =
            c.inverse ? lapack::Potri(c.lower, c.n, m, c.n) : lapack::Potrf(c.lower, c.n, m, c.n);
        return 0;
      });
}
template void CholeskyCpu<float>(const OpContext&, const GpuCholesky&, float*, int*);
template void CholeskyCpu<double>(const OpContext&, const GpuCholesky&, double*, int*);

template <typename T>
void LqCpu(const OpContext& ctx, int64_t m, int64_t n, int64_t count, T* q, T* l, int* info) {
  ForEachMatrix<T>(ctx, count, 4 * m * m * n, 0, [&](int64_t i, T*) {
    info[i] = lapack::Gelqf(m, n, q + i * m * n, n, l + i * m * m, m);
    return 0;
  });
}
template void LqCpu<float>(const OpContext&, int64_t, int64_t, int64_t, float*, float*, int*);
template void LqCpu<double>(const OpContext&, int64_t, int64_t, int64_t, double*, double*, int*);

template <typename T>
void SymEigCpu(const OpContext& ctx, int64_t n, int64_t count, T* u, T* w, int* info) {
  ForEachMatrix<T>(ctx, count, 9 * n * n * n, 0, [&](int64_t i, T*) {
    info[i] = lapack::Syevd(n, u + i * n * n, n, w + i * n);
    return 0;
  });
}
template void SymEigCpu<float>(const OpContext&, int64_t, int64_t, float*, float*, int*);
template void SymEigCpu<double>(const OpContext&, int64_t, int64_t, double*, double*, int*);

namespace {

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
  LinalgBackward(backward, grad_doc, grad_inputs, 1, SquareBackwardShape, grad_compute)
      .set_attr_parser(ParamParser<LinalgLowerParam>)
      .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);
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
      .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
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
                   CholeskyForward<false, cpu>, ElemwiseGradUseOut{"_backward_linalg_potrf"},
                   PotrfBackward<cpu>, 2, "Gradient of linalg.potrf: inputs dL, L; output dA.");

[[maybe_unused]] const Op& kPotri = DefineCholesky(
    Op::Register("_linalg_potri"), Op::Register("_backward_linalg_potri"), "linalg_potri",
    "Cholesky factors, (..., n, n), as linalg.potrf gives.",
    R"(The inverse of A = L L^T from its Cholesky factor L (MXNet's
linalg.potri), for every matrix of a batch: out = L^-T L^-1 (with lower=0,
U^-1 U^-T for A = U^T U). Only the factor's triangle is read; the output is
symmetric. float32 and float64.

Example: potri([[2, 0], [0.5, 2]]) = [[0.265625, -0.0625], [-0.0625, 0.25]].)",
    CholeskyForward<true, cpu>, ElemwiseGradUseInOut{"_backward_linalg_potri"}, PotriBackward<cpu>,
    3, "Gradient of linalg.potri: inputs dOut, A, the forward output; output dA.");

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
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, GelqfForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return TwoOutputGrad("_backward_linalg_gelqf", n, og);
    });

[[maybe_unused]] static const Op& kGelqfBackward =
    LinalgBackward(Op::Register("_backward_linalg_gelqf"),
                   "Gradient of linalg.gelqf: inputs dQ, dL, Q, L; output dA.", 4, 1,
                   TwoOutputBackwardShape<GelqfShape>, GelqfBackward<cpu>)
        .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);

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
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, SyevdForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return TwoOutputGrad("_backward_linalg_syevd", n, og);
    });

[[maybe_unused]] static const Op& kSyevdBackward =
    LinalgBackward(Op::Register("_backward_linalg_syevd"),
                   "Gradient of linalg.syevd: inputs dU, dL, U, L; output dA.", 4, 1,
                   TwoOutputBackwardShape<SyevdShape>, SyevdBackward<cpu>)
        .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);

}  // namespace tessera::op
