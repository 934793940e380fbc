#include "ops/tensor/dot_op-inl.h"

#include "engine/op/op_attr_types.h"
#include "ops/tensor/gemm.h"

namespace tessera::op {
namespace {

Shape Range(const Shape& s, int b, int e) {
  return Shape(s.begin() + b, s.begin() + e);
}

}  // namespace

Shape DotOutputShape(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs, GemmShape* g) {
  const auto& p = ParamsOf<DotParam>(attrs);
  if (lhs.ndim() == 1 && rhs.ndim() == 1) {
    TS_CHECK(!p.transpose_a && !p.transpose_b)
        << OpLabel(attrs) << ": two vectors cannot be transposed (" << lhs << " and " << rhs << ")";
    TS_CHECK(lhs[0] == rhs[0]) << OpLabel(attrs) << ": shape mismatch, " << lhs << " X " << rhs;
    *g = {1, 1, lhs[0], 1};
    return Shape{1};
  }
  // (rows, contracted) of op(A) and (contracted, cols) of op(B), as shapes.
  const int ln = lhs.ndim(), rn = rhs.ndim();
  const Shape l_keep = p.transpose_a ? Range(lhs, 1, ln) : Range(lhs, 0, ln - 1);
  const int64_t l_k = p.transpose_a ? lhs[0] : lhs[ln - 1];
  const Shape r_keep = p.transpose_b ? Range(rhs, 0, rn - 1) : Range(rhs, 1, rn);
  const int64_t r_k = p.transpose_b ? rhs[rn - 1] : rhs[0];
  TS_CHECK(l_k == r_k) << OpLabel(attrs) << ": shape mismatch, " << lhs << " X " << rhs
                       << (p.transpose_a ? " (lhs transposed)" : "")
                       << (p.transpose_b ? " (rhs transposed)" : "") << ": contracted sizes " << l_k
                       << " and " << r_k << " differ";
  Shape out;
  if (ln > 1)
    for (int64_t d : l_keep) out.push_back(d);
  if (rn > 1)
    for (int64_t d : r_keep) out.push_back(d);
  if (out.ndim() == 0) out.push_back(1);
  *g = {l_keep.Size(), r_keep.Size(), l_k, 1};
  return out;
}

Shape BatchDotOutputShape(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs,
                          GemmShape* g) {
  const auto& p = ParamsOf<DotParam>(attrs);
  TS_CHECK(lhs.ndim() >= 3 && lhs.ndim() == rhs.ndim())
      << OpLabel(attrs) << ": needs two arrays of the same rank >= 3, got " << lhs << " and "
      << rhs;
  const int n = lhs.ndim();
  for (int i = 0; i < n - 2; ++i)
    TS_CHECK(lhs[i] == rhs[i]) << OpLabel(attrs) << ": batch dimensions differ, " << lhs << " X "
                               << rhs;
  const int64_t m = p.transpose_a ? lhs[n - 1] : lhs[n - 2];
  const int64_t lk = p.transpose_a ? lhs[n - 2] : lhs[n - 1];
  const int64_t rk = p.transpose_b ? rhs[n - 1] : rhs[n - 2];
  const int64_t cols = p.transpose_b ? rhs[n - 2] : rhs[n - 1];
  TS_CHECK(lk == rk) << OpLabel(attrs) << ": shape mismatch, " << lhs << " X " << rhs
                     << ": contracted sizes " << lk << " and " << rk << " differ";
  Shape out = Range(lhs, 0, n - 2);
  out.push_back(m);
  out.push_back(cols);
  *g = {m, cols, lk, lhs.ProdRange(0, n - 2)};
  return out;
}

void GemmAnyType(const TBlob& a, const TBlob& b, const TBlob& c, bool ta, bool tb,
                 const GemmShape& g, bool accumulate, int64_t lda, int64_t ldb, int threads) {
  const int64_t sa = g.m * g.k, sb = g.k * g.n, sc = g.m * g.n;
  SwitchNumericDType(
      c.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, AccType<T>>;
        const T* pa = a.dptr<T>();
        const T* pb = b.dptr<T>();
        T* pc = c.dptr<T>();
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          const T beta = accumulate ? T(1) : T(0);
          if (g.batch == 1)
            Gemm(ta, tb, g.m, g.n, g.k, T(1), pa, lda, pb, ldb, beta, pc, g.n, threads);
          else
            GemmBatched(ta, tb, g.m, g.n, g.k, T(1), pa, lda, pb, ldb, beta, pc, g.n, g.batch, sa,
                        sb, sc, threads);
        } else {
          CheckGemmArgs(ta, tb, g.m, g.n, g.k, lda, ldb, g.n);
          GemmBatchedFallback<T, Acc>(ta, tb, g.m, g.n, g.k, Acc(1), pa, lda, pb, ldb,
                                      accumulate ? Acc(1) : Acc(0), pc, g.n, g.batch, sa, sb, sc,
                                      threads);
        }
      },
      "dot");
}

template <>
void DotGemm<cpu>(const OpContext& ctx, const TBlob& a, const TBlob& b, const TBlob& c, bool ta,
                  bool tb, const GemmShape& g, bool accumulate, int64_t lda, int64_t ldb,
                  const char*) {
  GemmAnyType(a, b, c, ta, tb, g, accumulate, lda, ldb, ctx.run_ctx.omp_threads);
}

namespace {

template <bool kBatch>
bool InferDotShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() || !(*in)[1].known()) return false;
  GemmShape g;
  const Shape o = kBatch ? BatchDotOutputShape(attrs, (*in)[0], (*in)[1], &g)
                         : DotOutputShape(attrs, (*in)[0], (*in)[1], &g);
  AssignShape(attrs, out, 0, o, "output");
  return true;
}

std::vector<std::string> LhsRhs(const NodeAttrs&) {
  return {"lhs", "rhs"};
}

bool InferDotType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  TS_CHECK((*out)[0] != DType::kBool) << OpLabel(attrs) << " does not support dtype bool";
  return ok;
}

}  // namespace

TS_REGISTER_OP(dot)
    .describe(R"(Matrix product of lhs and rhs.

Two 1-D arrays give their inner product (shape (1)). Otherwise lhs is taken as
the matrix (product of all but its last axis) x (last axis) and rhs as (first
axis) x (product of the other axes); the result's shape is lhs's shape without
its last axis followed by rhs's shape without its first. transpose_a and
transpose_b transpose those matrices first. float32 and float64 go through the
faster of oneDNN and OpenBLAS; integer and 16-bit types through a portable
kernel that accumulates in int64 or float.)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<DotParam>)
    .add_argument("lhs", "NDArray", "The left operand.")
    .add_argument("rhs", "NDArray", "The right operand.")
    .add_arguments(DotParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", LhsRhs)
    .set_attr<FInferShape>("FInferShape", InferDotShape<false>)
    .set_attr<FInferType>("FInferType", InferDotType)
    .set_attr<FCompute>(kFComputeCPU, DotForward<false, cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_dot"});

TS_REGISTER_OP(batch_dot)
    .describe(R"(Batched matrix product: for arrays of shape (..., m, k) and
(..., k, n) with equal leading (batch) dimensions, the product of each pair of
matrices, shape (..., m, n). transpose_a and transpose_b transpose each matrix.)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<DotParam>)
    .add_argument("lhs", "NDArray", "The left operand, rank >= 3.")
    .add_argument("rhs", "NDArray", "The right operand, same rank and batch dimensions.")
    .add_arguments(DotParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", LhsRhs)
    .set_attr<FInferShape>("FInferShape", InferDotShape<true>)
    .set_attr<FInferType>("FInferType", InferDotType)
    .set_attr<FCompute>(kFComputeCPU, DotForward<true, cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_batch_dot"});

// The gradient ops of dot and batch_dot: inputs (out_grad, lhs, rhs), outputs
// the gradients of lhs and rhs, shaped as they are. The output gradient has
// the shape of the forward product: the GEMMs read it by that shape.
Op& RegisterDotBackward(const char* name, const char* forward, FCompute compute, bool batch) {
  return Op::Register(name)
      .describe(std::string("Gradient of ") + forward + " with respect to lhs and rhs.")
      .set_num_inputs(3)
      .set_num_outputs(2)
      .set_attr_parser(ParamParser<DotParam>)
      .set_attr<TIsBackward>("TIsBackward", true)
      .set_attr<FInferShape>(
          "FInferShape",
          [batch](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
            AssignShape(attrs, out, 0, (*in)[1], "output");
            AssignShape(attrs, out, 1, (*in)[2], "output");
            std::vector<Shape> operands{(*in)[1], (*in)[2]}, product(1);
            if (batch ? InferDotShape<true>(attrs, &operands, &product)
                      : InferDotShape<false>(attrs, &operands, &product))
              AssignShape(attrs, in, 0, product[0], "input");
            return (*out)[0].known() && (*out)[1].known() && (*in)[0].known();
          })
      .set_attr<FInferType>("FInferType", ElemwiseType<3, 2>)
      .set_attr<FCompute>(kFComputeCPU, std::move(compute));
}

[[maybe_unused]] static Op& dot_backward =
    RegisterDotBackward("_backward_dot", "dot", DotBackward<false, cpu>, false);
[[maybe_unused]] static Op& batch_dot_backward =
    RegisterDotBackward("_backward_batch_dot", "batch_dot", DotBackward<true, cpu>, true);

}  // namespace tessera::op
