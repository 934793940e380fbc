#include "ops/tensor/shape_grad_util.h"
#include "ops/tensor/slice_op-inl.h"

#include <cctype>

namespace tessera::op {

bool ParseValue(std::string_view s, SliceIndices* out) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  };
  s = trim(s);
  out->v.clear();
  if (s == "None") return true;
  if (s.size() >= 2 &&
      ((s.front() == '(' && s.back() == ')') || (s.front() == '[' && s.back() == ']')))
    s = s.substr(1, s.size() - 2);
  while (!(s = trim(s)).empty()) {
    const size_t comma = s.find(',');
    std::optional<int64_t> item;
    if (!ParseValue(trim(s.substr(0, comma)), &item)) return false;
    out->v.push_back(item);
    if (comma == std::string_view::npos) break;
    s = s.substr(comma + 1);
  }
  return true;
}

std::string FormatValue(const SliceIndices& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.v.size(); ++i) s += (i ? "," : "") + FormatValue(v.v[i]);
  return s + (v.v.size() == 1 ? ",)" : ")");
}

namespace {

struct AxisRange {
  int64_t begin, step, count;
};

// Python's slice.indices() for one axis of size n. An empty result is an
// error: arrays here always have at least one element per axis.
AxisRange ResolveRange(const NodeAttrs& attrs, const Shape& data, int axis,
                       std::optional<int64_t> b, std::optional<int64_t> e, int64_t step) {
  const int64_t n = data[axis];
  TS_CHECK(step != 0) << OpLabel(attrs) << ": step is 0 on axis " << axis;
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += n;
    return std::min(std::max(x, lower), upper);
  };
  const int64_t begin = clamp(b, step > 0 ? lower : upper);
  const int64_t end = clamp(e, step > 0 ? upper : lower);
  const int64_t count = step > 0 ? (end > begin ? (end - begin + step - 1) / step : 0)
                                 : (begin > end ? (begin - end - step - 1) / -step : 0);
  TS_CHECK(count > 0) << OpLabel(attrs) << ": slice [" << FormatValue(b) << ":" << FormatValue(e)
                      << ":" << step << "] of axis " << axis << " of shape " << data
                      << " is empty (empty arrays are not supported)";
  return {begin, step, count};
}

std::vector<AxisRange> SliceRanges(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<SliceParam>(attrs);
  const std::string label = OpLabel(attrs);
  const size_t n = p.begin.v.size();
  TS_CHECK(p.end.v.size() == n) << label << ": begin " << FormatValue(p.begin) << " and end "
                                << FormatValue(p.end) << " have different lengths";
  TS_CHECK(p.step.v.empty() || p.step.v.size() == n)
      << label << ": step " << FormatValue(p.step) << " must be empty or as long as begin "
      << FormatValue(p.begin);
  TS_CHECK(n <= static_cast<size_t>(data.ndim())) << label << ": begin " << FormatValue(p.begin)
                                                  << " has more entries than the axes of " << data;
  std::vector<AxisRange> ranges;
  for (size_t d = 0; d < n; ++d) {
    const int64_t step = p.step.v.empty() ? 1 : p.step.v[d].value_or(1);
    ranges.push_back(ResolveRange(attrs, data, int(d), p.begin.v[d], p.end.v[d], step));
  }
  return ranges;
}

AxisRange SliceAxisRange(const NodeAttrs& attrs, const Shape& data, int* axis) {
  const auto& p = ParamsOf<SliceAxisParam>(attrs);
  const std::string label = OpLabel(attrs);
  *axis = NormalizeAxis(p.axis, data.ndim(), label.c_str());
  const int64_t n = data[*axis];
  int64_t b = p.begin, e = p.end.value_or(n);
  if (b < 0) b += n;
  if (e < 0) e += n;
  TS_CHECK(b >= 0 && e <= n && b < e)
      << label << ": begin " << p.begin << " and end " << FormatValue(p.end)
      << " are out of range for axis " << p.axis << " of shape " << data
      << " (need -size <= begin < end <= size)";
  return {b, 1, e - b};
}

Shape SlicedShape(const Shape& data, const std::vector<AxisRange>& ranges) {
  Shape out = data;
  for (size_t d = 0; d < ranges.size(); ++d) out[int(d)] = ranges[d].count;
  return out;
}

bool SliceShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, out, 0, SlicedShape((*in)[0], SliceRanges(attrs, (*in)[0])), "output");
  return true;
}

bool SliceAxisShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  if (!(*in)[0].known()) return false;
  int axis = 0;
  const AxisRange r = SliceAxisRange(attrs, (*in)[0], &axis);
  Shape s = (*in)[0];
  s[axis] = r.count;
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

bool SliceLikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs";
  const Shape &x = (*in)[0], &like = (*in)[1];
  if (!x.known() || !like.known()) return false;
  const auto& axes = ParamsOf<SliceLikeParam>(attrs).axes;
  const std::string label = OpLabel(attrs);
  Shape s = x;
  auto cut = [&](int ax_x, int ax_like) {
    TS_CHECK(like[ax_like] <= x[ax_x])
        << label << ": shape_like " << like << " is larger than data " << x << " on axis " << ax_x;
    s[ax_x] = like[ax_like];
  };
  if (axes.empty()) {
    TS_CHECK(x.ndim() == like.ndim()) << label << ": data " << x << " and shape_like " << like
                                      << " need the same number of axes when axes is empty";
    for (int d = 0; d < x.ndim(); ++d) cut(d, d);
  } else {
    for (int64_t a : axes) {
      const int ax = NormalizeAxis(a, x.ndim(), label.c_str());
      TS_CHECK(ax < like.ndim()) << label << ": axis " << a << " is out of range for shape_like "
                                 << like;
      cut(ax, ax);
    }
  }
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

// Backward: the output takes the forward input's shape (input 1), and the
// output gradient (input 0) the shape the forward op gives that input
// (slice_like's shape_like is the gradient itself): the kernel places it by
// the forward layout.
using ShapeFn = bool (*)(const NodeAttrs&, std::vector<Shape>*, std::vector<Shape>*);
bool SliceBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out,
                        ShapeFn forward, bool og_is_shape_like) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs";
  AssignShape(attrs, out, 0, (*in)[1], "output");
  const Shape &og = (*in)[0], &data = (*in)[1];
  if (og.known() && data.known()) {
    std::vector<Shape> fin{data}, fout(1);
    if (og_is_shape_like) fin.push_back(og);
    if (forward(attrs, &fin, &fout)) {
      TS_CHECK(og == fout[0]) << OpLabel(attrs) << ": the output gradient has shape " << og
                              << ", but the forward op gives input " << data << " the shape "
                              << fout[0];
    }
  }
  return (*out)[0].known() && og.known();
}

bool FirstInputType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*out)[0] != DType::kUnknown;
}

std::vector<NodeEntry> SliceGrad(const char* backward, const NodePtr& n,
                                 const std::vector<NodeEntry>& og) {
  return MakeGradNode(backward, n, {og[0], n->inputs[0]});
}

}  // namespace

StridedLayout SliceLayout(const NodeAttrs& attrs, const Shape& data, const Shape&) {
  const std::vector<AxisRange> ranges = SliceRanges(attrs, data);
  const std::vector<int64_t> st = ContiguousStrides(data);
  StridedLayout l;
  for (int d = 0; d < data.ndim(); ++d) {
    const int64_t s = st[static_cast<size_t>(d)];
    if (static_cast<size_t>(d) < ranges.size()) {
      const AxisRange& r = ranges[static_cast<size_t>(d)];
      l.offset += r.begin * s;
      l.Push(r.count, r.step * s);
    } else {
      l.Push(data[d], s);
    }
  }
  return l;
}

StridedLayout SliceAxisLayout(const NodeAttrs& attrs, const Shape& data, const Shape&) {
  int axis = 0;
  const AxisRange r = SliceAxisRange(attrs, data, &axis);
  const std::vector<int64_t> st = ContiguousStrides(data);
  StridedLayout l;
  for (int d = 0; d < data.ndim(); ++d) l.Push(d == axis ? r.count : data[d], st[size_t(d)]);
  l.offset = r.begin * st[static_cast<size_t>(axis)];
  return l;
}

TS_REGISTER_OP(slice)
    .add_alias("crop")
    .describe(R"(Cuts a box out of the input, Python-style, one (begin, end, step) per
leading axis.

For x = [[1, 2, 3], [4, 5, 6]]: slice(x, begin=(0, 1), end=(2, 3)) =
[[2, 3], [5, 6]]; slice(x, begin=(None, None), end=(None, None),
step=(-1, 2)) = [[4, 6], [1, 3]]. Indices past the ends are clamped; an
empty result is an error.)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<SliceParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(SliceParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", SliceShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, SliceCompute<cpu, SliceLayout>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return SliceGrad("_backward_slice", n, og);
    });

TS_REGISTER_OP(slice_axis)
    .describe(R"(Takes elements [begin, end) along one axis.

slice_axis([[1, 2, 3], [4, 5, 6]], axis=1, begin=1, end=None) = [[2, 3], [5, 6]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<SliceAxisParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(SliceAxisParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", SliceAxisShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, SliceCompute<cpu, SliceAxisLayout>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return SliceGrad("_backward_slice_axis", n, og);
    });

TS_REGISTER_OP(slice_like)
    .describe(R"(Cuts data to the shape of shape_like (on `axes`, or all axes),
starting at index 0 of each axis.

slice_like(x of (3,4), y of (2,3)) = x[0:2, 0:3].)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<SliceLikeParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_argument("shape_like", "NDArray", "The array whose shape is used (values not read).")
    .add_arguments(SliceLikeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "shape_like"}))
    .set_attr<FInferShape>("FInferShape", SliceLikeShape)
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, SliceCompute<cpu, CornerLayout>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      std::vector<NodeEntry> g = SliceGrad("_backward_slice_like", n, og);
      g.push_back(ZeroGradOf(n, 1));
      return g;
    });

TS_REGISTER_OP(_backward_slice)
    .describe(
        "Gradient of slice: the output gradient (input 0) placed in zeros of the forward "
        "input's shape (input 1, read only for its shape).")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<SliceParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                             return SliceBackwardShape(a, in, out, SliceShape, false);
                           })
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, SliceBackwardCompute<cpu, SliceLayout>);

TS_REGISTER_OP(_backward_slice_axis)
    .describe(
        "Gradient of slice_axis: the output gradient (input 0) placed in zeros of the "
        "forward input's shape (input 1, read only for its shape).")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<SliceAxisParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                             return SliceBackwardShape(a, in, out, SliceAxisShape, false);
                           })
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, SliceBackwardCompute<cpu, SliceAxisLayout>);

TS_REGISTER_OP(_backward_slice_like)
    .describe(
        "Gradient of slice_like: the output gradient (input 0) placed in zeros of the "
        "forward input's shape (input 1, read only for its shape).")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<SliceLikeParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                             return SliceBackwardShape(a, in, out, SliceLikeShape, true);
                           })
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, SliceBackwardCompute<cpu, CornerLayout>);

}  // namespace tessera::op
