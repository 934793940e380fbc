// Deconvolution's parameters and its convolution geometry, shared by the CPU
// (deconvolution.cc) and GPU (convolution_cudnn_cuda.cc) kernels.
#pragma once

#include <optional>
#include <string>

#include "engine/op/params.h"
#include "ops/nn/convolution-inl.h"

namespace tessera::op {

struct DeconvolutionParam : Params<DeconvolutionParam> {
  Shape kernel, stride, dilate, pad, adj, target_shape;
  int num_filter = 0;
  int num_group = 1;
  int64_t workspace = 512;
  bool no_bias = true;
  std::optional<std::string> cudnn_tune;
  bool cudnn_off = false;
  std::optional<std::string> layout;
  static void Declare(ParamDecl<DeconvolutionParam>& d) {
    d.field("kernel", &DeconvolutionParam::kernel)
        .describe("Kernel size: (w,), (h, w) or (d, h, w).");
    d.field("stride", &DeconvolutionParam::stride)
        .set_default(Shape())
        .describe("Stride: (w,), (h, w) or (d, h, w). Defaults to 1.");
    d.field("dilate", &DeconvolutionParam::dilate)
        .set_default(Shape())
        .describe("Dilation: (w,), (h, w) or (d, h, w). Defaults to 1.");
    d.field("pad", &DeconvolutionParam::pad)
        .set_default(Shape())
        .describe("Padding removed from both sides of the output. Defaults to 0.");
    d.field("adj", &DeconvolutionParam::adj)
        .set_default(Shape())
        .describe("Extra rows/columns at the end of the output (less than the stride).");
    d.field("target_shape", &DeconvolutionParam::target_shape)
        .set_default(Shape())
        .describe("Output (h, w); when given, pad and adj are computed from it.");
    d.field("num_filter", &DeconvolutionParam::num_filter)
        .set_range(1, 100000)
        .describe("Output channels.");
    d.field("num_group", &DeconvolutionParam::num_group)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Number of groups.");
    d.field("workspace", &DeconvolutionParam::workspace)
        .set_default(int64_t{512})
        .describe("The most workspace cuDNN may use on the GPU, in MB; unused on the CPU.");
    d.field("no_bias", &DeconvolutionParam::no_bias)
        .set_default(true)
        .describe("Whether to disable the bias (MXNet's default: disabled).");
    d.field("cudnn_tune", &DeconvolutionParam::cudnn_tune)
        .set_default(std::nullopt)
        .describe("As Convolution's: how cuDNN chooses its algorithms on the GPU.");
    d.field("cudnn_off", &DeconvolutionParam::cudnn_off)
        .set_default(false)
        .describe("Unused on the CPU; an error on the GPU, whose only deconvolution is cuDNN's.");
    d.field("layout", &DeconvolutionParam::layout)
        .set_default(std::nullopt)
        .describe("None, 'NCW', 'NCHW' or 'NCDHW'.");
  }
};

// The convolution whose data gradient the deconvolution of `data` (N, C,
// [[D,] H,] W) is: its data is our output (num_filter channels), its output
// our input; the bias is left to the caller (g.bias is false).
ConvGeom DeconvGeom(const NodeAttrs& attrs, const Shape& data);

}  // namespace tessera::op
