// UpSampling with sample_type 'nearest': each pixel of (batch, channel,
// height, width) becomes a scale x scale block; the backward sums each block
// of the output gradient. 'bilinear' is MXNet's: a depthwise Deconvolution
// of the data by the weight input (a bilinear kernel, mx.init.Bilinear),
// run through the Deconvolution op. Several inputs are refused with a clear
// error.
#include "ops/nn/upsampling-inl.h"

namespace tessera::op {

namespace {

void CheckSupported(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<UpSamplingParam>(attrs);
  TS_CHECK(p.sample_type == kUpBilinear || p.num_args == 1)
      << OpLabel(attrs) << ": " << p.num_args << " inputs given; only one input is supported";
  TS_CHECK(p.sample_type == kUpNearest || p.num_filter > 0)
      << OpLabel(attrs) << ": sample_type 'bilinear' needs num_filter (the channels)";
}

bool UpSamplingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckSupported(attrs);
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  TS_CHECK(s.ndim() == 4) << OpLabel(attrs)
                          << ": data must be (batch, channel, height, width), got " << s;
  const auto& p = ParamsOf<UpSamplingParam>(attrs);
  const int64_t k = p.scale;
  if (p.sample_type == kUpBilinear) {
    TS_CHECK(s[1] == p.num_filter) << OpLabel(attrs) << ": data " << s << " has " << s[1]
                                   << " channels but num_filter is " << p.num_filter;
    const int64_t kk = 2 * k - k % 2;
    AssignShape(attrs, in, 1, Shape{s[1], 1, kk, kk}, "weight");
  }
  const std::string label = OpLabel(attrs);
  AssignShape(attrs, out, 0, Shape{s[0], s[1], MulDims(s[2], k, label), MulDims(s[3], k, label)},
              "output");
  return true;
}

bool UpSamplingBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                             std::vector<Shape>* out) {
  const Shape& g = (*in)[0];
  if (!g.known()) return false;
  const int64_t k = ParamsOf<UpSamplingParam>(attrs).scale;
  AssignShape(attrs, out, 0, Shape{g[0], g[1], g[2] / k, g[3] / k}, "output");
  return true;
}

}  // namespace

TS_REGISTER_OP(UpSampling)
    .describe(R"(Up-sampling of (batch, channel, height, width) by `scale`: 'nearest'
repeats each pixel as a scale x scale block; 'bilinear' (MXNet's) is a
Deconvolution of each channel by the weight input, (C, 1, 2 scale - scale %
2, same), stride scale, pad ceil((scale - 1) / 2), which mx.init.Bilinear
makes a bilinear interpolation kernel (and training may change).

UpSampling([[[[1, 2]]]], scale=2, sample_type='nearest') = [[[[1, 1, 2, 2], [1, 1, 2, 2]]]].)")
    .set_num_inputs([](const NodeAttrs& attrs) { return IsBilinear(attrs) ? 2u : 1u; })
    .set_attr_parser(ParamParser<UpSamplingParam>)
    .add_argument("data", "NDArray", "The images, (batch, channel, height, width).")
    .add_argument("weight", "NDArray",
                  "bilinear only: the kernel, (channel, 1, 2 scale - scale % 2, same).")
    .add_arguments(UpSamplingParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs& attrs) {
                                 return IsBilinear(attrs)
                                            ? std::vector<std::string>{"data", "weight"}
                                            : std::vector<std::string>{"data"};
                               })
    .set_attr<FInferShape>("FInferShape", UpSamplingShape)
    .set_attr<FInferType>("FInferType", SameTypeAll)
    .set_attr<FResourceRequest>(
        "FResourceRequest",
        [](const NodeAttrs& attrs) {
          return IsBilinear(attrs) ? std::vector<ResourceRequest>{ResourceRequest::kTempSpace}
                                   : std::vector<ResourceRequest>{};
        })
    .set_attr<FCompute>(kFComputeCPU, UpSamplingForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& g) {
      if (!IsBilinear(n->attrs)) return MakeGradNode("_backward_UpSampling", n, {g[0]});
      // The Deconvolution's gradient: data and weight.
      NodeEntry b = MakeNode("_backward_Deconvolution", n->attrs.name + "_backward",
                             {g[0], n->inputs[0], n->inputs[1]}, DeconvDict(n->attrs));
      b.node->control_deps.push_back(n);
      return std::vector<NodeEntry>{NodeEntry{b.node, 0, 0}, NodeEntry{b.node, 1, 0}};
    });

TS_REGISTER_OP(_backward_UpSampling)
    .describe("Gradient of UpSampling: the sum of each scale x scale block.")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<UpSamplingParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", UpSamplingBackwardShape)
    .set_attr<FInferType>("FInferType", SameTypeAll)
    .set_attr<FCompute>(kFComputeCPU, UpSamplingBackward<cpu>);

}  // namespace tessera::op
