// Deconvolution (transposed convolution): the gradient of a convolution with
// respect to its data, used as a layer. It reuses Convolution's kernels with
// the roles swapped: seen as a convolution, the deconvolution's output is the
// convolution's data (channels num_filter) and its input the convolution's
// output (channels C), with the same weight layout (C, num_filter / group,
// kh, kw). So
//   forward         = convolution backward-data (ograd = data),
//   backward data   = convolution forward (data = ograd),
//   backward weight = convolution backward-weight (ograd = data, data = ograd),
// and the bias is added per output channel.
#include <optional>

#include "engine/op/op_attr_types.h"
#include "ops/nn/deconvolution-inl.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/spatial_params.h"

namespace tessera::op {

ConvGeom DeconvGeom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<DeconvolutionParam>(attrs);
  const int k = p.kernel.ndim();
  TS_CHECK(k >= 1 && k <= 3) << OpLabel(attrs) << ": kernel must have 1, 2 or 3 dimensions, got "
                             << p.kernel;
  static const char* const kAxes[] = {"", "width", "height, width", "depth, height, width"};
  TS_CHECK(data.ndim() == k + 2) << OpLabel(attrs) << ": a " << k
                                 << "-D kernel needs data (batch, channel, " << kAxes[k]
                                 << "), got " << data;
  CheckSpatialLayout(attrs, p.layout, k);
  for (const Shape* t : {&p.stride, &p.dilate, &p.pad, &p.adj, &p.target_shape})
    TS_CHECK(t->ndim() == 0 || t->ndim() == k)
        << OpLabel(attrs) << ": kernel " << p.kernel << " and " << *t << " differ in rank";
  ConvGeom g;
  g.spatial = k;
  g.n = data[0];
  g.f = data[1];  // the convolution's output channels: our input's
  g.c = p.num_filter;
  g.g = p.num_group;
  TS_CHECK(g.f % g.g == 0 && g.c % g.g == 0)
      << OpLabel(attrs) << ": input channels " << g.f << " and num_filter " << g.c
      << " must both be divisible by num_group " << g.g;
  const int64_t in_d = k == 3 ? data[2] : 1, in_h = k >= 2 ? data[k] : 1, in_w = data[k + 1];
  int64_t pad_d, pad_h, pad_w, adj_d, adj_h, adj_w;
  SpatialTuple3(attrs, "kernel", p.kernel, k, 1, 1, data, &g.kd, &g.kh, &g.kw);
  SpatialTuple3(attrs, "stride", p.stride, k, 1, 1, data, &g.sd, &g.sh, &g.sw);
  SpatialTuple3(attrs, "dilate", p.dilate, k, 1, 1, data, &g.dd, &g.dh, &g.dw);
  SpatialTuple3(attrs, "pad", p.pad, k, 0, 0, data, &pad_d, &pad_h, &pad_w);
  SpatialTuple3(attrs, "adj", p.adj, k, 0, 0, data, &adj_d, &adj_h, &adj_w);
  g.od = in_d;
  g.oh = in_h;
  g.ow = in_w;
  // The output size along tuple axis `idx` and the padding that gives it:
  // from target_shape when given, else from pad and adj.
  auto size = [&](int64_t in, int64_t kern, int64_t s, int64_t d, int64_t pad, int64_t adj, int idx,
                  int64_t* out_pad) {
    // s, d and kern are at most kMaxSpatialParam (SpatialTuple); `in` is
    // the data's size, unbounded in a graph's inference.
    const std::string label = OpLabel(attrs);
    const int64_t full = AddDims(MulDims(in - 1, s, label), d * (kern - 1) + 1, label);
    if (p.target_shape.ndim() > 0) {
      const int64_t target = p.target_shape[idx];
      TS_CHECK(target > 0 && target <= full)
          << OpLabel(attrs) << ": target_shape " << p.target_shape << " is larger than " << full
          << ", the largest output for input " << data;
      const int64_t total = full - target;
      *out_pad = (total + 1) / 2;
      // An odd total takes one more row off the start than the end; the
      // convolution seen from the output then reaches `in` only when the
      // stride absorbs the extra row (not at stride 1).
      TS_CHECK((target + 2 * *out_pad - (d * (kern - 1) + 1)) / s + 1 == in)
          << OpLabel(attrs) << ": target_shape " << p.target_shape << " for input " << data
          << " needs more padding on one side than the other (total padding " << total
          << " at stride " << s << "); choose an output size that differs from " << full
          << " by an even number";
      return target;
    }
    *out_pad = pad;
    TS_CHECK(adj < s) << OpLabel(attrs) << ": adj " << p.adj << " must be less than the stride";
    const int64_t out = AddDims(full - 2 * pad, adj, label);
    TS_CHECK(out > 0) << OpLabel(attrs) << ": padding " << p.pad << " leaves no output for input "
                      << data;
    return out;
  };
  g.d = k == 3 ? size(in_d, g.kd, g.sd, g.dd, pad_d, adj_d, 0, &g.pd) : 1;
  if (k != 3) g.pd = 0;
  g.h = k >= 2 ? size(in_h, g.kh, g.sh, g.dh, pad_h, adj_h, k - 2, &g.ph) : 1;
  if (k < 2) g.ph = 0;
  g.w = size(in_w, g.kw, g.sw, g.dw, pad_w, adj_w, k - 1, &g.pw);
  g.bias = false;  // added here, per output channel
  return g;
}

namespace {

Shape OutputShape(const ConvGeom& g) {
  if (g.spatial == 3) return Shape{g.n, g.c, g.d, g.h, g.w};
  return g.spatial == 2 ? Shape{g.n, g.c, g.h, g.w} : Shape{g.n, g.c, g.w};
}

std::vector<std::string> InputNames(const NodeAttrs& attrs) {
  if (ParamsOf<DeconvolutionParam>(attrs).no_bias) return {"data", "weight"};
  return {"data", "weight", "bias"};
}

// The data's batch and spatial sizes from the output's (DataFromOutput:
// out = stride (in - 1) + dilated kernel - 2 pad + adj has at most one
// solution; none is told with target_shape), its channels from the weight.
void DeconvDataFromOutput(const NodeAttrs& attrs, std::vector<Shape>* in, const Shape& out) {
  const auto& p = ParamsOf<DeconvolutionParam>(attrs);
  const int k = p.kernel.ndim();
  const Shape& weight = (*in)[1];
  Shape d = (*in)[0];
  if (out.ndim() == k + 2 && p.target_shape.ndim() == 0) {
    d = DataFromOutput(d, out, [&](int i, int64_t o) -> int64_t {
      const int64_t kern = TupleAt(p.kernel, k, i, 1, 1), s = TupleAt(p.stride, k, i, 1, 1),
                    dl = TupleAt(p.dilate, k, i, 1, 1), pd = TupleAt(p.pad, k, i, 0, 0),
                    adj = TupleAt(p.adj, k, i, 0, 0);
      if (kern < 0 || s < 0 || dl < 0 || pd < 0 || adj < 0) return 0;
      // o is the caller's (unbounded); the parameters are at most kMaxSpatialParam.
      const int64_t span = AddDims(o - (dl * (kern - 1) + 1), 2 * pd, OpLabel(attrs)) - adj;
      TS_CHECK(span >= 0 && span % s == 0)
          << OpLabel(attrs) << ": no input gives the output of shape " << out << " (kernel "
          << p.kernel << ", stride " << p.stride << ", pad " << p.pad << ", adj " << p.adj << ")";
      return span / s + 1;
    });
  }
  if (d.ndim() == k + 2 && d[1] == 0 && weight.ndim() == k + 2) d[1] = weight[0];
  if (!(d == (*in)[0])) AssignShape(attrs, in, 0, d, "data");
}

bool DeconvShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<DeconvolutionParam>(attrs);
  DeconvDataFromOutput(attrs, in, (*out)[0]);
  const Shape data = (*in)[0];
  if (data.ndim() == 0 || data[1] == 0) return false;
  const int k = p.kernel.ndim();
  Shape w = Shape::Filled(k + 2);
  w[0] = data[1];
  w[1] = p.num_filter / p.num_group;
  for (int i = 0; i < k; ++i) w[i + 2] = p.kernel[i];
  AssignNamed(attrs, in, 1, w, "weight", "(input channels, num_filter / num_group, kernel)");
  if (!p.no_bias) AssignNamed(attrs, in, 2, Shape{p.num_filter}, "bias", "(num_filter,)");
  if (!data.known()) return false;
  AssignShape(attrs, out, 0, OutputShape(DeconvGeom(attrs, data)), "output");
  return true;
}

bool DeconvType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  CheckFloatTypes(attrs, *in, *out);
  return SameTypeAll(attrs, in, out);
}

void DeconvForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const ConvGeom g = DeconvGeom(attrs, in[0].shape());
  const bool bias = !ParamsOf<DeconvolutionParam>(attrs).no_bias;
  ForFloatAndDouble(attrs, in[0].dtype(), "Deconvolution", [&](auto zero) {
    using T = decltype(zero);
    const T* x = in[0].dptr<T>();
    const T* w = in[1].dptr<T>();
    T* y = out[0].dptr<T>();
    if constexpr (std::is_same_v<T, float>)
      DnnlConvBackward(g, ctx, x, nullptr, w, y, req[0], nullptr, kNullOp, nullptr, kNullOp);
    else
      RefConvBackward<T>(g, x, nullptr, w, y, req[0], nullptr, kNullOp, nullptr, kNullOp,
                         ColSpace<T>(ctx, g), ctx.run_ctx.omp_threads);
    if (!bias) return;
    const T* b = in[2].dptr<T>();
    const int64_t plane = g.in_size();
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t c = 0; c < g.c; ++c) {
        T* row = y + (n * g.c + c) * plane;
        for (int64_t e = 0; e < plane; ++e) row[e] += b[c];
      }
  });
}

// (out_grad, data, weight) -> (data, weight[, bias]) gradients.
void DeconvBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const ConvGeom g = DeconvGeom(attrs, in[1].shape());
  const bool bias = !ParamsOf<DeconvolutionParam>(attrs).no_bias;
  ForFloatAndDouble(attrs, in[1].dtype(), "_backward_Deconvolution", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = in[0].dptr<T>();
    const T* x = in[1].dptr<T>();
    const T* w = in[2].dptr<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (req[0] != kNullOp) DnnlConvForward(g, ctx, dy, w, nullptr, out[0].dptr<T>(), req[0]);
      if (req[1] != kNullOp)
        DnnlConvBackward(g, ctx, x, dy, w, nullptr, kNullOp, out[1].dptr<T>(), req[1], nullptr,
                         kNullOp);
    } else {
      T* col = ColSpace<T>(ctx, g);
      const int threads = ctx.run_ctx.omp_threads;
      if (req[0] != kNullOp)
        RefConvForward<T>(g, dy, w, nullptr, out[0].dptr<T>(), req[0], col, threads);
      if (req[1] != kNullOp)
        RefConvBackward<T>(g, x, dy, w, nullptr, kNullOp, out[1].dptr<T>(), req[1], nullptr,
                           kNullOp, col, threads);
    }
    if (!bias || req[2] == kNullOp) return;
    T* db = out[2].dptr<T>();
    const int64_t plane = g.in_size();
    for (int64_t c = 0; c < g.c; ++c) {
      AccType<T> s = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* row = dy + (n * g.c + c) * plane;
        for (int64_t e = 0; e < plane; ++e) s += row[e];
      }
      db[c] = static_cast<T>(req[2] == kAddTo ? db[c] + s : s);
    }
  });
}

bool DeconvBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<DeconvolutionParam>(attrs);
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  if (!p.no_bias) AssignShape(attrs, out, 2, Shape{int64_t(p.num_filter)}, "output");
  return AllKnown(*in) && AllKnown(*out);
}

uint32_t NumInputs(const NodeAttrs& attrs) {
  return ParamsOf<DeconvolutionParam>(attrs).no_bias ? 2 : 3;
}

std::vector<ResourceRequest> TempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(Deconvolution)
    .describe(R"(Transposed convolution (the gradient of Convolution with respect to its data).

For input (N, C, H, W) and kernel (kh, kw) the output is (N, num_filter,
(H - 1) * stride - 2 * pad + dilate * (kh - 1) + 1 + adj, ...); weight is
(C, num_filter / num_group, kh, kw); 1-D and 3-D the same per axis. With target_shape, pad and adj are
chosen to give that output size. The bias is off by default, as in MXNet.)")
    .set_num_inputs(NumInputs)
    .set_num_outputs(1)
    .set_attr_parser(CudnnTunedParamParser<DeconvolutionParam>)
    .add_argument("data", "NDArray", "Input, (batch, channel, [[depth,] height,] width).")
    .add_argument("weight", "NDArray", "Weight, (channel, num_filter / num_group, kernel...).")
    .add_argument("bias", "NDArray", "Bias, (num_filter,), unless no_bias.")
    .add_arguments(DeconvolutionParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", InputNames)
    .set_attr<FInferShape>("FInferShape", DeconvShape)
    .set_attr<FInferType>("FInferType", DeconvType)
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, DeconvForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& g) {
      return MakeGradNode("_backward_Deconvolution", n, {g[0], n->inputs[0], n->inputs[1]});
    });

TS_REGISTER_OP(_backward_Deconvolution)
    .describe("Gradient of Deconvolution: (out_grad, data, weight) -> data, weight[, bias].")
    .set_num_inputs(3)
    .set_num_outputs([](const NodeAttrs& a) { return NumInputs(a); })
    .set_attr_parser(CudnnTunedParamParser<DeconvolutionParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", DeconvBackwardShape)
    .set_attr<FInferType>("FInferType", DeconvType)
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, DeconvBackward);

}  // namespace tessera::op
