// UpSampling's parameters and element kernels, shared by the CPU
// (upsampling.cc) and GPU (upsampling.cu) registrations. 'nearest' maps each
// output pixel to its source (forward) and each input pixel to the sum of
// its scale x scale block (backward: gathered, so no atomics); 'bilinear'
// runs the Deconvolution op's kernel for the same device.
#pragma once

#include <string>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum UpSampleType { kUpNearest, kUpBilinear };

struct UpSamplingParam : Params<UpSamplingParam> {
  int scale = 1;
  int num_filter = 0;
  int sample_type = kUpNearest;
  std::string multi_input_mode = "concat";
  int num_args = 1;
  int64_t workspace = 512;
  static void Declare(ParamDecl<UpSamplingParam>& d) {
    d.field("scale", &UpSamplingParam::scale).set_lower_bound(1).describe("Up-sampling factor.");
    d.field("num_filter", &UpSamplingParam::num_filter)
        .set_default(0)
        .describe("Input channels (bilinear only).");
    d.field("sample_type", &UpSamplingParam::sample_type)
        .add_enum("nearest", kUpNearest)
        .add_enum("bilinear", kUpBilinear)
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

inline bool IsBilinear(const NodeAttrs& attrs) {
  return ParamsOf<UpSamplingParam>(attrs).sample_type == kUpBilinear;
}

// The Deconvolution a bilinear UpSampling is (MXNet's): kernel 2s - s % 2,
// stride s, pad ceil((s - 1) / 2), one group per channel, no bias.
inline ParamDict DeconvDict(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<UpSamplingParam>(attrs);
  const int s = p.scale, k = 2 * s - s % 2, pad = (s - 1 + 1) / 2;
  const std::string c = std::to_string(p.num_filter);
  auto pair = [](int v) { return "(" + std::to_string(v) + "," + std::to_string(v) + ")"; };
  return {{"kernel", pair(k)}, {"stride", pair(s)}, {"pad", pair(pad)},
          {"num_filter", c},   {"num_group", c},    {"no_bias", "True"}};
}

inline NodeAttrs DeconvAttrs(const NodeAttrs& attrs) {
  NodeAttrs d;
  d.op = Op::Get("Deconvolution");
  d.name = attrs.name;
  d.dict = DeconvDict(attrs);
  d.op->ParseAttrs(&d);
  return d;
}

// The sizes of one nearest up-sampling, by value for the kernels.
struct UpGeom {
  int64_t h = 0, w = 0, k = 1;  // input height, width; the scale
};

struct UpNearestForward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const T* x, UpGeom g, OpReqType req) {
    const int64_t oh = g.h * g.k, ow = g.w * g.k;
    const int64_t plane = i / (oh * ow), r = (i / ow) % oh, c = i % ow;
    const T v = x[(plane * g.h + r / g.k) * g.w + c / g.k];
    y[i] = req == kAddTo
               ? static_cast<T>(static_cast<AccType<T>>(y[i]) + static_cast<AccType<T>>(v))
               : v;
  }
};

struct UpNearestBackward {
  template <typename T>
  TS_XINLINE static void Map(int64_t j, T* dx, const T* dy, UpGeom g, OpReqType req) {
    using A = AccType<T>;
    const int64_t ow = g.w * g.k;
    const int64_t plane = j / (g.h * g.w), r = (j / g.w) % g.h, c = j % g.w;
    A sum = 0;
    for (int64_t dr = 0; dr < g.k; ++dr)
      for (int64_t dc = 0; dc < g.k; ++dc)
        sum += static_cast<A>(dy[((plane * g.h + r) * g.k + dr) * ow + c * g.k + dc]);
    dx[j] = static_cast<T>(req == kAddTo ? static_cast<A>(dx[j]) + sum : sum);
  }
};

// Bilinear: the Deconvolution's kernel for this device, on the same inputs
// and resources; an error naming both ops where the device has none.
template <typename xpu>
void BilinearForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  constexpr bool kOnCpu = xpu::kDevice == DeviceType::kCPU;
  static const auto& fcompute = Op::GetAttr<FCompute>(kOnCpu ? kFComputeCPU : kFComputeGPU);
  const NodeAttrs d = DeconvAttrs(attrs);
  const FCompute* f = fcompute.find(d.op);
  TS_CHECK(f) << OpLabel(attrs) << ": sample_type 'bilinear' runs Deconvolution, which has no "
              << (kOnCpu ? "CPU" : "GPU")
              << " kernel in this build; use sample_type 'nearest' or the CPU";
  (*f)(d, ctx, in, req, out);
}

template <typename xpu>
void UpSamplingForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  if (IsBilinear(attrs)) return BilinearForward<xpu>(attrs, ctx, in, req, out);
  const Shape& s = in[0].shape();
  const UpGeom g{s[2], s[3], ParamsOf<UpSamplingParam>(attrs).scale};
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<UpNearestForward, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                              in[0].dptr<T>(), g, req[0]);
      },
      "UpSampling");
}

template <typename xpu>
void UpSamplingBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape& s = out[0].shape();
  const UpGeom g{s[2], s[3], ParamsOf<UpSamplingParam>(attrs).scale};
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<UpNearestBackward, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                               in[0].dptr<T>(), g, req[0]);
      },
      "_backward_UpSampling");
}

}  // namespace tessera::op
