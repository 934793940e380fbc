// UpSampling with sample_type 'nearest': each pixel of (batch, channel,
// height, width) becomes a scale x scale block; the backward sums each block
// of the output gradient. 'bilinear' is MXNet's: a depthwise Deconvolution
// of the data by the weight input (a bilinear kernel, mx.init.Bilinear),
// run through the Deconvolution op. Several inputs are refused with a clear
// error.
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

namespace {

enum SampleType { kNearest, kBilinear };

// Runs a lambda on contiguous ranges, one per OpenMP thread.
struct RangeFn {
  template <typename F>
  static void Map(int64_t b, int64_t e, const F& f) {
    f(b, e);
  }
};

struct UpSamplingParam : Params<UpSamplingParam> {
  int scale = 1;
  int num_filter = 0;
  int sample_type = kNearest;
  std::string multi_input_mode = "concat";
  int num_args = 1;
  int64_t workspace = 512;
  static void Declare(ParamDecl<UpSamplingParam>& d) {
    d.field("scale", &UpSamplingParam::scale).set_lower_bound(1).describe("Up-sampling factor.");
    d.field("num_filter", &UpSamplingParam::num_filter)
        .set_default(0)
        .describe("Input channels (bilinear only).");
    d.field("sample_type", &UpSamplingParam::sample_type)
        .add_enum("nearest", kNearest)
        .add_enum("bilinear", kBilinear)
        .describe(
            "'nearest' repeats pixels; 'bilinear' is a depthwise Deconvolution by the "
            "weight input (MXNet's).");
    d.field("multi_input_mode", &UpSamplingParam::multi_input_mode)
        .set_default("concat")
        .describe("How several inputs combine (one input only is supported).");
    d.field("num_args", &UpSamplingParam::num_args)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Number of inputs.");
    d.field("workspace", &UpSamplingParam::workspace).set_default(512).describe("Unused.");
  }
};

bool IsBilinear(const NodeAttrs& attrs) {
  return ParamsOf<UpSamplingParam>(attrs).sample_type == kBilinear;
}

void CheckSupported(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<UpSamplingParam>(attrs);
  TS_CHECK(p.sample_type == kBilinear || p.num_args == 1)
      << OpLabel(attrs) << ": " << p.num_args << " inputs given; only one input is supported";
  TS_CHECK(p.sample_type == kNearest || p.num_filter > 0)
      << OpLabel(attrs) << ": sample_type 'bilinear' needs num_filter (the channels)";
}

// The Deconvolution a bilinear UpSampling is (MXNet's): kernel 2s - s % 2,
// stride s, pad ceil((s - 1) / 2), one group per channel, no bias.
ParamDict DeconvDict(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<UpSamplingParam>(attrs);
  const int s = p.scale, k = 2 * s - s % 2, pad = (s - 1 + 1) / 2;
  const std::string c = std::to_string(p.num_filter);
  auto pair = [](int v) { return "(" + std::to_string(v) + "," + std::to_string(v) + ")"; };
  return {{"kernel", pair(k)}, {"stride", pair(s)}, {"pad", pair(pad)},
          {"num_filter", c},   {"num_group", c},    {"no_bias", "True"}};
}

NodeAttrs DeconvAttrs(const NodeAttrs& attrs) {
  NodeAttrs d;
  d.op = Op::Get("Deconvolution");
  d.name = attrs.name;
  d.dict = DeconvDict(attrs);
  d.op->ParseAttrs(&d);
  return d;
}

bool UpSamplingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckSupported(attrs);
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  TS_CHECK(s.ndim() == 4) << OpLabel(attrs)
                          << ": data must be (batch, channel, height, width), got " << s;
  const auto& p = ParamsOf<UpSamplingParam>(attrs);
  const int64_t k = p.scale;
  if (p.sample_type == kBilinear) {
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

// Bilinear: the Deconvolution's kernel on the same inputs and resources.
void BilinearForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  static const auto& fcompute = Op::GetAttr<FCompute>(kFComputeCPU);
  const NodeAttrs d = DeconvAttrs(attrs);
  fcompute[d.op](d, ctx, in, req, out);
}

void UpSamplingForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  if (IsBilinear(attrs)) return BilinearForward(attrs, ctx, in, req, out);
  const int64_t k = ParamsOf<UpSamplingParam>(attrs).scale;
  const Shape& s = in[0].shape();
  const int64_t h = s[2], w = s[3], oh = h * k, ow = w * k;
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = in[0].dptr<T>();
        T* y = out[0].dptr<T>();
        const bool add = req[0] == kAddTo;
        Kernel<RangeFn, cpu>::LaunchRange(ctx.run_ctx, out[0].Size(), [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            const int64_t plane = i / (oh * ow), r = (i / ow) % oh, c = i % ow;
            const T v = x[(plane * h + r / k) * w + c / k];
            y[i] = add ? static_cast<T>(static_cast<AccType<T>>(y[i]) + static_cast<AccType<T>>(v))
                       : v;
          }
        });
      },
      "UpSampling");
}

void UpSamplingBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t k = ParamsOf<UpSamplingParam>(attrs).scale;
  const Shape& s = out[0].shape();
  const int64_t h = s[2], w = s[3], ow = w * k;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = AccType<T>;
        const T* dy = in[0].dptr<T>();
        T* dx = out[0].dptr<T>();
        const bool add = req[0] == kAddTo;
        Kernel<RangeFn, cpu>::LaunchRange(ctx.run_ctx, out[0].Size(), [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) {
            const int64_t plane = j / (h * w), r = (j / w) % h, c = j % w;
            A sum = 0;
            for (int64_t dr = 0; dr < k; ++dr)
              for (int64_t dc = 0; dc < k; ++dc)
                sum += static_cast<A>(dy[((plane * h + r) * k + dr) * ow + c * k + dc]);
            dx[j] = static_cast<T>(add ? static_cast<A>(dx[j]) + sum : sum);
          }
        });
      },
      "_backward_UpSampling");
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
    .set_attr<FCompute>(kFComputeCPU, UpSamplingForward)
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
    .set_attr<FCompute>(kFComputeCPU, UpSamplingBackward);

}  // namespace tessera::op
