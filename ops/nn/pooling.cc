// Pooling and _backward_Pooling (pooling-inl.h states the semantics): the
// geometry, shape and type inference, the plain kernels, parallel over the
// (batch, channel) planes for every float dtype, the dispatch between them and
// oneDNN (pooling_dnnl.cc), and the registration.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "ops/nn/pooling-inl.h"
#include "ops/nn/spatial_params.h"

namespace tessera::op {

PoolGeom MakePoolGeom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<PoolingParam>(attrs);
  TS_CHECK(p.pool_type != pool::kLpPool) << OpLabel(attrs) << ": pool_type 'lp' is not supported";
  TS_CHECK(p.pooling_convention != pool::kSame)
      << OpLabel(attrs) << ": pooling_convention 'same' is not supported ('valid', 'full')";
  PoolGeom g;
  g.type = p.pool_type;
  g.include_pad = p.count_include_pad.value_or(true);
  const int spatial = p.global_pool ? data.ndim() - 2 : p.kernel.ndim();
  TS_CHECK(spatial == 1 || spatial == 2)
      << OpLabel(attrs) << ": only 1-D and 2-D pooling is supported, got "
      << (p.global_pool ? "data of shape " : "kernel ") << (p.global_pool ? data : p.kernel);
  TS_CHECK(data.ndim() == spatial + 2)
      << OpLabel(attrs) << ": data has shape " << data << " but a " << spatial << "-D kernel "
      << p.kernel << " needs " << spatial + 2 << "-D data";
  CheckSpatialLayout(attrs, p.layout, spatial);
  g.spatial = spatial;
  g.planes = MulDims(data[0], data[1], OpLabel(attrs));
  g.h = spatial == 2 ? data[2] : 1;
  g.w = data[spatial + 1];
  if (p.global_pool) {
    g.kh = g.h;
    g.kw = g.w;
    g.oh = 1;
    g.ow = 1;
    return g;
  }
  SpatialTuple(attrs, "kernel", p.kernel, spatial, 1, 1, data, &g.kh, &g.kw);
  SpatialTuple(attrs, "stride", p.stride, spatial, 1, 1, data, &g.sh, &g.sw);
  SpatialTuple(attrs, "pad", p.pad, spatial, 0, 0, data, &g.ph, &g.pw);
  auto out_dim = [&](int64_t x, int64_t k, int64_t s, int64_t pd, const char* axis) -> int64_t {
    if (x == 0) return 0;
    // pd is at most kMaxSpatialParam (SpatialTuple): only x can overflow the sum.
    const int64_t padded = AddDims(x, 2 * pd, OpLabel(attrs));
    TS_CHECK(k <= padded) << OpLabel(attrs) << ": kernel " << p.kernel << " (" << k << " along "
                          << axis << ") exceeds the padded input " << padded << " of data of shape "
                          << data;
    const int64_t span = padded - k;
    return 1 + (p.pooling_convention == pool::kFull ? (span + s - 1) / s : span / s);
  };
  g.oh = spatial == 2 ? out_dim(g.h, g.kh, g.sh, g.ph, "height") : 1;
  g.ow = out_dim(g.w, g.kw, g.sw, g.pw, "width");
  return g;
}

namespace {

// The data's batch, channels and, where the stride is 1, spatial sizes from
// the output's (DataFromOutput); a global pool's window is the data itself.
void PoolDataFromOutput(const NodeAttrs& attrs, std::vector<Shape>* in, const Shape& out) {
  const auto& p = ParamsOf<PoolingParam>(attrs);
  const int spatial = p.global_pool ? out.ndim() - 2 : p.kernel.ndim();
  if (out.ndim() != spatial + 2) return;
  Shape d = DataFromOutput((*in)[0], out, [&](int i, int64_t o) -> int64_t {
    if (p.global_pool) return 0;
    const int64_t k = TupleAt(p.kernel, spatial, i, 1, 1), s = TupleAt(p.stride, spatial, i, 1, 1),
                  pd = TupleAt(p.pad, spatial, i, 0, 0);
    if (k < 0 || pd < 0 || s != 1) return 0;
    return WindowInputSize(attrs, o, k, pd, out);  // 'valid' and 'full' agree at stride 1
  });
  if (d.ndim() > 1 && d[1] == 0) d[1] = out[1];
  if (!(d == (*in)[0])) AssignShape(attrs, in, 0, d, "input");
}

bool PoolingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input (data), got " << in->size();
  const Shape& data = (*in)[0];
  PoolDataFromOutput(attrs, in, (*out)[0]);
  if (data.ndim() == 0) return false;
  const PoolGeom g = MakePoolGeom(attrs, data);
  std::vector<int64_t> od{data[0], data[1]};
  if (g.spatial == 2) od.push_back(g.oh);
  od.push_back(g.ow);
  AssignShape(attrs, out, 0, Shape(od), "output");
  PoolDataFromOutput(attrs, in, (*out)[0]);
  return AllKnown(*in) && AllKnown(*out);
}

bool PoolingType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  for (DType t : *in)
    TS_CHECK(t == DType::kUnknown || IsFloatingPoint(t))
        << OpLabel(attrs) << ": dtype " << DTypeName(t)
        << " is not supported (float16, bfloat16, float32, float64)";
  return ok;
}

// The window of output (y, x): [h0, h1) x [w0, w1) clipped to the input, and
// the avg divisor.
struct Window {
  int64_t h0, h1, w0, w1, size;
};

inline Window WindowAt(const PoolGeom& g, int64_t y, int64_t x) {
  Window r;
  int64_t hs = y * g.sh - g.ph, ws = x * g.sw - g.pw;
  int64_t he = std::min(hs + g.kh, g.h + g.ph), we = std::min(ws + g.kw, g.w + g.pw);
  r.size = (he - hs) * (we - ws);
  hs = std::max<int64_t>(hs, 0);
  ws = std::max<int64_t>(ws, 0);
  he = std::min(he, g.h);
  we = std::min(we, g.w);
  if (!g.include_pad) r.size = (he - hs) * (we - ws);
  r.h0 = hs;
  r.h1 = he;
  r.w0 = ws;
  r.w1 = we;
  return r;
}

template <typename T>
void PoolForward(const PoolGeom& g, const T* in, T* out, OpReqType req,
                 [[maybe_unused]] int threads) {
  using A = AccType<T>;
  const int64_t ihw = g.h * g.w, ohw = g.oh * g.ow;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (g.planes > 1)
#endif
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* src = in + pl * ihw;
    T* dst = out + pl * ohw;
    for (int64_t y = 0; y < g.oh; ++y)
      for (int64_t x = 0; x < g.ow; ++x) {
        const Window wd = WindowAt(g, y, x);
        A v;
        if (g.type == pool::kMaxPool) {
          v = std::numeric_limits<A>::lowest();
          for (int64_t i = wd.h0; i < wd.h1; ++i)
            for (int64_t j = wd.w0; j < wd.w1; ++j) {
              const A e = static_cast<A>(src[i * g.w + j]);
              if (e > v) v = e;
            }
        } else {
          v = 0;
          for (int64_t i = wd.h0; i < wd.h1; ++i)
            for (int64_t j = wd.w0; j < wd.w1; ++j) v += static_cast<A>(src[i * g.w + j]);
          if (g.type == pool::kAvgPool) v = wd.size > 0 ? v / static_cast<A>(wd.size) : A(0);
        }
        T& o = dst[y * g.ow + x];
        o = req == kAddTo ? static_cast<T>(static_cast<A>(o) + v) : static_cast<T>(v);
      }
  }
}

// Max pooling over 2x2 windows with stride 2 inside the input, the usual
// CNN pooling: each output's gradient goes to the first of its four inputs
// equal to it (row-major), as in the general loop, without the window
// arithmetic and search loops. A NaN output matches none and routes nothing.
bool IsMax2x2(const PoolGeom& g) {
  return g.type == pool::kMaxPool && g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 &&
         g.ph == 0 && g.pw == 0 && 2 * g.oh <= g.h && 2 * g.ow <= g.w;
}

template <typename T>
void MaxPool2x2BackwardPlane(const PoolGeom& g, const T* og, const T* src, const T* o, T* gi) {
  using A = AccType<T>;
  const int64_t w = g.w;
  for (int64_t y = 0; y < g.oh; ++y)
    for (int64_t x = 0; x < g.ow; ++x) {
      const int64_t top = 2 * y * w + 2 * x;
      const T m = o[y * g.ow + x];
      int64_t at = src[top] == m           ? top
                   : src[top + 1] == m     ? top + 1
                   : src[top + w] == m     ? top + w
                   : src[top + w + 1] == m ? top + w + 1
                                           : -1;
      if (at >= 0)
        gi[at] = static_cast<T>(static_cast<A>(gi[at]) + static_cast<A>(og[y * g.ow + x]));
    }
}

template <typename T>
void PoolBackward(const PoolGeom& g, const T* ograd, const T* in, const T* out, T* gin,
                  OpReqType req, [[maybe_unused]] int threads) {
  using A = AccType<T>;
  const int64_t ihw = g.h * g.w, ohw = g.oh * g.ow;
  const bool max2x2 = IsMax2x2(g);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (g.planes > 1)
#endif
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* src = in + pl * ihw;
    const T* og = ograd + pl * ohw;
    const T* o = out + pl * ohw;
    T* gi = gin + pl * ihw;
    // Accumulate in place: for write, start from zero.
    if (req != kAddTo) std::fill(gi, gi + ihw, T(0));
    if (max2x2) {
      MaxPool2x2BackwardPlane(g, og, src, o, gi);
      continue;
    }
    for (int64_t y = 0; y < g.oh; ++y)
      for (int64_t x = 0; x < g.ow; ++x) {
        const Window wd = WindowAt(g, y, x);
        const A gv = static_cast<A>(og[y * g.ow + x]);
        if (g.type == pool::kMaxPool) {
          const T m = o[y * g.ow + x];
          int64_t at = -1;
          for (int64_t i = wd.h0; i < wd.h1 && at < 0; ++i)
            for (int64_t j = wd.w0; j < wd.w1; ++j)
              if (src[i * g.w + j] == m) {
                at = i * g.w + j;
                break;
              }
          if (at >= 0) gi[at] = static_cast<T>(static_cast<A>(gi[at]) + gv);
        } else {
          const A share =
              g.type == pool::kAvgPool ? (wd.size > 0 ? gv / static_cast<A>(wd.size) : A(0)) : gv;
          for (int64_t i = wd.h0; i < wd.h1; ++i)
            for (int64_t j = wd.w0; j < wd.w1; ++j)
              gi[i * g.w + j] = static_cast<T>(static_cast<A>(gi[i * g.w + j]) + share);
        }
      }
  }
}

// float32 tries oneDNN first, which declines what it does not serve; the
// plain kernel does the rest.
void PoolingCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const PoolGeom g = MakePoolGeom(attrs, in[0].shape());
  const int threads = ctx.run_ctx.omp_threads;
  if (in[0].dtype() == DType::kFloat32 && g.planes > 0 && g.oh * g.ow > 0 &&
      DnnlPoolForward(g, in[0].shape()[0], in[0].shape()[1], in[0].dptr<float>(),
                      out[0].dptr<float>(), req[0], threads))
    return;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        PoolForward<T>(g, in[0].dptr<T>(), out[0].dptr<T>(), req[0], threads);
      },
      "Pooling");
}

// _backward_Pooling: inputs (ograd, data, out); output gdata. As the forward,
// but 2x2 max windows of stride 2 keep their loop, as fast as oneDNN there.
void PoolingBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                            const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                            const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const PoolGeom g = MakePoolGeom(attrs, in[1].shape());
  const int threads = ctx.run_ctx.omp_threads;
  if (in[0].dtype() == DType::kFloat32 && !IsMax2x2(g) && g.planes > 0 && g.oh * g.ow > 0 &&
      DnnlPoolBackward(g, in[1].shape()[0], in[1].shape()[1], in[0].dptr<float>(),
                       in[1].dptr<float>(), out[0].dptr<float>(), req[0], threads,
                       ctx.requested[0]))
    return;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        PoolBackward<T>(g, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(), out[0].dptr<T>(),
                        req[0], threads);
      },
      "_backward_Pooling");
}

bool PoolingBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, in, 2, (*in)[0], "input");
  AssignShape(attrs, in, 0, (*in)[2], "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "input");
  return AllKnown(*in) && AllKnown(*out);
}

struct PoolingGrad {
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    return MakeGradNode("_backward_Pooling", n, {ograds[0], n->inputs[0], NodeEntry{n, 0, 0}});
  }
};

}  // namespace

TS_REGISTER_OP(Pooling)
    .describe(R"(Performs pooling on the input, as MXNet.

data is (batch, channel, width) or (batch, channel, height, width). pool_type
'max', 'avg' or 'sum' over windows of size kernel moved by stride over the
input padded by pad on both sides. Output size per spatial axis:
'valid' (default): floor((x + 2 * pad - kernel) / stride) + 1;
'full': ceil((x + 2 * pad - kernel) / stride) + 1.
global_pool pools each whole feature map to 1 (kernel, stride and pad ignored).
Windows are clipped to the input; padded elements never win a max; avg divides
by the window size including padding unless count_include_pad = False.)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<PoolingParam>)
    .add_argument("data", "NDArray", "Input data to the pooling operator.")
    .add_arguments(PoolingParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", PoolingShape)
    .set_attr<FInferType>("FInferType", PoolingType)
    .set_attr<FCompute>(kFComputeCPU, PoolingCompute)
    .set_attr<FGradient>("FGradient", PoolingGrad{});

TS_REGISTER_OP(_backward_Pooling)
    .describe(
        "Gradient of Pooling. Inputs: ograd, data, out (the forward output, which "
        "locates each max); output: the gradient of data.")
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<PoolingParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", PoolingBackwardShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<3, 1>)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, PoolingBackwardCompute);

}  // namespace tessera::op
