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

// The CPU's sort: std::stable_sort of each row's positions, rows shared
// among the op's threads.
template <typename T, typename I>
void StableSortRows(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  using V = AccType<T>;
  const SortSpec s = SortSpecOf(attrs);
  const SortRows g = SortRowsOf(attrs, s, in[0].shape());
  const T* data = in[0].dptr<T>();
  const SortOutputs<T, I> o = SortOutputsOf<T, I>(s, req, out);
  if (o.mask && o.value_req != kAddTo && o.value_req != kNullOp) ZeroBlob<cpu>(ctx.run_ctx, out[0]);
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, in[0].Size() * 4);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1)
#endif
  {
    std::vector<int64_t> order(static_cast<size_t>(g.n));
    std::vector<V> vals(static_cast<size_t>(g.n));
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t row = 0; row < g.rows(); ++row) {
      for (int64_t e = 0; e < g.n; ++e) vals[size_t(e)] = static_cast<V>(data[g.At(row, e)]);
      std::iota(order.begin(), order.end(), int64_t{0});
      if (s.ascend)
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return LessNanLast(vals[size_t(x)], vals[size_t(y)]);
        });
      else
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return LessNanLast(vals[size_t(y)], vals[size_t(x)]);
        });
      for (int64_t r = 0; r < g.k; ++r) o.Emit(g, data, row, r, order[size_t(r)]);
    }
  }
}

void SortCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchSortTypes(attrs, in[0].dtype(), SortSpecOf(attrs), [&](auto tag, auto itag) {
    StableSortRows<typename decltype(tag)::type, typename decltype(itag)::type>(attrs, ctx, in, req,
                                                                                out);
  });
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

// The GPU's sort keeps each row's pairs in temp space (sort_bitonic-inl.h).
std::vector<ResourceRequest> TempSpaceRequest(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

SortRows SortRowsOf(const NodeAttrs& attrs, const SortSpec& s, const Shape& data) {
  const AxisSplit a = SortSplit(attrs, s.axis, data);
  return SortRows{a.pre, a.n, a.post, KOf(attrs, s, data, a.n)};
}

// What sort, argsort and topk register alike: one input, the parameters of
// `Param`, and the one kernel and gradient that serve all three.
#define TS_SORT_LIKE_OP(name, Param)                                    \
  TS_REGISTER_OP(name)                                                  \
      .set_num_inputs(1)                                                \
      .set_attr_parser(ParamParser<Param>)                              \
      .add_argument("data", "NDArray", "Input array.")                  \
      .add_arguments(Param::Fields())                                   \
      .set_attr<FListInputNames>("FListInputNames", DataName)           \
      .set_attr<FInferShape>("FInferShape", SortShape)                  \
      .set_attr<FInferType>("FInferType", SortType)                     \
      .set_attr<FResourceRequest>("FResourceRequest", TempSpaceRequest) \
      .set_attr<FCompute>(kFComputeCPU, SortCompute)                    \
      .set_attr<FGradient>("FGradient", SortGrad)

TS_SORT_LIKE_OP(sort, SortParam)
    .describe(R"(Sorts along an axis (stable: equal elements keep their order).

sort([[3, 1, 2], [1, 1, 0]]) = [[1, 2, 3], [0, 1, 1]].)")
    .set_num_outputs(NumOutputs)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", NumVisibleOutputs);

TS_SORT_LIKE_OP(argsort, ArgsortParam)
    .describe(R"(The positions (0-based) that would sort the array along an axis
(stable). argsort([[3, 1, 2]]) = [[1, 2, 0]].)");

TS_SORT_LIKE_OP(topk, TopKParam)
    .describe(R"(The k largest (or smallest) elements along an axis, as values,
0-based positions, a mask, or values and positions.

topk([[3, 1, 2]], k=2) = [[0, 2]]; with ret_typ='value', [[3, 2]]; with
ret_typ='mask', [[1, 0, 1]]. Ties keep their order.)")
    .set_num_outputs(NumOutputs)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", NumVisibleOutputs);

TS_REGISTER_OP(_backward_sort)
    .describe(
        "Gradient of sort and topk values: the output gradient (input 0) added at the "
        "positions (input 1) of zeros shaped like the data (input 2).")
    .set_num_inputs(3)
    .set_attr_parser(ParamParser<SortBackwardParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", SortBackwardShape)
    .set_attr<FInferType>("FInferType", SortBackwardType)
    .set_attr<FCompute>(kFComputeCPU, SortBackwardCompute<cpu>);

}  // namespace tessera::op
