#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/tensor/indexing_op-inl.h"
#include "ops/tensor/shape_grad_util.h"
#include "ops/tensor/sort_op-inl.h"

namespace tessera::op {

SortSpec SortSpecOf(const NodeAttrs& attrs) {
  SortSpec s;
  const std::string& name = attrs.op->name();
  if (name == "sort") {
    const auto& p = ParamsOf<SortParam>(attrs);
    s.axis = p.axis;
    s.ascend = p.is_ascend;
    s.hidden_indices = true;
  } else if (name == "argsort") {
    const auto& p = ParamsOf<ArgsortParam>(attrs);
    s.axis = p.axis;
    s.ascend = p.is_ascend;
    s.ret = kTopKIndices;
    s.index_dtype = p.dtype;
  } else {
    const auto& p = ParamsOf<TopKParam>(attrs);
    s.axis = p.axis;
    s.k = p.k;
    s.ret = p.ret_typ;
    s.ascend = p.is_ascend;
    s.hidden_indices = p.ret_typ == kTopKValue;
    s.index_dtype = p.ret_typ == kTopKBoth ? p.dtype : DType::kInt64;
    if (p.ret_typ == kTopKIndices) s.index_dtype = p.dtype;
  }
  return s;
}

namespace {

// The data as (pre, n, post) rows around the axis (None: one flat row).
AxisSplit SortSplit(const NodeAttrs& attrs, const std::optional<int>& axis, const Shape& data) {
  if (!axis) return AxisSplit{1, data.Size(), 1};
  const std::string label = OpLabel(attrs);
  return SplitAt(data, NormalizeAxis(*axis, data.ndim(), label.c_str()));
}

int64_t KOf(const NodeAttrs& attrs, const SortSpec& s, const Shape& data, int64_t n) {
  if (s.k < 1) return n;
  TS_CHECK(s.k <= n) << OpLabel(attrs) << ": k = " << s.k << " is larger than the " << n
                     << " elements along the axis of shape " << data;
  return s.k;
}

uint32_t NumOutputs(const NodeAttrs& attrs) {
  const SortSpec s = SortSpecOf(attrs);
  return s.hidden_indices || s.ret == kTopKBoth ? 2 : 1;
}

uint32_t NumVisibleOutputs(const NodeAttrs& attrs) {
  return SortSpecOf(attrs).hidden_indices ? 1 : NumOutputs(attrs);
}

bool SortShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  const Shape& x = (*in)[0];
  if (!x.known()) return false;
  const SortSpec s = SortSpecOf(attrs);
  const AxisSplit a = SortSplit(attrs, s.axis, x);
  const int64_t k = KOf(attrs, s, x, a.n);
  Shape picked = x;
  if (!s.axis)
    picked = Shape{k};
  else
    picked[NormalizeAxis(*s.axis, x.ndim(), "")] = k;
  for (size_t i = 0; i < out->size(); ++i)
    AssignShape(attrs, out, i, s.ret == kTopKMask ? x : picked, "output");
  return true;
}

bool SortType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  const SortSpec s = SortSpecOf(attrs);
  TS_CHECK(t != DType::kBool) << OpLabel(attrs) << ": cannot sort bool data";
  TS_CHECK(s.index_dtype != DType::kBool)
      << OpLabel(attrs) << ": indices cannot be stored as bool (choose a numeric dtype)";
  if (s.ret == kTopKIndices) {
    AssignType(attrs, out, 0, s.index_dtype, "output");
  } else {
    AssignType(attrs, out, 0, t, "output");
    if (out->size() > 1) AssignType(attrs, out, 1, s.index_dtype, "output");
  }
  return true;
}

// NaN sorts as the largest value, so the order is a strict weak ordering
// for every input (std::stable_sort needs one).
template <typename V>
bool LessNanLast(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
  }
  return a < b;
}

template <typename T, typename I>
void SortRows(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
              const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  using V = AccType<T>;
  const SortSpec s = SortSpecOf(attrs);
  const AxisSplit a = SortSplit(attrs, s.axis, in[0].shape());
  const int64_t k = KOf(attrs, s, in[0].shape(), a.n), rows = a.pre * a.post;
  const T* data = in[0].dptr<T>();
  // Outputs by role.
  T* values = nullptr;
  T* mask = nullptr;
  I* indices = nullptr;
  int64_t* hidden = nullptr;
  OpReqType value_req = kNullOp, index_req = kNullOp;
  if (s.ret == kTopKIndices) {
    indices = out[0].dptr<I>();
    index_req = req[0];
  } else if (s.ret == kTopKMask) {
    mask = out[0].dptr<T>();
    value_req = req[0];
  } else {
    values = out[0].dptr<T>();
    value_req = req[0];
    if (s.hidden_indices) {
      if (req[1] != kNullOp) hidden = out[1].dptr<int64_t>();
    } else {
      indices = out[1].dptr<I>();
      index_req = req[1];
    }
  }
  if (mask && value_req != kAddTo && value_req != kNullOp) {
    for (int64_t i = 0; i < in[0].Size(); ++i) mask[i] = T(0);
  }
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, in[0].Size() * 4);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1)
#endif
  {
    std::vector<int64_t> order(static_cast<size_t>(a.n));
    std::vector<V> vals(static_cast<size_t>(a.n));
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t p = row / a.post, j = row % a.post;
      const T* src = data + p * a.n * a.post + j;
      for (int64_t e = 0; e < a.n; ++e) vals[size_t(e)] = static_cast<V>(src[e * a.post]);
      std::iota(order.begin(), order.end(), int64_t{0});
      if (s.ascend)
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return LessNanLast(vals[size_t(x)], vals[size_t(y)]);
        });
      else
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return LessNanLast(vals[size_t(y)], vals[size_t(x)]);
        });
      for (int64_t r = 0; r < k; ++r) {
        const int64_t from = order[size_t(r)];
        const int64_t o = (p * k + r) * a.post + j;
        if (mask) {
          if (value_req == kAddTo)
            AssignReq<kAddTo>(mask[(p * a.n + from) * a.post + j], T(1));
          else if (value_req != kNullOp)
            mask[(p * a.n + from) * a.post + j] = T(1);
          continue;
        }
        if (values) {
          if (value_req == kAddTo)
            AssignReq<kAddTo>(values[o], src[from * a.post]);
          else if (value_req != kNullOp)
            values[o] = src[from * a.post];
        }
        if (hidden) hidden[o] = from;
        if (indices) {
          const I v = static_cast<I>(static_cast<AccType<I>>(from));
          if (index_req == kAddTo)
            AssignReq<kAddTo>(indices[o], v);
          else if (index_req != kNullOp)
            indices[o] = v;
        }
      }
    }
  }
}

void SortCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const SortSpec s = SortSpecOf(attrs);
  const char* name = attrs.op->name().c_str();
  SwitchNumericDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchNumericDType(
            s.index_dtype,
            [&](auto itag) {
              using I = typename decltype(itag)::type;
              SortRows<T, I>(attrs, ctx, in, req, out);
            },
            name);
      },
      name);
}

// Inputs: gradient of the values (pre, k, post), their positions (any
// dtype), the forward data (for its shape). Positions within a row are
// distinct, so every element is written once.
void SortBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const AxisSplit a = SortSplit(attrs, ParamsOf<SortBackwardParam>(attrs).axis, out[0].shape());
  const int64_t k = in[0].Size() / (a.pre * a.post);
  if (req[0] != kAddTo) ZeroBlob<cpu>(ctx.run_ctx, out[0]);
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchDType(in[1].dtype(), [&](auto itag) {
          using I = typename decltype(itag)::type;
          const T* og = in[0].dptr<T>();
          const I* idx = in[1].dptr<I>();
          T* grad = out[0].dptr<T>();
          for (int64_t i = 0; i < in[0].Size(); ++i) {
            const int64_t j = i % a.post, p = i / (k * a.post);
            const int64_t from = MapIndex<kIndexClip>(IndexValue(idx[i]), a.n);
            AssignReq<kAddTo>(grad[(p * a.n + from) * a.post + j], og[i]);
          }
        });
      },
      "_backward_sort");
}

// The output gradient and the positions (inputs 0 and 1) have the data's
// shape (input 2) with k of its n entries along the axis (all of them
// flattened when the axis is None), as sort and topk made them: the kernel
// walks them by the data's rows.
bool SortBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 3) << OpLabel(attrs) << ": expects 3 inputs";
  const Shape& data = (*in)[2];
  AssignShape(attrs, out, 0, data, "output");
  AssignShape(attrs, in, 1, (*in)[0], "input");
  AssignShape(attrs, in, 0, (*in)[1], "input");
  const Shape& og = (*in)[0];
  if (!data.known() || !og.known()) return false;
  const std::optional<int> axis = ParamsOf<SortBackwardParam>(attrs).axis;
  const AxisSplit a = SortSplit(attrs, axis, data);
  const int64_t k = og.Size() / (a.pre * a.post);
  Shape want = axis ? data : Shape{k};
  if (axis) want[NormalizeAxis(*axis, data.ndim(), "")] = k;
  TS_CHECK(k >= 1 && k <= a.n && og == want)
      << OpLabel(attrs) << ": the output gradient has shape " << og << ", which is not the data's "
      << data << " with at most " << a.n << " entries along the axis";
  return true;
}

bool SortBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*out)[0] != DType::kUnknown;
}

// Values: scatter back through the index output; indices and masks: zero.
std::vector<NodeEntry> SortGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  const SortSpec s = SortSpecOf(n->attrs);
  if (s.ret == kTopKIndices || s.ret == kTopKMask) return MakeZeroGradNodes(n);
  return MakeBackwardNode("_backward_sort", n, {og[0], NodeEntry{n, 1, 0}, n->inputs[0]},
                          {{"axis", FormatValue(s.axis)}});
}

std::vector<std::string> DataName(const NodeAttrs&) {
  return {"data"};
}

}  // namespace

TS_REGISTER_OP(sort)
    .describe(R"(Sorts along an axis (stable: equal elements keep their order).

sort([[3, 1, 2], [1, 1, 0]]) = [[1, 2, 3], [0, 1, 1]].)")
    .set_num_inputs(1)
    .set_num_outputs(NumOutputs)
    .set_attr_parser(ParamParser<SortParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(SortParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", NumVisibleOutputs)
    .set_attr<FInferShape>("FInferShape", SortShape)
    .set_attr<FInferType>("FInferType", SortType)
    .set_attr<FCompute>(kFComputeCPU, SortCompute)
    .set_attr<FGradient>("FGradient", SortGrad);

TS_REGISTER_OP(argsort)
    .describe(R"(The positions (0-based) that would sort the array along an axis
(stable). argsort([[3, 1, 2]]) = [[1, 2, 0]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<ArgsortParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(ArgsortParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", SortShape)
    .set_attr<FInferType>("FInferType", SortType)
    .set_attr<FCompute>(kFComputeCPU, SortCompute)
    .set_attr<FGradient>("FGradient", SortGrad);

TS_REGISTER_OP(topk)
    .describe(R"(The k largest (or smallest) elements along an axis, as values,
0-based positions, a mask, or values and positions.

topk([[3, 1, 2]], k=2) = [[0, 2]]; with ret_typ='value', [[3, 2]]; with
ret_typ='mask', [[1, 0, 1]]. Ties keep their order.)")
    .set_num_inputs(1)
    .set_num_outputs(NumOutputs)
    .set_attr_parser(ParamParser<TopKParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(TopKParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", NumVisibleOutputs)
    .set_attr<FInferShape>("FInferShape", SortShape)
    .set_attr<FInferType>("FInferType", SortType)
    .set_attr<FCompute>(kFComputeCPU, SortCompute)
    .set_attr<FGradient>("FGradient", SortGrad);

TS_REGISTER_OP(_backward_sort)
    .describe(
        "Gradient of sort and topk values: the output gradient (input 0) added at the "
        "positions (input 1) of zeros shaped like the data (input 2).")
    .set_num_inputs(3)
    .set_attr_parser(ParamParser<SortBackwardParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", SortBackwardShape)
    .set_attr<FInferType>("FInferType", SortBackwardType)
    .set_attr<FCompute>(kFComputeCPU, SortBackwardCompute);

}  // namespace tessera::op
