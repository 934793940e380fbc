// Reductions over axes (sum, mean, prod, nansum, nanprod, max, min, norm)
// and over one axis (argmax, argmin): parameters, inference, and the
// FCompute templates shared by the CPU (.cc) and GPU (.cu) registrations.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "ops/tensor/reduce_cpu.h"
#include "ops/tensor/reduce_reducers.h"
#include "ops/tensor/reduce_utils.h"

namespace tessera::op {

struct ReduceAxesParam : Params<ReduceAxesParam> {
  std::optional<std::vector<int64_t>> axis;
  bool keepdims = false;
  bool exclude = false;
  static void Declare(ParamDecl<ReduceAxesParam>& d) {
    d.field("axis", &ReduceAxesParam::axis)
        .set_default(std::nullopt)
        .set_axis()
        .describe(
            "The axis or axes to reduce. None (the default) or the empty tuple () reduces "
            "every axis, as in MXNet 1.x. Negative axes count from the end.");
    d.field("keepdims", &ReduceAxesParam::keepdims)
        .set_default(false)
        .describe("Keep the reduced axes in the result, with size 1.");
    d.field("exclude", &ReduceAxesParam::exclude)
        .set_default(false)
        .describe("Reduce every axis except those in `axis`.");
  }
};

struct NormParam : Params<NormParam> {
  int ord = 2;
  std::optional<std::vector<int64_t>> axis;
  std::optional<DType> out_dtype;
  bool keepdims = false;
  static void Declare(ParamDecl<NormParam>& d) {
    d.field("ord", &NormParam::ord)
        .set_default(2)
        .set_range(1, 2)
        .describe("Order of the norm: 1 (sum of absolute values) or 2 (Euclidean).");
    d.field("axis", &NormParam::axis)
        .set_default(std::nullopt)
        .set_axis()
        .describe(
            "The axis or axes the norm is computed over. None (the default) or () uses every "
            "axis (the flattened array).");
    d.field("out_dtype", &NormParam::out_dtype)
        .set_default(std::nullopt)
        .describe("The dtype of the result: float16, float32 or float64. None: the input's dtype.");
    d.field("keepdims", &NormParam::keepdims)
        .set_default(false)
        .describe("Keep the reduced axes in the result, with size 1.");
  }
};

struct ReduceAxisParam : Params<ReduceAxisParam> {
  std::optional<int> axis;
  bool keepdims = false;
  static void Declare(ParamDecl<ReduceAxisParam>& d) {
    d.field("axis", &ReduceAxisParam::axis)
        .set_default(std::nullopt)
        .set_axis()
        .describe(
            "The axis to search along. None (the default) searches the flattened array and "
            "returns a flat index.");
    d.field("keepdims", &ReduceAxisParam::keepdims)
        .set_default(false)
        .describe("Keep the searched axis in the result, with size 1.");
  }
};

// The axes an op's parameters reduce, for an input of shape `in`.
inline AxisMask ParamMask(const ReduceAxesParam& p, const Shape& in, const std::string& op) {
  return ReduceAxesMask(in, p.axis, p.exclude, op);
}
inline AxisMask ParamMask(const NormParam& p, const Shape& in, const std::string& op) {
  return ReduceAxesMask(in, p.axis, false, op);
}
inline AxisMask ParamMask(const ReduceAxisParam& p, const Shape& in, const std::string& op) {
  return ReduceAxisMask(in, p.axis, op);
}

// Forward shape: output from input; with keepdims, kept output dimensions
// also fill unknown input dimensions (and an unknown input takes the
// output's ndim).
template <typename P>
bool ReduceShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1 && out->size() == 1)
      << OpLabel(attrs) << ": expects 1 input and 1 output, got " << in->size() << " and "
      << out->size();
  const P& p = ParamsOf<P>(attrs);
  Shape& ishape = (*in)[0];
  if (ishape.ndim() == 0) {
    if (!p.keepdims || (*out)[0].ndim() == 0) return false;
    ishape = Shape::Filled((*out)[0].ndim(), 0);
  }
  const AxisMask mask = ParamMask(p, ishape, OpLabel(attrs));
  AssignShape(attrs, out, 0, ReducedShape(ishape, mask, p.keepdims), "output");
  FillInputFromReduced(&ishape, mask, p.keepdims, (*out)[0]);
  return ishape.known() && (*out)[0].known();
}

// Backward shape: inputs (ograd, data[, out]); the gradient has data's shape.
template <typename P>
bool ReduceBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const P& p = ParamsOf<P>(attrs);
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "input");
  const Shape& data = (*in)[1];
  if (data.ndim() == 0) return false;
  const Shape reduced = ReducedShape(data, ParamMask(p, data, OpLabel(attrs)), p.keepdims);
  AssignShape(attrs, in, 0, reduced, "input");
  if (in->size() > 2) AssignShape(attrs, in, 2, reduced, "input");
  return AllKnown(*in) && (*out)[0].known();
}

// Which dtypes an op accepts (checked at inference, so the call fails at once).
enum class TypeSet { kAll, kNumeric, kFloat };

inline bool InTypeSet(DType t, TypeSet s) {
  switch (s) {
    case TypeSet::kAll:
      return true;
    case TypeSet::kNumeric:
      return t != DType::kBool;
    case TypeSet::kFloat:
      return IsFloatingPoint(t);
  }
  return false;
}

inline const char* TypeSetName(TypeSet s) {
  switch (s) {
    case TypeSet::kAll:
      return "every dtype";
    case TypeSet::kNumeric:
      return "every dtype but bool";
    case TypeSet::kFloat:
      return "float16, bfloat16, float32, float64";
  }
  return "";
}

inline void CheckTypeSet(const NodeAttrs& attrs, DType t, TypeSet s, const char* what) {
  TS_CHECK(t == DType::kUnknown || InTypeSet(t, s))
      << OpLabel(attrs) << ": " << what << " has dtype " << DTypeName(t)
      << ", supported: " << TypeSetName(s);
}

template <TypeSet S>
bool ReduceType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  CheckTypeSet(attrs, (*in)[0], S, "input 0");
  return ok;
}

template <TypeSet S, typename F>
decltype(auto) SwitchTypeSet(DType t, F&& fn, const char* what) {
  if constexpr (S == TypeSet::kAll)
    return SwitchDType(t, fn, what);
  else if constexpr (S == TypeSet::kNumeric)
    return SwitchNumericDType(t, fn, what);
  else
    return SwitchFloatDType(t, fn, what);
}

// Device dispatch (the GPU overloads are in reduce_gpu.cuh).
template <typename R, typename T, typename O>
void RunReduce(cpu, const OpContext& ctx, const ReducePlan& p, const T* x, O* y, OpReqType req) {
  reduce::ReduceCpu<R>(ctx.run_ctx, p, x, y, req);
}
template <typename Cmp, typename T, typename O>
void RunArgReduce(cpu, const OpContext& ctx, int64_t outer, int64_t len, int64_t inner, const T* x,
                  O* y, OpReqType req) {
  reduce::ArgReduceCpu<Cmp>(ctx.run_ctx, outer, len, inner, x, y, req);
}
template <bool kIgnoreNaN, typename T, typename Acc>
void RunProdGrad(cpu, const OpContext& ctx, const ReducePlan& p, const T* x, const T* g, T* gx,
                 Acc* tmp, OpReqType req) {
  reduce::ProdGradCpu<kIgnoreNaN>(ctx.run_ctx, p, x, g, gx, tmp, req);
}

template <typename xpu, typename R, TypeSet S>
void ReduceAxesCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<ReduceAxesParam>(attrs);
  const Shape& shape = in[0].shape();
  const ReducePlan plan =
      MakeReducePlan(shape, KeepDimsShape(shape, ParamMask(p, shape, OpLabel(attrs))));
  SwitchTypeSet<S>(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        RunReduce<R>(xpu{}, ctx, plan, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
      },
      attrs.op->name().c_str());
}

// The body of both ReduceToShape<xpu> specialisations (reduce_utils.cc,
// reduce_op.cu): a sum over the axes that `out` broadcasts along.
template <typename xpu>
void ReduceToShapeOn(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReqType req) {
  TS_CHECK(in.dtype() == out.dtype()) << "ReduceToShape: input is " << DTypeName(in.dtype())
                                      << ", output " << DTypeName(out.dtype());
  const ReducePlan plan =
      MakeReducePlan(in.shape(), AlignToBroadcast(in.shape(), out.shape(), "ReduceToShape"));
  SwitchNumericDType(
      in.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        RunReduce<reduce::Sum>(xpu{}, ctx, plan, in.dptr<T>(), out.dptr<T>(), req);
      },
      "ReduceToShape");
}

template <typename xpu>
void NormCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<NormParam>(attrs);
  const Shape& shape = in[0].shape();
  const ReducePlan plan =
      MakeReducePlan(shape, KeepDimsShape(shape, ParamMask(p, shape, OpLabel(attrs))));
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchFloatDType(out[0].dtype(), [&](auto otag) {
      using O = typename decltype(otag)::type;
      if (p.ord == 1)
        RunReduce<reduce::NormL1>(xpu{}, ctx, plan, in[0].dptr<T>(), out[0].dptr<O>(), req[0]);
      else
        RunReduce<reduce::NormL2>(xpu{}, ctx, plan, in[0].dptr<T>(), out[0].dptr<O>(), req[0]);
    });
  });
}

template <typename xpu, typename Cmp>
void ArgReduceCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<ReduceAxisParam>(attrs);
  const Shape& shape = in[0].shape();
  int64_t outer = 1, len = shape.Size(), inner = 1;
  if (p.axis) {
    const int ax = NormalizeAxis(*p.axis, shape.ndim(), attrs.op->name().c_str());
    outer = shape.ProdRange(0, ax);
    len = shape[ax];
    inner = shape.ProdRange(ax + 1, shape.ndim());
  }
  // The indices have the input's dtype (MXNet: ElemwiseType<1, 1> in
  // src/operator/tensor/broadcast_reduce_op_index.cc).
  SwitchNumericDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunArgReduce<Cmp>(xpu{}, ctx, outer, len, inner, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
}

// ---- gradients ----
// Elementwise over the input: gx[i] (req)= F::Grad(g[o], x[i], y[o], n) with
// o the output element that input element i was reduced into.
template <typename F>
struct reduce_backward {
  template <typename T, typename G>
  TS_XINLINE static void Map(int64_t i, T* gx, const G* g, const T* x, const G* y, BroadcastIndex b,
                             int64_t n, int req) {
    using A = AccType<T>;
    const int64_t o = b(i);
    const A yo = y ? reduce::Load<A>(y[o]) : A(0);
    reduce::StoreReq(gx[i], F::Grad(reduce::Load<A>(g[o]), reduce::Load<A>(x[i]), yo, n),
                     static_cast<OpReqType>(req));
  }
};

struct SumGrad {
  template <typename A>
  TS_XINLINE static A Grad(A g, A, A, int64_t) {
    return g;
  }
};
struct MeanGrad {
  template <typename A>
  TS_XINLINE static A Grad(A g, A, A, int64_t n) {
    return g / static_cast<A>(n);
  }
};
struct NanSumGrad {
  template <typename A>
  TS_XINLINE static A Grad(A g, A x, A, int64_t) {
    return reduce::IsNaN(x) ? A(0) : g;
  }
};
// Every element equal to the extreme gets the full gradient (MXNet's rule;
// ties are rare in real data and this keeps the backward elementwise).
struct MinMaxGrad {
  template <typename A>
  TS_XINLINE static A Grad(A g, A x, A y, int64_t) {
    return x == y ? g : A(0);
  }
};
struct NormL1Grad {
  template <typename A>
  TS_XINLINE static A Grad(A g, A x, A, int64_t) {
    return x > A(0) ? g : (x < A(0) ? A(-g) : A(0));
  }
};
// d|x|_2/dx = x / |x|_2, and 0 where the norm is 0 (a subgradient).
struct NormL2Grad {
  template <typename A>
  TS_XINLINE static A Grad(A g, A x, A y, int64_t) {
    return y == A(0) ? A(0) : A(g * x / y);
  }
};

template <typename xpu, typename F, TypeSet S>
void ReduceBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                           const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                           const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<ReduceAxesParam>(attrs);
  const Shape& shape = in[1].shape();
  const BroadcastIndex b =
      MakeBroadcastIndex(shape, KeepDimsShape(shape, ParamMask(p, shape, OpLabel(attrs))));
  const int64_t n = shape.Size() / in[0].Size();
  SwitchTypeSet<S>(
      in[1].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* y = in.size() > 2 ? in[2].dptr<T>() : nullptr;
        Kernel<reduce_backward<F>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                in[0].dptr<T>(), in[1].dptr<T>(), y, b, n,
                                                static_cast<int>(req[0]));
      },
      attrs.op->name().c_str());
}

template <typename xpu>
void NormBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<NormParam>(attrs);
  const Shape& shape = in[1].shape();
  const BroadcastIndex b =
      MakeBroadcastIndex(shape, KeepDimsShape(shape, ParamMask(p, shape, OpLabel(attrs))));
  const int64_t n = shape.Size() / in[0].Size();
  SwitchFloatDType(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchFloatDType(in[0].dtype(), [&](auto gtag) {
      using G = typename decltype(gtag)::type;
      const int r = static_cast<int>(req[0]);
      if (p.ord == 1)
        Kernel<reduce_backward<NormL1Grad>, xpu>::Launch(ctx.run_ctx, out[0].Size(),
                                                         out[0].dptr<T>(), in[0].dptr<G>(),
                                                         in[1].dptr<T>(), in[2].dptr<G>(), b, n, r);
      else
        Kernel<reduce_backward<NormL2Grad>, xpu>::Launch(ctx.run_ctx, out[0].Size(),
                                                         out[0].dptr<T>(), in[0].dptr<G>(),
                                                         in[1].dptr<T>(), in[2].dptr<G>(), b, n, r);
    });
  });
}

template <typename xpu, bool kIgnoreNaN>
void ProdBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<ReduceAxesParam>(attrs);
  const Shape& shape = in[1].shape();
  const ReducePlan plan =
      MakeReducePlan(shape, KeepDimsShape(shape, ParamMask(p, shape, OpLabel(attrs))));
  SwitchNumericDType(
      in[1].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = reduce::SumOuter<T>;
        Acc* tmp = ctx.requested.at(0).get_space_typed<Acc>(static_cast<size_t>(shape.Size()));
        RunProdGrad<kIgnoreNaN>(xpu{}, ctx, plan, in[1].dptr<T>(), in[0].dptr<T>(),
                                out[0].dptr<T>(), tmp, req[0]);
      },
      attrs.op->name().c_str());
}

// Gradient rules: the backward op takes (ograd, data) or (ograd, data, out).
struct ReduceGradUseIn {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    return MakeGradNode(op_name, n, {ograds[0], n->inputs[0]});
  }
};
struct ReduceGradUseInOut {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    return MakeGradNode(op_name, n, {ograds[0], n->inputs[0], NodeEntry{n, 0, 0}});
  }
};

}  // namespace tessera::op
