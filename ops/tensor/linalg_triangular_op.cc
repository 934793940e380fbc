// linalg.trmm (alpha op(A) B), linalg.trsm (alpha op(A)^-1 B), each also on
// the right of B, A triangular; linalg.syrk (alpha A A^T or alpha A^T A).
// Shapes, registration and the CPU's triangular solve; the computation is
// linalg_triangular_op-inl.h, shared with the GPU (linalg_triangular_op.cu).
#include "ops/tensor/lapack.h"
#include "ops/tensor/linalg_triangular_op-inl.h"
#include "ops/tensor/unary_backward_shape.h"

namespace tessera::op {

template <typename T>
void TriangularSolveCpu(const OpContext& ctx, const GpuTrsm& t, const T* a, T* b) {
  const int64_t k = t.rightside ? t.n : t.m;
  ForEachMatrix<T>(ctx, t.batch, t.m * t.n * k, 0, [&](int64_t i, T*) {
    lapack::Trsm(t.rightside, t.lower, t.transpose, t.m, t.n, T(t.alpha), a + i * k * k, k,
                 b + i * t.m * t.n, t.n);
    return 0;
  });
}
template void TriangularSolveCpu<float>(const OpContext&, const GpuTrsm&, const float*, float*);
template void TriangularSolveCpu<double>(const OpContext&, const GpuTrsm&, const double*, double*);

namespace {

// A (.., k, k) triangular and B (.., m, n) with k = m (left) or n (right);
// the output has B's shape. Either side fills the other.
bool TriangShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<LinalgTriangParam>(attrs);
  if (!(*in)[1].known() && (*out)[0].known()) AssignShape(attrs, in, 1, (*out)[0], "input B");
  const Shape &a = (*in)[0], &b = (*in)[1];
  if (!b.known()) return false;
  const int nd = b.ndim();
  TS_CHECK(nd >= 2) << OpLabel(attrs) << ": B has shape " << b << "; it needs 2 or more axes";
  Shape want = b;
  want[nd - 1] = want[nd - 2] = p.rightside ? b[nd - 1] : b[nd - 2];
  if (a.known()) {
    TS_CHECK(a.ndim() == nd && a[nd - 1] == a[nd - 2])
        << OpLabel(attrs) << ": A has shape " << a
        << "; it must be a stack of square matrices with B's " << nd << " axes";
  }
  AssignShape(attrs, in, 0, want,
              p.rightside ? "A (B's batch; B's columns as its size)"
                          : "A (B's batch; B's rows as its size)");
  AssignShape(attrs, out, 0, b, "output");
  return true;
}

// in dOut, A, B (and trsm's output C): dOut and C have B's shape, A is
// checked as in the forward.
bool TriangBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> fin{(*in)[1], (*in)[2]}, fout{(*in)[0]};
  if (!TriangShape(attrs, &fin, &fout)) return false;
  (*in)[1] = fin[0];
  AssignShape(attrs, in, 0, fin[1], "output gradient");
  if (in->size() == 4) AssignShape(attrs, in, 3, fin[1], "forward output");
  AssignShape(attrs, out, 0, fin[0], "gradient of A");
  AssignShape(attrs, out, 1, fin[1], "gradient of B");
  return true;
}

std::vector<NodeEntry> TrmmGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  return MakeGradNode("_backward_linalg_trmm", n, {og[0], n->inputs[0], n->inputs[1]});
}
std::vector<NodeEntry> TrsmGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  return MakeGradNode("_backward_linalg_trsm", n,
                      {og[0], n->inputs[0], n->inputs[1], NodeEntry{n, 0, 0}});
}

// syrk: A (.., m, n) -> (.., m, m), or (.., n, n) with transpose.
bool SyrkShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  const MatrixLayout l = StackOf(attrs, a, "A");
  Shape o = a;
  const int nd = a.ndim();
  o[nd - 2] = o[nd - 1] = ParamsOf<LinalgSyrkParam>(attrs).transpose ? l.cols : l.rows;
  AssignShape(attrs, out, 0, o, "output");
  return true;
}

// The output may take B's memory.
std::vector<std::pair<int, int>> InplaceB(const NodeAttrs&) {
  return {{1, 0}};
}

// trmm (kSolve false) or trsm, and its backward: the same inputs, shapes
// and parameters; trsm's backward also reads the forward output.
template <bool kSolve>
Op& DefineTriang(Op& op, Op& backward, const char* alias, const char* doc) {
  FCompute forward = TriangForward<kSolve, cpu>, grad_compute = TriangBackward<kSolve, cpu>;
  FGradient grad = kSolve ? FGradient(TrsmGrad) : FGradient(TrmmGrad);
  LinalgBackward(backward,
                 std::string("Gradient of ") + alias + ": inputs dOut, A, B" +
                     (kSolve ? ", the forward output" : "") + "; outputs dA, dB.",
                 kSolve ? 4 : 3, 2, TriangBackwardShape, grad_compute)
      .set_attr_parser(ParamParser<LinalgTriangParam>)
      .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);
  return op.describe(doc)
      .set_num_inputs(2)
      .set_attr_parser(ParamParser<LinalgTriangParam>)
      .add_alias(alias)
      .add_argument("A", "NDArray", "Triangular matrices, (..., k, k).")
      .add_argument("B", "NDArray", "Matrices, (..., m, n).")
      .add_arguments(LinalgTriangParam::Fields())
      .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A", "B"}))
      .set_attr<FInferShape>("FInferShape", TriangShape)
      .set_attr<FInferType>("FInferType", LinalgType)
      .set_attr<FInplaceOption>("FInplaceOption", InplaceB)
      .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
      .set_attr<FCompute>(kFComputeCPU, forward)
      .set_attr<FGradient>("FGradient", grad);
}

[[maybe_unused]] const Op& kTrmm = DefineTriang<false>(
    Op::Register("_linalg_trmm"), Op::Register("_backward_linalg_trmm"), "linalg_trmm",
    R"(out = alpha op(A) B, or alpha B op(A) with rightside, for every
matrix of a batch (MXNet's linalg.trmm): A triangular (lower, or upper with
lower=0; its other triangle is not read), op(A) = A or A^T with transpose.
float32 and float64.

Example: A = [[1, 0], [1, 1]], B = [[1, 1, 1], [1, 1, 1]]: trmm(A, B,
alpha=2) = [[2, 2, 2], [4, 4, 4]].)");

[[maybe_unused]] const Op& kTrsm = DefineTriang<true>(
    Op::Register("_linalg_trsm"), Op::Register("_backward_linalg_trsm"), "linalg_trsm",
    R"(Solves op(A) X = alpha B, or X op(A) = alpha B with rightside, for
every matrix of a batch (MXNet's linalg.trsm): A triangular (lower, or upper
with lower=0; its other triangle is not read), op(A) = A or A^T with
transpose. A singular A gives infinities, as in LAPACK. float32 and float64.

Example: A = [[1, 0], [1, 1]], B = [[2, 2, 2], [4, 4, 4]]: trsm(A, B,
alpha=0.5) = [[1, 1, 1], [1, 1, 1]].)");

}  // namespace

TS_REGISTER_OP(_linalg_syrk)
    .describe(R"(out = alpha A A^T, or alpha A^T A with transpose, for every matrix
of a batch (MXNet's linalg.syrk); the output is symmetric. float32 and
float64.

Example: syrk([[1, 2, 3], [4, 5, 6]]) = [[14, 32], [32, 77]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<LinalgSyrkParam>)
    .add_alias("linalg_syrk")
    .add_argument("A", "NDArray", "Matrices, (..., m, n).")
    .add_arguments(LinalgSyrkParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FInferShape>("FInferShape", SyrkShape)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, SyrkForward<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_linalg_syrk"});

[[maybe_unused]] static const Op& kSyrkBackward =
    LinalgBackward(Op::Register("_backward_linalg_syrk"),
                   "Gradient of linalg.syrk: inputs dOut, A; output dA.", 2, 1,
                   UnaryBackwardShape(SyrkShape, "gradient of A"), SyrkBackward<cpu>)
        .set_attr_parser(ParamParser<LinalgSyrkParam>)
        .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace);

}  // namespace tessera::op
