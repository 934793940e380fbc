// Convolution and _backward_Convolution: parameters, shape and type
// inference, the reference kernels and the CPU registration.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include "ops/nn/channel_blocks.h"
#include "ops/nn/convolution-inl.h"
#include "ops/nn/im2col.h"
#include "ops/nn/spatial_params.h"
#include "ops/tensor/dnnl_lazy.h"
#include "ops/tensor/gemm.h"

namespace tessera::op {

ConvGeom MakeConvGeom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<ConvolutionParam>(attrs);
  ConvGeom g;
  const int spatial = p.kernel.ndim();
  TS_CHECK(spatial >= 1 && spatial <= 3)
      << OpLabel(attrs) << ": parameter 'kernel' is " << p.kernel
      << ", only 1-D (w,), 2-D (h, w) and 3-D (d, h, w) convolution is supported";
  g.spatial = spatial;
  CheckSpatialLayout(attrs, p.layout, spatial);
  static const char* const kLayouts[] = {"", "NCW", "NCHW", "NCDHW"};
  TS_CHECK(data.ndim() == spatial + 2)
      << OpLabel(attrs) << ": data has shape " << data << " but a " << spatial << "-D kernel "
      << p.kernel << " needs " << spatial + 2 << "-D data (" << kLayouts[spatial] << ")";
  g.n = data[0];
  g.c = data[1];
  g.d = spatial == 3 ? data[2] : 1;
  g.h = spatial >= 2 ? data[spatial] : 1;
  g.w = data[spatial + 1];
  g.f = p.num_filter;
  g.g = p.num_group;
  g.bias = !p.no_bias;
  SpatialTuple3(attrs, "kernel", p.kernel, spatial, 1, 1, data, &g.kd, &g.kh, &g.kw);
  SpatialTuple3(attrs, "stride", p.stride, spatial, 1, 1, data, &g.sd, &g.sh, &g.sw);
  SpatialTuple3(attrs, "dilate", p.dilate, spatial, 1, 1, data, &g.dd, &g.dh, &g.dw);
  SpatialTuple3(attrs, "pad", p.pad, spatial, 0, 0, data, &g.pd, &g.ph, &g.pw);
  TS_CHECK(g.f % g.g == 0) << OpLabel(attrs) << ": num_filter " << g.f
                           << " is not divisible by num_group " << g.g;
  TS_CHECK(g.c == 0 || g.c % g.g == 0)
      << OpLabel(attrs) << ": data has " << g.c << " channels (shape " << data
      << "), not divisible by num_group " << g.g;
  // The spatial parameters are at most kMaxSpatialParam (SpatialTuple), so
  // only the data's sizes can take these sums past 64 bits.
  auto out_dim = [&](int64_t x, int64_t pd, int64_t k, int64_t dl, int64_t s,
                     const char* axis) -> int64_t {
    if (x == 0) return 0;
    const int64_t ek = dl * (k - 1) + 1;
    const int64_t padded = AddDims(x, 2 * pd, OpLabel(attrs));
    TS_CHECK(padded >= ek) << OpLabel(attrs) << ": kernel " << p.kernel << " (dilated size " << ek
                           << " along " << axis << ") exceeds the padded input " << padded
                           << " of data of shape " << data;
    return (padded - ek) / s + 1;
  };
  g.od = spatial == 3 ? out_dim(g.d, g.pd, g.kd, g.dd, g.sd, "depth") : 1;
  g.oh = spatial >= 2 ? out_dim(g.h, g.ph, g.kh, g.dh, g.sh, "height") : 1;
  g.ow = out_dim(g.w, g.pw, g.kw, g.dw, g.sw, "width");
  return g;
}

namespace {

// The data's batch and, where the stride is 1, spatial sizes from the
// output's (DataFromOutput).
void ConvDataFromOutput(const NodeAttrs& attrs, std::vector<Shape>* in, const Shape& out) {
  const auto& p = ParamsOf<ConvolutionParam>(attrs);
  const int spatial = p.kernel.ndim();
  if (out.ndim() != spatial + 2) return;
  const Shape d = DataFromOutput((*in)[0], out, [&](int i, int64_t o) -> int64_t {
    const int64_t k = TupleAt(p.kernel, spatial, i, 1, 1), s = TupleAt(p.stride, spatial, i, 1, 1),
                  dl = TupleAt(p.dilate, spatial, i, 1, 1), pd = TupleAt(p.pad, spatial, i, 0, 0);
    if (k < 0 || dl < 0 || pd < 0 || s != 1) return 0;
    return WindowInputSize(attrs, o, dl * (k - 1) + 1, pd, out);
  });
  if (!(d == (*in)[0])) AssignShape(attrs, in, 0, d, "input");
}

bool ConvolutionShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<ConvolutionParam>(attrs);
  const size_t n_in = p.no_bias ? 2 : 3;
  TS_CHECK(in->size() == n_in) << OpLabel(attrs) << ": expects " << n_in << " inputs (data, weight"
                               << (p.no_bias ? "" : ", bias") << "), got " << in->size();
  const int spatial = p.kernel.ndim();
  Shape& data = (*in)[0];
  ConvDataFromOutput(attrs, in, (*out)[0]);
  if (data.ndim() == 0) return false;
  // The channels flow from the weight.
  const Shape& wshape = (*in)[1];
  if (data.ndim() > 1 && data[1] == 0 && wshape.ndim() == spatial + 2 && wshape[1] > 0) {
    Shape d = data;
    d[1] = MulDims(wshape[1], p.num_group, OpLabel(attrs));
    AssignShape(attrs, in, 0, d, "input");
  }
  const ConvGeom g = MakeConvGeom(attrs, data);
  std::vector<int64_t> wdims{g.f, g.c == 0 ? 0 : g.c / g.g};
  if (spatial == 3) wdims.push_back(g.kd);
  if (spatial >= 2) wdims.push_back(g.kh);
  wdims.push_back(g.kw);
  AssignShape(attrs, in, 1, Shape(wdims), "weight");
  if (!p.no_bias) AssignShape(attrs, in, 2, Shape{g.f}, "bias");
  std::vector<int64_t> odims{g.n, g.f};
  if (spatial == 3) odims.push_back(g.od);
  if (spatial >= 2) odims.push_back(g.oh);
  odims.push_back(g.ow);
  AssignShape(attrs, out, 0, Shape(odims), "output");
  ConvDataFromOutput(attrs, in, (*out)[0]);
  return AllKnown(*in) && AllKnown(*out);
}

// Any float type: the CPU kernels take float32 and float64 (another is an
// error when the op runs there), cuDNN float16 and bfloat16 too.
void CheckConvType(const NodeAttrs& attrs, DType t) {
  TS_CHECK(t == DType::kUnknown || IsFloatingPoint(t))
      << OpLabel(attrs) << ": dtype " << DTypeName(t)
      << " is not supported (float32 and float64; float16 and bfloat16 on the GPU)";
}

bool ConvolutionType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  for (DType t : *in) CheckConvType(attrs, t);
  return ok;
}

std::vector<std::string> ConvInputNames(const NodeAttrs& attrs) {
  if (ParamsOf<ConvolutionParam>(attrs).no_bias) return {"data", "weight"};
  return {"data", "weight", "bias"};
}

uint32_t ConvNumInputs(const NodeAttrs& attrs) {
  return ParamsOf<ConvolutionParam>(attrs).no_bias ? 2 : 3;
}

std::vector<ResourceRequest> TempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

// 2-D float32 convolutions on oneDNN read and write their data, output and
// their gradients in either layout, each on its own (the primitives'
// reorders convert; where the GEMM is measured faster, row-major copies of
// its small arrays); the weights and bias stay plain. Not where oneDNN is
// absent or the reference loops were forced (TESSERA_CONV_ALGO, SetConvAlgo).
bool ConvTakesBlocked(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<ConvolutionParam>(attrs);
  if (p.kernel.ndim() != 2 || (p.layout && *p.layout != "NCHW") || data.ndim() != 4) return false;
  return ForcedConvAlgo() != ConvAlgo::kReference && nn_dnnl::Available();
}

LayoutClasses ConvLayouts(const NodeAttrs& attrs, const std::vector<Shape>& in) {
  if (!ConvTakesBlocked(attrs, in[0])) return {};
  return {{kLayoutFree, kLayoutPlain, kLayoutPlain}, {kLayoutFree}};
}

// _backward_Convolution: (ograd, data, weight) -> (gdata, gweight[, gbias]).
LayoutClasses ConvBackwardLayouts(const NodeAttrs& attrs, const std::vector<Shape>& in) {
  if (!ConvTakesBlocked(attrs, in[1])) return {};
  return {{kLayoutFree, kLayoutFree, kLayoutPlain}, {kLayoutFree, kLayoutPlain, kLayoutPlain}};
}

// The GEMM kernels on channel-blocked arrays: row-major copies in, the
// result blocked out. The GEMM serves layers with few output positions,
// whose arrays are small; the copies live in the worker's own buffers
// (the op's temp space is the GEMM's; channel_blocks.h).
void GemmForwardAnyLayout(const ConvGeom& g, const OpContext& ctx, const float* data,
                          const float* weight, const float* bias, float* out, OpReqType req) {
  if (!g.src_blocked && !g.dst_blocked)
    return GemmConvForward(g, ctx, data, weight, bias, out, req);
  TS_DCHECK(req == kWriteTo || req == kWriteInplace);  // kAddTo runs on oneDNN
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  const float* x = g.src_blocked ? RowMajorCopy(0, data, g.n, g.c, hw) : data;
  float* y = g.dst_blocked ? RowMajorCopy(1, nullptr, g.n, g.f, ohw) : out;
  GemmConvForward(g, ctx, x, weight, bias, y, req);
  if (g.dst_blocked) Block(y, out, g.n, g.f, ohw);
}

void GemmBackwardAnyLayout(const ConvGeom& g, const OpContext& ctx, const float* ograd,
                           const float* data, const float* weight, float* gdata, OpReqType req_data,
                           float* gweight, OpReqType req_weight, float* gbias, OpReqType req_bias) {
  if (!g.src_blocked && !g.dst_blocked && !g.dsrc_blocked)
    return GemmConvBackward(g, ctx, ograd, data, weight, gdata, req_data, gweight, req_weight,
                            gbias, req_bias);
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  const bool want_data = req_data != kNullOp;
  TS_DCHECK(req_data != kAddTo);  // runs on oneDNN
  const float* dy = g.dst_blocked ? RowMajorCopy(0, ograd, g.n, g.f, ohw) : ograd;
  const float* x = g.src_blocked ? RowMajorCopy(1, data, g.n, g.c, hw) : data;
  float* dx = want_data && g.dsrc_blocked ? RowMajorCopy(2, nullptr, g.n, g.c, hw) : gdata;
  GemmConvBackward(g, ctx, dy, x, weight, dx, req_data, gweight, req_weight, gbias, req_bias);
  if (want_data && g.dsrc_blocked) Block(dx, gdata, g.n, g.c, hw);
}

void ConvolutionCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ConvGeom g = MakeConvGeom(attrs, in[0].shape());
  if (g.n == 0 || g.f == 0 || g.out_size() == 0) return;
  const DType t = out[0].dtype();
  if (t == DType::kFloat32) {
    const float *data = in[0].dptr<float>(), *weight = in[1].dptr<float>(),
                *bias = g.bias ? in[2].dptr<float>() : nullptr;
    float* y = out[0].dptr<float>();
    g.src_blocked = in[0].channel_blocked();
    g.dst_blocked = out[0].channel_blocked();
    auto run = [&](ConvAlgo a, OpReqType r) {
      (a == ConvAlgo::kGemm ? GemmForwardAnyLayout : DnnlConvForward)(g, ctx, data, weight, bias, y,
                                                                      r);
    };
    ConvAlgo algo = ConvAlgoFor(g, ConvPass::kForward);
    if (algo == ConvAlgo::kAuto)
      algo = req[0] == kAddTo
                 ? ConvAlgo::kOneDnn
                 : MeasureConvAlgo(g, ConvPass::kForward, [&](ConvAlgo a) { run(a, kWriteTo); });
    // The reference loops read row-major arrays only (an algorithm forced
    // after the executor chose blocked ones).
    if (algo == ConvAlgo::kReference && (g.src_blocked || g.dst_blocked)) algo = ConvAlgo::kOneDnn;
    if (algo != ConvAlgo::kReference) return run(algo, req[0]);
  }
  ForFloatAndDouble(attrs, t, "Convolution", [&](auto zero) {
    using T = decltype(zero);
    RefConvForward<T>(g, in[0].dptr<T>(), in[1].dptr<T>(), g.bias ? in[2].dptr<T>() : nullptr,
                      out[0].dptr<T>(), req[0], ColSpace<T>(ctx, g), ctx.run_ctx.omp_threads);
  });
}

using ConvBackwardFn = void (*)(const ConvGeom&, const OpContext&, const float*, const float*,
                                const float*, float*, OpReqType, float*, OpReqType, float*,
                                OpReqType);

ConvBackwardFn BackwardKernels(ConvAlgo algo) {
  return algo == ConvAlgo::kGemm ? GemmBackwardAnyLayout : DnnlConvBackward;
}

// The algorithm of one backward pass: measured, on the op's own outputs,
// when it is still undecided and this call writes them; oneDNN otherwise.
ConvAlgo BackwardAlgo(const ConvGeom& g, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out,
                      OpReqType rb, ConvPass pass) {
  const ConvAlgo algo = ConvAlgoFor(g, pass);
  if (algo != ConvAlgo::kAuto) return algo;
  const float *ograd = in[0].dptr<float>(), *data = in[1].dptr<float>(),
              *weight = in[2].dptr<float>();
  if (pass == ConvPass::kBackwardData) {
    if (req[0] == kNullOp || req[0] == kAddTo) return ConvAlgo::kOneDnn;
    return MeasureConvAlgo(g, pass, [&](ConvAlgo a) {
      BackwardKernels(a)(g, ctx, ograd, data, weight, out[0].dptr<float>(), kWriteTo, nullptr,
                         kNullOp, nullptr, kNullOp);
    });
  }
  if (req[1] == kNullOp || req[1] == kAddTo || rb == kAddTo) return ConvAlgo::kOneDnn;
  float* gbias = g.bias ? out[2].dptr<float>() : nullptr;
  return MeasureConvAlgo(g, pass, [&](ConvAlgo a) {
    BackwardKernels(a)(g, ctx, ograd, data, weight, nullptr, kNullOp, out[1].dptr<float>(),
                       kWriteTo, gbias, rb == kNullOp ? kNullOp : kWriteTo);
  });
}

// The data and weight gradients, by one call when one algorithm does both,
// else by one call each.
void BackwardFloat32(const ConvGeom& g, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out, OpReqType rb,
                     ConvAlgo data_algo, ConvAlgo weight_algo) {
  const float *ograd = in[0].dptr<float>(), *data = in[1].dptr<float>(),
              *weight = in[2].dptr<float>();
  float* gbias = g.bias ? out[2].dptr<float>() : nullptr;
  if (data_algo == weight_algo) {
    BackwardKernels(data_algo)(g, ctx, ograd, data, weight, out[0].dptr<float>(), req[0],
                               out[1].dptr<float>(), req[1], gbias, rb);
    return;
  }
  BackwardKernels(data_algo)(g, ctx, ograd, data, weight, out[0].dptr<float>(), req[0], nullptr,
                             kNullOp, nullptr, kNullOp);
  BackwardKernels(weight_algo)(g, ctx, ograd, data, weight, nullptr, kNullOp, out[1].dptr<float>(),
                               req[1], gbias, rb);
}

// _backward_Convolution: inputs (ograd, data, weight); outputs (gdata,
// gweight[, gbias]).
void ConvolutionBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                                const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                                const std::vector<TBlob>& out) {
  ConvGeom g = MakeConvGeom(attrs, in[1].shape());
  const OpReqType rb = g.bias ? req[2] : kNullOp;
  const DType t = in[0].dtype();
  if (t == DType::kFloat32) {
    g.dst_blocked = in[0].channel_blocked();
    g.src_blocked = in[1].channel_blocked();
    g.dsrc_blocked = out[0].channel_blocked();
    ConvAlgo data_algo = BackwardAlgo(g, ctx, in, req, out, rb, ConvPass::kBackwardData);
    ConvAlgo weight_algo = BackwardAlgo(g, ctx, in, req, out, rb, ConvPass::kBackwardWeights);
    if (data_algo == ConvAlgo::kReference && (g.src_blocked || g.dst_blocked || g.dsrc_blocked))
      data_algo = weight_algo = ConvAlgo::kOneDnn;
    if (data_algo != ConvAlgo::kReference) {
      TS_DCHECK(weight_algo != ConvAlgo::kReference);  // forced for every pass or none
      BackwardFloat32(g, ctx, in, req, out, rb, data_algo, weight_algo);
      return;
    }
  }
  ForFloatAndDouble(attrs, t, "_backward_Convolution", [&](auto zero) {
    using T = decltype(zero);
    RefConvBackward<T>(g, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(), out[0].dptr<T>(),
                       req[0], out[1].dptr<T>(), req[1], g.bias ? out[2].dptr<T>() : nullptr, rb,
                       ColSpace<T>(ctx, g), ctx.run_ctx.omp_threads);
  });
}

bool ConvolutionBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
  const auto& p = ParamsOf<ConvolutionParam>(attrs);
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  if (!p.no_bias) AssignShape(attrs, out, 2, Shape{int64_t(p.num_filter)}, "output");
  return AllKnown(*in) && AllKnown(*out);
}

struct ConvolutionGrad {
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    return MakeGradNode("_backward_Convolution", n, {ograds[0], n->inputs[0], n->inputs[1]});
  }
};

}  // namespace

// ---------------------------------------------------------------------------
// Reference kernels (im2col.h's Im2Col and Col2Im, then GEMMs).

template <typename T>
void RefConvForward(const ConvGeom& g, const T* data, const T* weight, const T* bias, T* out,
                    OpReqType req, T* col, int threads) {
  if (req == kNullOp) return;
  const int64_t ohw = g.out_size(), cg = g.cg(), fg = g.fg(), k = cg * g.ksize();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gi = 0; gi < g.g; ++gi) {
      Im2Col(g, data + (n * g.c + gi * cg) * g.in_size(), col);
      T* o = out + (n * g.f + gi * fg) * ohw;
      Gemm(false, false, fg, ohw, k, T(1), weight + gi * fg * k, k, col, ohw,
           req == kAddTo ? T(1) : T(0), o, ohw, threads);
      if (bias)
        for (int64_t f = 0; f < fg; ++f)
          for (int64_t e = 0; e < ohw; ++e) o[f * ohw + e] += bias[gi * fg + f];
    }
}

template <typename T>
void RefConvBackward(const ConvGeom& g, const T* ograd, const T* data, const T* weight, T* gdata,
                     OpReqType req_data, T* gweight, OpReqType req_weight, T* gbias,
                     OpReqType req_bias, T* col, int threads) {
  const int64_t ohw = g.out_size(), cg = g.cg(), fg = g.fg(), k = cg * g.ksize();
  if (req_data == kWriteTo || req_data == kWriteInplace)
    std::fill(gdata, gdata + g.n * g.c * g.in_size(), T(0));
  if (req_weight == kWriteTo || req_weight == kWriteInplace)
    std::fill(gweight, gweight + g.f * k, T(0));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gi = 0; gi < g.g; ++gi) {
      const T* og = ograd + (n * g.f + gi * fg) * ohw;
      if (req_data != kNullOp) {
        Gemm(true, false, k, ohw, fg, T(1), weight + gi * fg * k, k, og, ohw, T(0), col, ohw,
             threads);
        Col2Im(g, col, gdata + (n * g.c + gi * cg) * g.in_size());
      }
      if (req_weight != kNullOp) {
        Im2Col(g, data + (n * g.c + gi * cg) * g.in_size(), col);
        Gemm(false, true, fg, k, ohw, T(1), og, ohw, col, ohw, T(1), gweight + gi * fg * k, k,
             threads);
      }
    }
  if (gbias && req_bias != kNullOp) {
    for (int64_t f = 0; f < g.f; ++f) {
      T s = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* og = ograd + (n * g.f + f) * ohw;
        for (int64_t e = 0; e < ohw; ++e) s += og[e];
      }
      gbias[f] = req_bias == kAddTo ? gbias[f] + s : s;
    }
  }
}

template void RefConvForward<float>(const ConvGeom&, const float*, const float*, const float*,
                                    float*, OpReqType, float*, int);
template void RefConvForward<double>(const ConvGeom&, const double*, const double*, const double*,
                                     double*, OpReqType, double*, int);
template void RefConvBackward<float>(const ConvGeom&, const float*, const float*, const float*,
                                     float*, OpReqType, float*, OpReqType, float*, OpReqType,
                                     float*, int);
template void RefConvBackward<double>(const ConvGeom&, const double*, const double*, const double*,
                                      double*, OpReqType, double*, OpReqType, double*, OpReqType,
                                      double*, int);

// ---------------------------------------------------------------------------

TS_REGISTER_OP(Convolution)
    .describe(R"(Computes 1-D, 2-D or 3-D convolution (cross-correlation) with a bias, as MXNet.

data is (batch, channel, width), (batch, channel, height, width) or (batch,
channel, depth, height, width); weight is (num_filter, channel / num_group,
[[kernel_d,] kernel_h,] kernel_w) and bias (num_filter,). The output is
(batch, num_filter, [[out_d,] out_h,] out_w) with
out = floor((x + 2 * pad - dilate * (kernel - 1) - 1) / stride) + 1.
num_group splits the channels into groups convolved separately (num_group =
channels with num_filter a multiple of it: depthwise). float32 1-D and 2-D
run on oneDNN, or on a batched im2col + GEMM where that measured faster for
the shape (small maps, large weights; TESSERA_CONV_ALGO overrides); float64,
and 3-D, on reference kernels (im2col and GEMM).)")
    .set_num_inputs(ConvNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(CudnnTunedParamParser<ConvolutionParam>)
    .add_argument("data", "NDArray", "Input data, NCW, NCHW or NCDHW.")
    .add_argument("weight", "NDArray", "Weight matrix.")
    .add_argument("bias", "NDArray", "Bias parameter (absent when no_bias).")
    .add_arguments(ConvolutionParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", ConvInputNames)
    .set_attr<FInferShape>("FInferShape", ConvolutionShape)
    .set_attr<FInferType>("FInferType", ConvolutionType)
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, ConvolutionCompute)
    .set_attr<FLayoutClasses>("FLayoutClasses", ConvLayouts)
    .set_attr<FGradient>("FGradient", ConvolutionGrad{});

TS_REGISTER_OP(_backward_Convolution)
    .describe(
        "Gradient of Convolution. Inputs: ograd, data, weight; outputs: the gradients "
        "of data, weight and (unless no_bias) bias.")
    .set_num_inputs(3)
    .set_num_outputs(ConvNumInputs)
    .set_attr_parser(CudnnTunedParamParser<ConvolutionParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ConvolutionBackwardShape)
    .set_attr<FInferType>("FInferType", ConvolutionType)
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, ConvolutionBackwardCompute)
    .set_attr<FLayoutClasses>("FLayoutClasses", ConvBackwardLayouts);

}  // namespace tessera::op
