#include "ops/tensor/concat_op-inl.h"
#include "ops/tensor/shape_grad_util.h"

namespace tessera::op {

int ConcatAxis(const NodeAttrs& attrs, int ndim) {
  const std::string label = OpLabel(attrs);
  return NormalizeAxis(ParamsOf<ConcatParam>(attrs).dim, ndim, label.c_str());
}
int StackAxis(const NodeAttrs& attrs, int out_ndim) {
  const std::string label = OpLabel(attrs);
  return NormalizeAxis(ParamsOf<StackParam>(attrs).axis, out_ndim, label.c_str());
}
int SplitAxis(const NodeAttrs& attrs, int ndim) {
  const std::string label = OpLabel(attrs);
  return NormalizeAxis(ParamsOf<SplitParam>(attrs).axis, ndim, label.c_str());
}

namespace {

// The number of axes of the first known shape among `a` and `b` (0: none).
int KnownNdim(const std::vector<Shape>& a, const std::vector<Shape>& b) {
  for (const Shape& s : a)
    if (s.ndim()) return s.ndim();
  for (const Shape& s : b)
    if (s.ndim()) return s.ndim();
  return 0;
}

// Concat along `axis` of `parts` into `whole` (mutual): every axis but `axis`
// agrees everywhere; the sizes along `axis` add up, and one unknown part
// size is filled from the total.
bool ConcatShapes(const NodeAttrs& attrs, std::vector<Shape>* parts, Shape* whole, int ndim,
                  int axis) {
  const std::string label = OpLabel(attrs);
  Shape common = Shape::Filled(ndim);
  auto merge_common = [&](const Shape& s, const char* what, size_t i) {
    if (s.ndim() == 0) return;
    TS_CHECK(s.ndim() == ndim) << label << ": " << what << " " << i << " has shape " << s
                               << " but the others have " << ndim << " axes";
    for (int d = 0; d < ndim; ++d) {
      if (d == axis || s[d] == 0) continue;
      TS_CHECK(common[d] == 0 || common[d] == s[d])
          << label << ": " << what << " " << i << " has shape " << s << ", whose axis " << d
          << " differs from the size " << common[d] << " of the others (only axis " << axis
          << " may differ)";
      common[d] = s[d];
    }
  };
  for (size_t i = 0; i < parts->size(); ++i) merge_common((*parts)[i], "input", i);
  merge_common(*whole, "output", 0);
  int64_t total = 0;
  int unknown = -1, n_unknown = 0;
  for (size_t i = 0; i < parts->size(); ++i) {
    Shape& s = (*parts)[i];
    if (s.ndim() == 0) s = Shape::Filled(ndim);
    for (int d = 0; d < ndim; ++d)
      if (d != axis) s[d] = common[d];
    if (s[axis] == 0) {
      unknown = static_cast<int>(i);
      ++n_unknown;
    } else {
      total = AddDims(total, s[axis], label);
    }
  }
  Shape w = whole->ndim() ? *whole : Shape::Filled(ndim);
  for (int d = 0; d < ndim; ++d)
    if (d != axis) w[d] = common[d];
  if (n_unknown == 0) {
    TS_CHECK(w[axis] == 0 || w[axis] == total)
        << label << ": the inputs add up to " << total << " on axis " << axis
        << " but the output has shape " << *whole;
    w[axis] = total;
  } else if (n_unknown == 1 && w[axis] != 0) {
    TS_CHECK(w[axis] > total) << label << ": output " << *whole << " is too small for the inputs";
    (*parts)[static_cast<size_t>(unknown)][axis] = w[axis] - total;
  }
  *whole = w;
  bool known = whole->known();
  for (const Shape& s : *parts) known = known && s.known();
  return known;
}

bool ConcatShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const int ndim = KnownNdim(*in, *out);
  if (ndim == 0) return false;
  const int axis = ConcatAxis(attrs, ndim);
  std::vector<Shape> parts = *in;
  Shape whole = (*out)[0];
  const bool known = ConcatShapes(attrs, &parts, &whole, ndim, axis);
  for (size_t i = 0; i < in->size(); ++i) AssignShape(attrs, in, i, parts[i], "input");
  AssignShape(attrs, out, 0, whole, "output");
  return known;
}

// Backward: input 0 is the gradient of the whole, inputs 1.. the forward
// inputs; the outputs take their shapes.
bool ConcatBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, (*in)[i + 1], "output");
  const int ndim = (*in)[0].ndim();
  if (ndim == 0) return false;
  std::vector<Shape> parts = *out;
  Shape whole = (*in)[0];
  const bool known = ConcatShapes(attrs, &parts, &whole, ndim, ConcatAxis(attrs, ndim));
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, parts[i], "output");
  return known;
}

bool StackShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const int n = ParamsOf<StackParam>(attrs).num_args;
  const std::string label = OpLabel(attrs);
  // Every input has one shape: the output without the stacked axis.
  Shape common;
  for (size_t i = 0; i < in->size(); ++i)
    TS_CHECK(MergeShape(&common, (*in)[i]))
        << label << ": input " << i << " has shape " << (*in)[i] << " but input 0 has " << (*in)[0]
        << " (stack needs equal shapes)";
  const Shape& o = (*out)[0];
  if (o.ndim() > 1) {
    const int axis = StackAxis(attrs, o.ndim());
    std::vector<int64_t> dims = o.ToVector();
    dims.erase(dims.begin() + axis);
    TS_CHECK(MergeShape(&common, Shape(dims)))
        << label << ": output " << o << " does not match inputs of shape " << common;
  }
  if (common.ndim() == 0) return false;
  TS_CHECK(common.ndim() < Shape::kMaxNdim)
      << label << ": inputs " << common << " already have the most axes an array can have";
  for (size_t i = 0; i < in->size(); ++i) AssignShape(attrs, in, i, common, "input");
  const int axis = StackAxis(attrs, common.ndim() + 1);
  std::vector<int64_t> dims = common.ToVector();
  dims.insert(dims.begin() + axis, n);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return common.known();
}

bool SplitShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<SplitParam>(attrs);
  const std::string label = OpLabel(attrs);
  TS_CHECK(in->size() == 1) << label << ": expects 1 input";
  // The input from a known output, when it is still unknown.
  if ((*in)[0].ndim() == 0) {
    for (const Shape& o : *out) {
      if (!o.known()) continue;
      std::vector<int64_t> dims = o.ToVector();
      const int ndim = o.ndim() + (p.squeeze_axis ? 1 : 0);
      const int axis = SplitAxis(attrs, ndim);
      if (p.squeeze_axis)
        dims.insert(dims.begin() + axis, p.num_outputs);
      else
        dims[static_cast<size_t>(axis)] =
            MulDims(dims[static_cast<size_t>(axis)], p.num_outputs, label);
      AssignShape(attrs, in, 0, Shape(dims), "input");
      break;
    }
  }
  const Shape& x = (*in)[0];
  if (!x.known()) return false;
  const int axis = SplitAxis(attrs, x.ndim());
  TS_CHECK(x[axis] % p.num_outputs == 0)
      << label << ": cannot split axis " << p.axis << " of shape " << x << " into " << p.num_outputs
      << " equal parts";
  std::vector<int64_t> dims = x.ToVector();
  if (p.squeeze_axis) {
    TS_CHECK(x[axis] == p.num_outputs)
        << label << ": squeeze_axis needs num_outputs (" << p.num_outputs
        << ") equal to the size of axis " << p.axis << " of shape " << x;
    dims.erase(dims.begin() + axis);
    if (dims.empty()) dims.push_back(1);
  } else {
    dims[static_cast<size_t>(axis)] /= p.num_outputs;
  }
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, Shape(dims), "output");
  return true;
}

bool AllSameType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return SameTypeAll(attrs, in, out);
}

uint32_t ConcatNumArgs(const NodeAttrs& attrs) {
  return static_cast<uint32_t>(ParamsOf<ConcatParam>(attrs).num_args);
}

}  // namespace

TS_REGISTER_OP(concat)
    .add_alias("Concat")
    .describe(R"(Joins arrays along an existing axis `dim`; the other axes must agree.

concat([[1, 2]], [[3, 4], [5, 6]], dim=0, num_args=2) = [[1, 2], [3, 4], [5, 6]].)")
    .set_num_inputs(ConcatNumArgs)
    .set_attr_parser(ParamParser<ConcatParam>)
    .set_key_var_num_args("num_args")
    .add_argument("data", "NDArray[]", "The arrays to join.")
    .add_arguments(ConcatParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs& attrs) {
                                 return NumberedNames("arg", ConcatNumArgs(attrs));
                               })
    .set_attr<FInferShape>("FInferShape", ConcatShape)
    .set_attr<FInferType>("FInferType", AllSameType)
    .set_attr<FCompute>(kFComputeCPU, ConcatCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      std::vector<NodeEntry> in{og[0]};
      in.insert(in.end(), n->inputs.begin(), n->inputs.end());
      return MakeGradNode("_backward_concat", n, std::move(in));
    });

TS_REGISTER_OP(_backward_concat)
    .describe(
        "Gradient of concat: input 0 (the output gradient) cut into the shapes of the forward "
        "inputs (inputs 1..num_args, read only for their shapes).")
    .set_num_inputs([](const NodeAttrs& attrs) { return ConcatNumArgs(attrs) + 1; })
    .set_num_outputs(ConcatNumArgs)
    .set_attr_parser(ParamParser<ConcatParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ConcatBackwardShape)
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            for (size_t i = 0; i < out->size(); ++i)
                              AssignType(attrs, out, i, (*in)[0], "output");
                            return (*in)[0] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, ConcatBackwardCompute<cpu>);

TS_REGISTER_OP(stack)
    .describe(R"(Joins arrays of one shape along a new axis `axis`.

stack([1, 2], [3, 4], axis=0, num_args=2) = [[1, 2], [3, 4]]; with axis=1,
[[1, 3], [2, 4]].)")
    .set_num_inputs([](const NodeAttrs& attrs) {
      return uint32_t(ParamsOf<StackParam>(attrs).num_args);
    })
    .set_attr_parser(ParamParser<StackParam>)
    .set_key_var_num_args("num_args")
    .add_argument("data", "NDArray[]", "The arrays to stack.")
    .add_arguments(StackParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs& attrs) {
                                 return NumberedNames("arg",
                                                      size_t(ParamsOf<StackParam>(attrs).num_args));
                               })
    .set_attr<FInferShape>("FInferShape", StackShape)
    .set_attr<FInferType>("FInferType", AllSameType)
    .set_attr<FCompute>(kFComputeCPU, StackCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      const auto& p = ParamsOf<StackParam>(n->attrs);
      return MakeBackwardNode("split", n, {og[0]},
                              {{"num_outputs", FormatValue(p.num_args)},
                               {"axis", FormatValue(p.axis)},
                               {"squeeze_axis", "True"}});
    });

TS_REGISTER_OP(split)
    .add_alias("SliceChannel")
    .describe(R"(Cuts an array into `num_outputs` equal parts along `axis`.

split([[1, 2, 3, 4]], num_outputs=2, axis=1) = [[1, 2]], [[3, 4]]. With
squeeze_axis=True (parts of size 1) the axis is removed from each part.)")
    .set_num_inputs(1)
    .set_num_outputs([](const NodeAttrs& attrs) {
      return uint32_t(ParamsOf<SplitParam>(attrs).num_outputs);
    })
    .set_attr_parser(ParamParser<SplitParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(SplitParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs& attrs) {
                                  return NumberedNames(
                                      "output", size_t(ParamsOf<SplitParam>(attrs).num_outputs));
                                })
    .set_attr<FInferShape>("FInferShape", SplitShape)
    .set_attr<FInferType>("FInferType", AllSameType)
    .set_attr<FCompute>(kFComputeCPU, SplitCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      const auto& p = ParamsOf<SplitParam>(n->attrs);
      const std::string count = FormatValue(p.num_outputs), axis = FormatValue(p.axis);
      if (p.squeeze_axis)
        return MakeBackwardNode("stack", n, og, {{"num_args", count}, {"axis", axis}});
      return MakeBackwardNode("concat", n, og, {{"num_args", count}, {"dim", axis}});
    });

}  // namespace tessera::op
