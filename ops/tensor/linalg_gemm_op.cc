// linalg.gemm (alpha op(A) op(B) + beta C) and linalg.gemm2 (alpha op(A)
// op(B)), batched, with the rows on any axis but the last (MXNet's `axis`).
#include "ops/tensor/linalg_op-inl.h"

namespace tessera::op {
namespace {

template <typename P>
int RowAxis(const NodeAttrs& attrs, int ndim) {
  return NormalizeAxis(ParamsOf<P>(attrs).axis, ndim, OpLabel(attrs).c_str());
}

template <typename P>
bool GemmShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &a = (*in)[0], &b = (*in)[1];
  if (!a.known() || !b.known()) return false;
  const auto& p = ParamsOf<P>(attrs);
  const Shape o = ProductShape(attrs, a, b, p.transpose_a, p.transpose_b, p.axis);
  if (in->size() == 3) AssignShape(attrs, in, 2, o, "input C");
  AssignShape(attrs, out, 0, o, "output");
  return true;
}

// in: A, B[, C]; out = alpha op(A) op(B) (+ beta C).
template <typename P>
void GemmForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<P>(attrs);
  ForFloatAndDouble(attrs, out[0].dtype(), "linalg.gemm", [&](auto zero) {
    using T = decltype(zero);
    const int ax = RowAxis<P>(attrs, out[0].shape().ndim());
    const MatrixLayout la = LayoutOf(in[0].shape(), ax), lb = LayoutOf(in[1].shape(), ax),
                       lc = LayoutOf(out[0].shape(), ax);
    T* c = out[0].dptr<T>();
    T beta = 0;
    if constexpr (std::is_same_v<P, LinalgGemmParam>) {
      // Writing: C scaled by the product's beta. Adding: C's share added after.
      const T* cin = in[2].dptr<T>();
      if (req[0] != kAddTo) {
        if (cin != c) std::copy(cin, cin + out[0].Size(), c);
        beta = T(p.beta);
      }
    }
    if (req[0] == kAddTo) beta = 1;
    BatchedProduct(p.transpose_a, p.transpose_b, T(p.alpha), in[0].dptr<T>(), la, in[1].dptr<T>(),
                   lb, beta, c, lc, ctx.run_ctx.omp_threads);
    if constexpr (std::is_same_v<P, LinalgGemmParam>) {
      if (req[0] == kAddTo) {
        const T* cin = in[2].dptr<T>();
        for (int64_t i = 0, n = out[0].Size(); i < n; ++i) c[i] += T(p.beta) * cin[i];
      }
    }
  });
}

// in: dOut, A, B; out: dA, dB[, dC]. With op(A) m x k, op(B) k x n:
// d op(A) = alpha dOut op(B)^T, d op(B) = alpha op(A)^T dOut, dC = beta dOut.
template <typename P>
void GemmBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<P>(attrs);
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.gemm backward", [&](auto zero) {
    using T = decltype(zero);
    const int ax = RowAxis<P>(attrs, in[0].shape().ndim());
    const MatrixLayout lc = LayoutOf(in[0].shape(), ax), la = LayoutOf(in[1].shape(), ax),
                       lb = LayoutOf(in[2].shape(), ax);
    const T* dc = in[0].dptr<T>();
    const T* a = in[1].dptr<T>();
    const T* b = in[2].dptr<T>();
    const bool ta = p.transpose_a, tb = p.transpose_b;
    const T alpha = T(p.alpha);
    const int threads = ctx.run_ctx.omp_threads;
    auto beta = [&](size_t i) { return req[i] == kAddTo ? T(1) : T(0); };
    if (req[0] != kNullOp) {
      if (!ta)
        BatchedProduct(false, !tb, alpha, dc, lc, b, lb, beta(0), out[0].dptr<T>(), la, threads);
      else
        BatchedProduct(tb, true, alpha, b, lb, dc, lc, beta(0), out[0].dptr<T>(), la, threads);
    }
    if (req[1] != kNullOp) {
      if (!tb)
        BatchedProduct(!ta, false, alpha, a, la, dc, lc, beta(1), out[1].dptr<T>(), lb, threads);
      else
        BatchedProduct(true, ta, alpha, dc, lc, a, la, beta(1), out[1].dptr<T>(), lb, threads);
    }
    if constexpr (std::is_same_v<P, LinalgGemmParam>) {
      if (req[2] != kNullOp) {
        T* dcin = out[2].dptr<T>();
        const T s = T(p.beta);
        for (int64_t i = 0, n = in[0].Size(); i < n; ++i)
          dcin[i] = (req[2] == kAddTo ? dcin[i] : T(0)) + s * dc[i];
      }
    }
  });
}

// in dOut, A, B: dOut must have the product's shape; the gradients have
// the forward inputs' shapes.
template <typename P>
bool GemmBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &a = (*in)[1], &b = (*in)[2];
  if (!a.known() || !b.known()) return false;
  const auto& p = ParamsOf<P>(attrs);
  const Shape o = ProductShape(attrs, a, b, p.transpose_a, p.transpose_b, p.axis);
  AssignShape(attrs, in, 0, o, "output gradient");
  AssignShape(attrs, out, 0, a, "gradient of A");
  AssignShape(attrs, out, 1, b, "gradient of B");
  if (out->size() == 3) AssignShape(attrs, out, 2, o, "gradient of C");
  return true;
}

std::vector<NodeEntry> GemmGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  return MakeGradNode("_backward_linalg_gemm", n, {og[0], n->inputs[0], n->inputs[1]});
}
std::vector<NodeEntry> Gemm2Grad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  return MakeGradNode("_backward_linalg_gemm2", n, {og[0], n->inputs[0], n->inputs[1]});
}

}  // namespace

TS_REGISTER_OP(_linalg_gemm)
    .describe(R"(out = alpha op(A) op(B) + beta C for every matrix of a batch
(MXNet's linalg.gemm); op(X) is X or, with transpose_a / transpose_b, its
transpose. The matrices' rows are on `axis` (default the second-last axis),
their columns on the last; every other axis is a batch axis, equal in A, B
and C. float32 and float64.

Example: A = [[1, 1], [1, 1]], B = [[1, 1], [1, 1], [1, 1]], C = [[1, 1, 1],
[1, 1, 1]]: gemm(A, B, C, transpose_b=1, alpha=2, beta=10) = [[14, 14, 14],
[14, 14, 14]].)")
    .set_num_inputs(3)
    .set_attr_parser(ParamParser<LinalgGemmParam>)
    .add_alias("linalg_gemm")
    .add_argument("A", "NDArray", "The first factor's matrices.")
    .add_argument("B", "NDArray", "The second factor's matrices.")
    .add_argument("C", "NDArray", "The matrices added, shaped as the output.")
    .add_arguments(LinalgGemmParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A", "B", "C"}))
    .set_attr<FInferShape>("FInferShape", GemmShape<LinalgGemmParam>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{2, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, GemmForward<LinalgGemmParam>)
    .set_attr<FGradient>("FGradient", GemmGrad);

TS_REGISTER_OP(_backward_linalg_gemm)
    .describe("Gradient of linalg.gemm: inputs dOut, A, B; outputs dA, dB, dC.")
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<LinalgGemmParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", GemmBackwardShape<LinalgGemmParam>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FCompute>(kFComputeCPU, GemmBackward<LinalgGemmParam>);

TS_REGISTER_OP(_linalg_gemm2)
    .describe(R"(out = alpha op(A) op(B) for every matrix of a batch (MXNet's
linalg.gemm2): linalg.gemm without C. Rows on `axis`, columns on the last
axis, the other axes batch axes.

Example: A = [[1, 1], [1, 1]], B = [[1, 1], [1, 1], [1, 1]]:
gemm2(A, B, transpose_b=1, alpha=2) = [[4, 4, 4], [4, 4, 4]].)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<LinalgGemm2Param>)
    .add_alias("linalg_gemm2")
    .add_argument("A", "NDArray", "The first factor's matrices.")
    .add_argument("B", "NDArray", "The second factor's matrices.")
    .add_arguments(LinalgGemm2Param::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A", "B"}))
    .set_attr<FInferShape>("FInferShape", GemmShape<LinalgGemm2Param>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FCompute>(kFComputeCPU, GemmForward<LinalgGemm2Param>)
    .set_attr<FGradient>("FGradient", Gemm2Grad);

TS_REGISTER_OP(_backward_linalg_gemm2)
    .describe("Gradient of linalg.gemm2: inputs dOut, A, B; outputs dA, dB.")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<LinalgGemm2Param>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", GemmBackwardShape<LinalgGemm2Param>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FCompute>(kFComputeCPU, GemmBackward<LinalgGemm2Param>);

}  // namespace tessera::op
