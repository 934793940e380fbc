#include "ops/tensor/shape_grad_util.h"
#include "ops/tensor/shape_transpose_op-inl.h"

namespace tessera::op {

std::vector<int> TransposeAxes(const NodeAttrs& attrs, int ndim) {
  const auto& p = ParamsOf<TransposeParam>(attrs);
  std::vector<int> axes;
  if (p.axes.empty()) {
    for (int d = ndim - 1; d >= 0; --d) axes.push_back(d);
    return axes;
  }
  const std::string label = OpLabel(attrs);
  TS_CHECK(static_cast<int>(p.axes.size()) == ndim)
      << label << ": axes " << FormatValue(p.axes) << " must list all " << ndim
      << " axes of the input";
  std::vector<bool> seen(static_cast<size_t>(ndim), false);
  for (int64_t a : p.axes) {
    const int ax = NormalizeAxis(a, ndim, label.c_str());
    TS_CHECK(!seen[static_cast<size_t>(ax)]) << label << ": axes " << FormatValue(p.axes)
                                             << " is not a permutation (axis " << a << " repeats)";
    seen[static_cast<size_t>(ax)] = true;
    axes.push_back(ax);
  }
  return axes;
}

namespace {

bool TransposeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1 && out->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  const int ndim = std::max((*in)[0].ndim(), (*out)[0].ndim());
  if (ndim == 0) return false;
  const std::vector<int> axes = TransposeAxes(attrs, ndim);
  Shape si = (*in)[0].ndim() ? (*in)[0] : Shape::Filled(ndim);
  Shape so = (*out)[0].ndim() ? (*out)[0] : Shape::Filled(ndim);
  TS_CHECK(si.ndim() == ndim && so.ndim() == ndim)
      << OpLabel(attrs) << ": input " << si << " and output " << so
      << " have different numbers of axes";
  for (int d = 0; d < ndim; ++d) {
    int64_t& a = si[axes[static_cast<size_t>(d)]];
    int64_t& b = so[d];
    if (a == 0) a = b;
    if (b == 0) b = a;
  }
  AssignShape(attrs, in, 0, si, "input");
  AssignShape(attrs, out, 0, so, "output");
  return so.known();
}

std::vector<NodeEntry> TransposeGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  const auto& p = ParamsOf<TransposeParam>(n->attrs);
  ParamDict dict;
  if (!p.axes.empty()) {
    const std::vector<int> axes = TransposeAxes(n->attrs, static_cast<int>(p.axes.size()));
    std::vector<int64_t> inverse(axes.size());
    for (size_t d = 0; d < axes.size(); ++d) inverse[static_cast<size_t>(axes[d])] = int64_t(d);
    dict["axes"] = FormatValue(inverse);
  }
  return MakeBackwardNode("transpose", n, {ograds[0]}, dict);
}

}  // namespace

TS_REGISTER_OP(transpose)
    .describe(R"(Permutes the axes: output axis i is input axis axes[i].

transpose(x) reverses the axes (a matrix transpose for 2-D x); for x of shape
(2,3,4), transpose(x, axes=(1,0,2)) has shape (3,2,4).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<TransposeParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(TransposeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", TransposeShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, TransposeCompute<cpu>)
    .set_attr<FGradient>("FGradient", TransposeGrad);

}  // namespace tessera::op
