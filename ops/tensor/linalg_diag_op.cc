// Diagonals and triangles of matrix stacks: linalg.sumlogdiag,
// linalg.extractdiag / makediag, linalg.extracttrian / maketrian. Each
// extract op's gradient is its make op and the other way round (adjoints).
// Shapes and registration; the kernels are linalg_diag_op-inl.h, shared with
// the GPU (linalg_diag_op.cu).
#include <cmath>

#include "ops/tensor/linalg_diag_op-inl.h"
#include "ops/tensor/unary_backward_shape.h"

namespace tessera::op {
namespace {

template <typename P>
int OffsetOf(const NodeAttrs& attrs) {
  return ParamsOf<P>(attrs).offset;
}

// The matrix size n for a stack of square matrices; offset must leave a
// diagonal.
int64_t SquareSize(const NodeAttrs& attrs, const Shape& a, int offset) {
  const MatrixLayout l = StackOf(attrs, a, "A");
  TS_CHECK(l.rows == l.cols) << OpLabel(attrs) << ": A has shape " << a
                             << "; its last two axes must be equal (square matrices)";
  TS_CHECK(std::abs(int64_t(offset)) < l.rows)
      << OpLabel(attrs) << ": offset " << offset << " is outside the " << l.rows << "x" << l.cols
      << " matrices of " << a;
  return l.rows;
}

// The size of the matrices a make op builds from `len` values a matrix.
int64_t MadeSize(const NodeAttrs& attrs, bool trian, int64_t len, int offset) {
  if (!trian) return len + std::abs(int64_t(offset));
  const auto m = static_cast<int64_t>(std::floor(0.5 + (std::sqrt(8.0 * len + 1) - 1) / 2));
  TS_CHECK(m * (m + 1) / 2 == len) << OpLabel(attrs) << ": the last axis holds " << len
                                   << " values, which is no triangle's count (m (m + 1) / 2)";
  return m + std::abs(int64_t(offset));
}

template <bool kTrian>
int OffsetParam(const NodeAttrs& attrs) {
  return kTrian ? OffsetOf<LinalgTrianParam>(attrs) : OffsetOf<LinalgDiagParam>(attrs);
}

template <bool kTrian>
bool ExtractShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  const int64_t n = SquareSize(attrs, a, OffsetParam<kTrian>(attrs));
  Shape o(a.begin(), a.end() - 1);
  o[o.ndim() - 1] = kTrian ? TrianOf(attrs, n).count() : DiagOf(attrs, n).count();
  AssignShape(attrs, out, 0, o, "output");
  return true;
}

template <bool kTrian>
bool MakeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  const int64_t n = MadeSize(attrs, kTrian, a[a.ndim() - 1], OffsetParam<kTrian>(attrs));
  std::vector<int64_t> dims(a.begin(), a.end() - 1);
  dims.push_back(n);
  dims.push_back(n);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

// One of the four ops; its gradient is `other` with the same parameters.
template <bool kTrian, bool kExtract, typename P>
Op& DefineDiagTrian(Op& op, const char* alias, const char* other, const char* arg_doc,
                    const char* doc) {
  FInferShape shape = kExtract ? ExtractShape<kTrian> : MakeShape<kTrian>;
  FCompute compute = DiagTrianCompute<kTrian, kExtract, cpu>;
  FGradient grad = [other](const NodePtr& n, const std::vector<NodeEntry>& og) {
    return MakeGradNode(other, n, {og[0]});
  };
  op.add_argument("A", "NDArray", arg_doc);
  op.add_arguments(P::Fields());
  op.set_attr_parser(ParamParser<P>);
  return op.describe(doc)
      .set_num_inputs(1)
      .add_alias(alias)
      .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
      .set_attr<FInferShape>("FInferShape", shape)
      .set_attr<FInferType>("FInferType", LinalgType)
      .set_attr<FCompute>(kFComputeCPU, compute)
      .set_attr<FGradient>("FGradient", grad);
}

[[maybe_unused]] const Op& kExtractDiag = DefineDiagTrian<false, true, LinalgDiagParam>(
    Op::Register("_linalg_extractdiag"), "linalg_extractdiag", "_linalg_makediag",
    "Square matrices, (..., n, n).",
    R"(Diagonal `offset` of every square matrix of a batch (MXNet's
linalg.extractdiag): shape (..., n - |offset|). float32 and float64.

Example: extractdiag([[1, 2], [3, 4]]) = [1, 4]; with offset=1, [2].)");

[[maybe_unused]] const Op& kMakeDiag = DefineDiagTrian<false, false, LinalgDiagParam>(
    Op::Register("_linalg_makediag"), "linalg_makediag", "_linalg_extractdiag",
    "Diagonals, (..., n).",
    R"(Square matrices, zero but for diagonal `offset`, which holds the
input's last axis (MXNet's linalg.makediag): shape (..., n + |offset|,
n + |offset|). float32 and float64.

Example: makediag([1, 2]) = [[1, 0], [0, 2]]; with offset=1, [[0, 1, 0],
[0, 0, 2], [0, 0, 0]].)");

[[maybe_unused]] const Op& kExtractTrian = DefineDiagTrian<true, true, LinalgTrianParam>(
    Op::Register("_linalg_extracttrian"), "linalg_extracttrian", "_linalg_maketrian",
    "Square matrices, (..., n, n).",
    R"(A triangle of every square matrix of a batch, packed (MXNet's
linalg.extracttrian): the lower triangle from diagonal `offset` (< 0, or 0
with lower) down, row by row, or the upper one from it up (> 0, or 0 with
lower=0), column by column. With p = n - |offset|, shape (..., p (p + 1) / 2).
float32 and float64.

Example: A = [[1, 2], [3, 4]]: extracttrian(A) = [1, 3, 4];
extracttrian(A, lower=0) = [1, 2, 4]; extracttrian(A, offset=1) = [2].)");

[[maybe_unused]] const Op& kMakeTrian = DefineDiagTrian<true, false, LinalgTrianParam>(
    Op::Register("_linalg_maketrian"), "linalg_maketrian", "_linalg_extracttrian",
    "Packed triangles, (..., m (m + 1) / 2).",
    R"(Square matrices, zero but for the triangle linalg.extracttrian reads
with the same offset and lower, filled from the input's last axis (MXNet's
linalg.maketrian): shape (..., m + |offset|, m + |offset|). float32 and
float64.

Example: maketrian([1, 2, 3]) = [[1, 0], [2, 3]]; maketrian([1, 2, 3],
offset=1) = [[0, 1, 2], [0, 0, 3], [0, 0, 0]].)");

// ---------------------------------------------------------------------------
// sumlogdiag

bool SumLogDiagShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  SquareSize(attrs, a, 0);
  AssignShape(attrs, out, 0, PerMatrixShape(a), "output");
  return true;
}

}  // namespace

TS_REGISTER_OP(_linalg_sumlogdiag)
    .describe(R"(The sum of the logarithms of the diagonal of every square matrix of
a batch (MXNet's linalg.sumlogdiag): shape A's batch axes, or (1) for one
matrix. With A = L L^T from linalg.potrf, log det A = 2 sumlogdiag(L).
float32 and float64.

Example: sumlogdiag([[1, 1], [1, 7]]) = [1.9459].)")
    .set_num_inputs(1)
    .add_alias("linalg_sumlogdiag")
    .add_argument("A", "NDArray", "Square matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FInferShape>("FInferShape", SumLogDiagShape)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FCompute>(kFComputeCPU, SumLogDiagForward<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_linalg_sumlogdiag"});

[[maybe_unused]] static const Op& kSumLogDiagBackward =
    LinalgBackward(Op::Register("_backward_linalg_sumlogdiag"),
                   "Gradient of linalg.sumlogdiag: inputs dOut, A; output dA.", 2, 1,
                   UnaryBackwardShape(SumLogDiagShape, "gradient of A"), SumLogDiagBackward<cpu>);

}  // namespace tessera::op
