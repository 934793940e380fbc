// LU-based ops: linalg.inverse, linalg.det, linalg.slogdet, with MXNet's
// outputs (det and slogdet keep the LU factors and pivots as hidden outputs
// for their backward) and gradients. Shapes, registration and the CPU's LU
// routines (LAPACK); the computation is linalg_lu_op-inl.h, shared with the
// GPU (linalg_lu_op.cu).
#include "ops/tensor/lapack.h"
#include "ops/tensor/linalg_lu_op-inl.h"

namespace tessera::op {

template <typename T>
void LuFactorCpu(const OpContext& ctx, int64_t n, int64_t count, T* a, int* piv, int* info) {
  ForEachMatrix<T>(ctx, count, n * n * n, 0, [&](int64_t i, T*) {
    info[i] = lapack::Getrf(n, a + i * n * n, n, piv + i * n);
    return 0;
  });
}

template <typename T>
void LuInvertCpu(const OpContext& ctx, int64_t n, int64_t count, const T* lu, const int* piv,
                 T* inv, int* info) {
  ForEachMatrix<T>(ctx, count, 2 * n * n * n, 0, [&](int64_t i, T*) {
    std::copy(lu + i * n * n, lu + (i + 1) * n * n, inv + i * n * n);
    info[i] = lapack::Getri(n, inv + i * n * n, n, piv + i * n);
    return 0;
  });
}

template void LuFactorCpu<float>(const OpContext&, int64_t, int64_t, float*, int*, int*);
template void LuFactorCpu<double>(const OpContext&, int64_t, int64_t, double*, int*, int*);
template void LuInvertCpu<float>(const OpContext&, int64_t, int64_t, const float*, const int*,
                                 float*, int*);
template void LuInvertCpu<double>(const OpContext&, int64_t, int64_t, const double*, const int*,
                                  double*, int*);

namespace {

MatrixLayout SquareOf(const NodeAttrs& attrs, const Shape& s) {
  const MatrixLayout l = StackOf(attrs, s, "A");
  TS_CHECK(l.rows == l.cols) << OpLabel(attrs) << ": A has shape " << s
                             << "; its last two axes must be equal (square matrices)";
  return l;
}

// ---------------------------------------------------------------------------
// inverse

bool InverseShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) AssignShape(attrs, in, 0, (*out)[0], "input A");
  if (!(*in)[0].known()) return false;
  SquareOf(attrs, (*in)[0]);
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return true;
}

// ---------------------------------------------------------------------------
// det and slogdet: outputs [det] or [sign, logabsdet], then the LU factors
// (A's shape) and the pivots (A's shape less its last axis, int32).

template <bool kLog>
bool DetShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  SquareOf(attrs, a);
  for (int k = 0; k < kNumValues<kLog>; ++k)
    AssignShape(attrs, out, k, PerMatrixShape(a), kLog && k == 0 ? "output sign" : "output");
  AssignShape(attrs, out, kNumValues<kLog>, a, "LU factors");
  AssignShape(attrs, out, kNumValues<kLog> + 1, Shape(a.begin(), a.end() - 1), "pivots");
  return true;
}

template <bool kLog>
bool DetType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> pivots{(*out)[kNumValues<kLog> + 1]};
  out->pop_back();
  const bool known = LinalgType(attrs, in, out);
  out->push_back(pivots[0]);
  AssignType(attrs, out, kNumValues<kLog> + 1, DType::kInt32, "pivots");
  return known;
}

// in: the output gradient, the forward's values, LU, pivots; each checked
// against the shapes and dtypes the forward gives for LU's shape.
template <bool kLog>
bool DetBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  constexpr size_t kLu = kNumValues<kLog> + 1;
  const Shape lu = (*in)[kLu];
  if (!lu.known()) return false;
  std::vector<Shape> fin{lu}, fout(kLu + 1);
  DetShape<kLog>(attrs, &fin, &fout);
  AssignShape(attrs, in, 0, fout[0], "output gradient");
  for (size_t k = 1; k < kLu; ++k) AssignShape(attrs, in, k, fout[k - 1], "forward output");
  AssignShape(attrs, in, kLu + 1, fout[kLu], "pivots");
  AssignShape(attrs, out, 0, lu, "gradient of A");
  return true;
}

template <bool kLog>
bool DetBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  constexpr size_t kPiv = kNumValues<kLog> + 2;
  std::vector<DType> values(in->begin(), in->begin() + kPiv);
  const bool known = LinalgType(attrs, &values, out);
  std::copy(values.begin(), values.end(), in->begin());
  AssignType(attrs, in, kPiv, DType::kInt32, "pivots");
  return known;
}

template <bool kLog>
std::vector<NodeEntry> DetGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  std::vector<NodeEntry> inputs{og[kLog ? 1 : 0]};
  for (uint32_t k = 0; k < kNumValues<kLog> + 2; ++k) inputs.push_back(NodeEntry{n, k, 0});
  return MakeGradNode(kLog ? "_backward_linalg_slogdet" : "_backward_linalg_det", n, inputs);
}

}  // namespace

TS_REGISTER_OP(_linalg_inverse)
    .describe(R"(The inverse of every square matrix of a batch (MXNet's
linalg.inverse), by LU factorisation with partial pivoting; a singular
matrix is an error naming its place in the batch. float32 and float64.

Example: inverse([[1, 4], [2, 3]]) = [[-0.6, 0.8], [0.4, -0.2]].)")
    .set_num_inputs(1)
    .add_alias("linalg_inverse")
    .add_argument("A", "NDArray", "Square matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FInferShape>("FInferShape", InverseShape)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, InverseForward<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_linalg_inverse"});

[[maybe_unused]] static const Op& kInverseBackward =
    LinalgBackward(
        Op::Register("_backward_linalg_inverse"),
        "Gradient of linalg.inverse: inputs dOut, the forward output; output dA.", 2, 1,
        [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
          if (!(*in)[1].known()) return false;
          SquareOf(attrs, (*in)[1]);
          AssignShape(attrs, in, 0, (*in)[1], "output gradient");
          AssignShape(attrs, out, 0, (*in)[1], "gradient of A");
          return true;
        },
        InverseBackward<cpu>)
        .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);

TS_REGISTER_OP(_linalg_det)
    .describe(R"(The determinant of every square matrix of a batch (MXNet's
linalg.det), from its LU factorisation: shape A's batch axes, or (1) for one
matrix. A singular matrix gives 0 and a zero gradient. float32 and float64.

Example: det([[1, 4], [2, 3]]) = [-5].)")
    .set_num_inputs(1)
    .set_num_outputs(3)
    .add_alias("linalg_det")
    .add_argument("A", "NDArray", "Square matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "LU", "pivot"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", DetShape<false>)
    .set_attr<FInferType>("FInferType", DetType<false>)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, DetForward<false, cpu>)
    .set_attr<FGradient>("FGradient", DetGrad<false>);

[[maybe_unused]] static const Op& kDetBackward =
    LinalgBackward(Op::Register("_backward_linalg_det"),
                   "Gradient of linalg.det: inputs ddet, det, LU, pivots; output dA.", 4, 1,
                   DetBackwardShape<false>, DetBackward<false, cpu>, DetBackwardType<false>)
        .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);

TS_REGISTER_OP(_linalg_slogdet)
    .describe(R"(The sign and the log of the absolute value of the determinant of
every square matrix of a batch (MXNet's linalg.slogdet), from its LU
factorisation: outputs sign (-1, 0 or 1) and logabsdet, each shaped as A's
batch axes, or (1) for one matrix. A singular matrix gives sign 0 and
logabsdet -inf, and a zero gradient; sign has no gradient. float32 and
float64.

Example: slogdet([[2, 3], [1, 4]]): sign = [1], logabsdet = [1.609438].)")
    .set_num_inputs(1)
    .set_num_outputs(4)
    .add_alias("linalg_slogdet")
    .add_argument("A", "NDArray", "Square matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FListOutputNames>(
        "FListOutputNames",
        [](const NodeAttrs&) {
          return std::vector<std::string>{"sign", "logabsdet", "LU", "pivot"};
        })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 2u; })
    .set_attr<FInferShape>("FInferShape", DetShape<true>)
    .set_attr<FInferType>("FInferType", DetType<true>)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, DetForward<true, cpu>)
    .set_attr<FGradient>("FGradient", DetGrad<true>);

[[maybe_unused]] static const Op& kSlogdetBackward =
    LinalgBackward(Op::Register("_backward_linalg_slogdet"),
                   "Gradient of linalg.slogdet: inputs dlogabsdet, sign, logabsdet, LU, pivots; "
                   "output dA.",
                   5, 1, DetBackwardShape<true>, DetBackward<true, cpu>, DetBackwardType<true>)
        .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);

}  // namespace tessera::op
