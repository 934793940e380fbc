#include "ops/tensor/diag_op-inl.h"

namespace tessera::op {

int64_t RowMajorStride(const Shape& s, int axis) {
  int64_t n = 1;
  for (int d = axis + 1; d < s.ndim(); ++d) n *= s[d];
  return n;
}

DiagGeom MakeDiagGeom(const Shape& s, int a1, int a2, int64_t k) {
  DiagGeom g;
  for (int d = 0; d < s.ndim(); ++d) {
    if (d == a1 || d == a2) continue;
    g.rest_dims[g.nrest] = s[d];
    g.rest_strides[g.nrest] = RowMajorStride(s, d);
    ++g.nrest;
  }
  const int64_t len = k >= 0 ? std::min(s[a1], s[a2] - k) : std::min(s[a1] + k, s[a2]);
  g.len = std::max<int64_t>(len, 0);
  g.step = RowMajorStride(s, a1) + RowMajorStride(s, a2);
  g.start = std::max<int64_t>(-k, 0) * RowMajorStride(s, a1) +
            std::max<int64_t>(k, 0) * RowMajorStride(s, a2);
  return g;
}

Shape DiagOutputShape(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<DiagParam>(attrs);
  const std::string label = OpLabel(attrs);
  TS_CHECK(s.ndim() >= 1) << label << ": the input has no axes";
  if (s.ndim() == 1) {
    const int64_t m = s[0] + (p.k < 0 ? -p.k : p.k);
    return Shape{m, m};
  }
  const int a1 = NormalizeAxis(p.axis1, s.ndim(), label.c_str());
  const int a2 = NormalizeAxis(p.axis2, s.ndim(), label.c_str());
  TS_CHECK(a1 != a2) << label << ": axis1 and axis2 are the same axis (" << a1 << ")";
  const DiagGeom g = MakeDiagGeom(s, a1, a2, p.k);
  TS_CHECK(g.len > 0) << label << ": diagonal " << p.k << " is outside the " << s[a1] << "x"
                      << s[a2] << " plane of axes " << a1 << " and " << a2 << " of " << s;
  std::vector<int64_t> dims;
  for (int d = 0; d < s.ndim(); ++d)
    if (d != a1 && d != a2) dims.push_back(s[d]);
  dims.push_back(g.len);
  return Shape(dims);
}

namespace {

bool DiagShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1 && out->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, out, 0, DiagOutputShape(attrs, (*in)[0]), "output");
  return true;
}

// The output gradient (input 0) must have diag's output shape for the
// forward input (input 1); the input gradient has the forward input's.
bool DiagGradShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2 && out->size() == 1) << OpLabel(attrs) << ": expects 2 inputs";
  AssignShape(attrs, out, 0, (*in)[1], "output");
  if (!(*in)[1].known()) return false;
  AssignShape(attrs, in, 0, DiagOutputShape(attrs, (*in)[1]), "output gradient");
  return (*out)[0].known();
}

}  // namespace

TS_REGISTER_OP(diag)
    .describe(R"(A 1-D input becomes a square matrix with it on diagonal k; an input of
2 or more axes gives its diagonal k in the plane of (axis1, axis2), those
axes removed and the diagonal appended last (MXNet's diag).

Example: diag([1, 2]) = [[1, 0], [0, 2]]; diag([1, 2], k=1) = [[0, 1, 0],
[0, 0, 2], [0, 0, 0]]; diag([[1, 2], [3, 4]]) = [1, 4]; diag of the same
with k=-1 = [3].)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<DiagParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(DiagParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", DiagShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, DiagCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_diag", n, {og[0], n->inputs[0]});  // with k and the axes
    });

TS_REGISTER_OP(_backward_diag)
    .describe(
        "Gradient of diag: the diagonal of the output gradient (input 0) for a 1-D forward "
        "input, else the output gradient on the diagonal of zeros shaped as the forward input "
        "(input 1, read for its shape).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<DiagParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", DiagGradShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<2, 1>)
    .set_attr<FCompute>(kFComputeCPU, DiagGradCompute<cpu>);

}  // namespace tessera::op
