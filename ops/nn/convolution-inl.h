// Convolution (1-D and 2-D, grouped and depthwise), MXNet's parameters and
// semantics. float32 runs through oneDNN (convolution_dnnl.cc, primitives
// cached per shape); float64, which oneDNN lacks, runs the reference kernels
// here (im2col + GEMM), the ground truth of the tests.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

struct ConvolutionParam : Params<ConvolutionParam> {
  Shape kernel, stride, dilate, pad;
  int num_filter = 0;
  int num_group = 1;
  int64_t workspace = 1024;
  bool no_bias = false;
  std::optional<std::string> cudnn_tune;
  bool cudnn_off = false;
  std::optional<std::string> layout;
  static void Declare(ParamDecl<ConvolutionParam>& d) {
    d.field("kernel", &ConvolutionParam::kernel)
        .describe("Convolution kernel size: (w,), (h, w) or (d, h, w).");
    d.field("stride", &ConvolutionParam::stride)
        .set_default(Shape())
        .describe(
            "Convolution stride: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension.");
    d.field("dilate", &ConvolutionParam::dilate)
        .set_default(Shape())
        .describe(
            "Convolution dilation: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension.");
    d.field("pad", &ConvolutionParam::pad)
        .set_default(Shape())
        .describe("Zero padding on both sides: (w,), (h, w) or (d, h, w). Defaults to no padding.");
    d.field("num_filter", &ConvolutionParam::num_filter)
        .set_range(1, 100000)
        .describe("Convolution filter (channel) number.");
    d.field("num_group", &ConvolutionParam::num_group)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Number of group partitions (num_group = channels: depthwise).");
    d.field("workspace", &ConvolutionParam::workspace)
        .set_default(int64_t{1024})
        .set_lower_bound(int64_t{0})
        .describe("Maximum temporary workspace in MB (accepted for MXNet compatibility).");
    d.field("no_bias", &ConvolutionParam::no_bias)
        .set_default(false)
        .describe("Whether to disable the bias parameter.");
    d.field("cudnn_tune", &ConvolutionParam::cudnn_tune)
        .set_default(std::nullopt)
        .describe(
            "Whether to pick the convolution algorithm by running a performance test "
            "('off', 'limited_workspace', 'fastest'; accepted, unused on CPU).");
    d.field("cudnn_off", &ConvolutionParam::cudnn_off)
        .set_default(false)
        .describe("Turn off cudnn for this layer.");
    d.field("layout", &ConvolutionParam::layout)
        .set_default(std::nullopt)
        .describe("Data layout: None (the default for the data's rank), 'NCW', 'NCHW' or 'NCDHW'.");
  }
};

// The attribute parser of Convolution, Deconvolution and their gradients:
// the fields, then cudnn_tune's value, on every device, so that a graph the
// CPU runs (where cuDNN is not used) runs on a GPU too. MXNet's enum:
// None (the default), 'off', 'limited_workspace', 'fastest'.
template <typename P>
void CudnnTunedParamParser(NodeAttrs* attrs) {
  ParamParser<P>(attrs);
  const std::optional<std::string>& tune = ParamsOf<P>(*attrs).cudnn_tune;
  TS_CHECK(!tune || *tune == "off" || *tune == "limited_workspace" || *tune == "fastest")
      << (attrs->op ? attrs->op->name() : std::string("Convolution"))
      << ": parameter 'cudnn_tune' got '" << *tune
      << "', expected one of {'off', 'limited_workspace', 'fastest'}";
}

// The convolution as 2-D: 1-D data is seen as height 1.
// 1-D and 2-D data are 3-D data of depth (and height) one: the depth fields
// keep their neutral values there.
struct ConvGeom {
  int spatial = 2;  // 1, 2 or 3
  int64_t n = 0, c = 0, d = 1, h = 1, w = 0;
  int64_t f = 0, g = 1;
  int64_t kd = 1, kh = 1, kw = 1, sd = 1, sh = 1, sw = 1, dd = 1, dh = 1, dw = 1;
  int64_t pd = 0, ph = 0, pw = 0;
  int64_t od = 1, oh = 1, ow = 0;
  bool bias = true;
  // Arrays in the channel-blocked layout (MemLayout::kNChw16c; oneDNN only):
  // the data (forward and backward), the output or its gradient, and the
  // data's gradient.
  bool src_blocked = false, dst_blocked = false, dsrc_blocked = false;
  // The three as bits, for the caches' keys.
  int64_t blocked_bits() const { return src_blocked | dst_blocked << 1 | dsrc_blocked << 2; }

  int64_t cg() const { return c / g; }
  int64_t fg() const { return f / g; }
  int64_t ksize() const { return kd * kh * kw; }
  int64_t in_size() const { return d * h * w; }      // one channel of the data
  int64_t out_size() const { return od * oh * ow; }  // one channel of the output
};

// Checks the parameters against the data shape (ndim, channels divisible by
// the groups, kernel within the padded input) and fills the geometry; errors
// name the op, the parameter and the shapes. Unknown dims (0) are allowed
// where noted: the output size is then 0.
ConvGeom MakeConvGeom(const NodeAttrs& attrs, const Shape& data);

// oneDNN float32 paths (convolution_dnnl.cc), 1-D and 2-D; 3-D runs the
// reference kernels. `req` as for every kernel.
void DnnlConvForward(const ConvGeom& g, const OpContext& ctx, const float* data,
                     const float* weight, const float* bias, float* out, OpReqType req);
void DnnlConvBackward(const ConvGeom& g, const OpContext& ctx, const float* ograd,
                      const float* data, const float* weight, float* gdata, OpReqType req_data,
                      float* gweight, OpReqType req_weight, float* gbias, OpReqType req_bias);

// Reference kernels (im2col + GEMM) for float32 and float64, 1-D to 3-D;
// `col` holds cg * ksize * out_size elements.
template <typename T>
void RefConvForward(const ConvGeom& g, const T* data, const T* weight, const T* bias, T* out,
                    OpReqType req, T* col, int threads);
template <typename T>
void RefConvBackward(const ConvGeom& g, const T* ograd, const T* data, const T* weight, T* gdata,
                     OpReqType req_data, T* gweight, OpReqType req_weight, T* gbias,
                     OpReqType req_bias, T* col, int threads);

// Batched im2col + GEMM for float32, 1-D and 2-D (convolution_gemm.cc):
// the images of a chunk sit side by side in one column matrix, so one GEMM
// per group covers them all, reading the weights in their own (o, i, k...)
// layout. Where the images are small and the weights large (ResNet's last
// stages) this beats oneDNN's blocked kernels, which must reorder every
// weight on every call and reduce the weight gradient across threads.
// Same arguments and `req` handling as the oneDNN paths.
void GemmConvForward(const ConvGeom& g, const OpContext& ctx, const float* data,
                     const float* weight, const float* bias, float* out, OpReqType req);
void GemmConvBackward(const ConvGeom& g, const OpContext& ctx, const float* ograd,
                      const float* data, const float* weight, float* gdata, OpReqType req_data,
                      float* gweight, OpReqType req_weight, float* gbias, OpReqType req_bias);

// Which kernels run a float32 pass (convolution_algo.cc). kAuto: oneDNN,
// unless the geometry is one where the batched GEMM may win; then both are
// timed on the first call for that geometry and pass that can write its
// outputs, and the faster is kept for the process (as MXNet's cudnn_tune on a
// GPU). TESSERA_CONV_ALGO=auto|onednn|gemm|reference sets it for the process.
enum class ConvAlgo : uint8_t { kAuto, kOneDnn, kGemm, kReference };
enum class ConvPass : uint8_t { kForward, kBackwardData, kBackwardWeights };
// The algorithm for `pass` of `g`, or kAuto while it is still to be measured.
ConvAlgo ConvAlgoFor(const ConvGeom& g, ConvPass pass);
// Measures: `trial(algo)` runs the pass with algo, writing (not adding to)
// the op's outputs. Records and returns the faster.
ConvAlgo MeasureConvAlgo(const ConvGeom& g, ConvPass pass,
                         const std::function<void(ConvAlgo)>& trial);
// Forces one algorithm for every float32 convolution (kAuto: choose as
// above), for tests; returns the previous setting.
ConvAlgo SetConvAlgo(ConvAlgo algo);
// The algorithm forced by SetConvAlgo or TESSERA_CONV_ALGO; kAuto if none.
ConvAlgo ForcedConvAlgo();
const char* ConvAlgoName(ConvAlgo algo);

// The im2col scratch of one image, from the op's temp space.
template <typename T>
T* ColSpace(const OpContext& ctx, const ConvGeom& g) {
  return ctx.requested[0].get_space_typed<T>(
      static_cast<size_t>(std::max<int64_t>(1, g.cg() * g.ksize() * g.out_size())));
}

}  // namespace tessera::op
