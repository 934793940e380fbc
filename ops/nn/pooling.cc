// Pooling and _backward_Pooling (pooling-inl.h states the semantics): the
// geometry, shape and type inference, the plain kernels, parallel over the
// (batch, channel) planes for every float dtype, the dispatch between them and
// oneDNN (pooling_dnnl.cc), max pooling's hidden workspace, and the
// registration.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "ops/nn/channel_blocks.h"
#include "ops/nn/pooling-inl.h"
#include "ops/nn/spatial_params.h"

namespace tessera::op {

PoolGeom MakePoolGeom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<PoolingParam>(attrs);
  PoolGeom g;
  g.type = p.pool_type;
  if (g.type == pool::kLpPool) {
    TS_CHECK(p.p_value && *p.p_value >= 1 && *p.p_value <= 3)
        << OpLabel(attrs) << ": pool_type 'lp' needs p_value 1, 2 or 3, got "
        << (p.p_value ? std::to_string(*p.p_value) : std::string("None"));
    g.p = *p.p_value;
  }
  g.include_pad = p.count_include_pad.value_or(true);
  const int spatial = p.global_pool ? data.ndim() - 2 : p.kernel.ndim();
  TS_CHECK(spatial >= 1 && spatial <= 3)
      << OpLabel(attrs) << ": only 1-D, 2-D and 3-D pooling is supported, got "
      << (p.global_pool ? "data of shape " : "kernel ") << (p.global_pool ? data : p.kernel);
  TS_CHECK(data.ndim() == spatial + 2)
      << OpLabel(attrs) << ": data has shape " << data << " but a " << spatial << "-D kernel "
      << p.kernel << " needs " << spatial + 2 << "-D data";
  CheckSpatialLayout(attrs, p.layout, spatial);
  g.spatial = spatial;
  g.planes = MulDims(data[0], data[1], OpLabel(attrs));
  g.d = spatial == 3 ? data[2] : 1;
  g.h = spatial >= 2 ? data[spatial] : 1;
  g.w = data[spatial + 1];
  if (p.global_pool) {
    g.kd = g.d;
    g.kh = g.h;
    g.kw = g.w;
    g.od = 1;
    g.oh = 1;
    g.ow = 1;
    return g;
  }
  SpatialTuple3(attrs, "kernel", p.kernel, spatial, 1, 1, data, &g.kd, &g.kh, &g.kw);
  SpatialTuple3(attrs, "stride", p.stride, spatial, 1, 1, data, &g.sd, &g.sh, &g.sw);
  SpatialTuple3(attrs, "pad", p.pad, spatial, 0, 0, data, &g.pd, &g.ph, &g.pw);
  TS_CHECK(p.pooling_convention != pool::kSame || (g.pd == 0 && g.ph == 0 && g.pw == 0))
      << OpLabel(attrs) << ": pooling_convention 'same' takes no pad (got " << p.pad
      << "), as MXNet's";
  auto out_dim = [&](int64_t x, int64_t k, int64_t s, int64_t pd, const char* axis) -> int64_t {
    if (x == 0) return 0;
    // pd is at most kMaxSpatialParam (SpatialTuple): only x can overflow the sum.
    const int64_t padded = AddDims(x, 2 * pd, OpLabel(attrs));
    TS_CHECK(k <= padded) << OpLabel(attrs) << ": kernel " << p.kernel << " (" << k << " along "
                          << axis << ") exceeds the padded input " << padded << " of data of shape "
                          << data;
    const int64_t span = padded - k;
    if (p.pooling_convention == pool::kSame) return (padded + s - 1) / s;  // MXNet's ceil
    return 1 + (p.pooling_convention == pool::kFull ? (span + s - 1) / s : span / s);
  };
  g.od = spatial == 3 ? out_dim(g.d, g.kd, g.sd, g.pd, "depth") : 1;
  g.oh = spatial >= 2 ? out_dim(g.h, g.kh, g.sh, g.ph, "height") : 1;
  g.ow = out_dim(g.w, g.kw, g.sw, g.pw, "width");
  return g;
}

bool PoolHasWorkspace(const NodeAttrs& attrs) {
  return ParamsOf<PoolingParam>(attrs).pool_type == pool::kMaxPool;
}

int64_t PoolWorkspaceBytes(const NodeAttrs& attrs, const PoolGeom& g, int64_t n, int64_t c) {
  const std::string label = OpLabel(attrs) + " workspace";
  const int64_t per = MulDims(MulDims(g.kd, g.kh, label), g.kw, label) <= 255 ? 1 : 4;
  const int64_t outputs =
      MulDims(MulDims(n, c, label), MulDims(MulDims(g.od, g.oh, label), g.ow, label), label);
  return AddDims(MulDims(outputs, per, label), 1, label);
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
    if (k < 0 || pd < 0 || s != 1 || p.pooling_convention == pool::kSame) return 0;
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
  if (g.spatial == 3) od.push_back(g.od);
  if (g.spatial >= 2) od.push_back(g.oh);
  od.push_back(g.ow);
  AssignShape(attrs, out, 0, Shape(od), "output");
  PoolDataFromOutput(attrs, in, (*out)[0]);
  if (out->size() > 1 && AllKnown(*in))
    AssignShape(attrs, out, 1, Shape{PoolWorkspaceBytes(attrs, g, data[0], data[1])}, "workspace");
  return AllKnown(*in) && AllKnown(*out);
}

void CheckPoolDType(const NodeAttrs& attrs, DType t) {
  TS_CHECK(t == DType::kUnknown || IsFloatingPoint(t))
      << OpLabel(attrs) << ": dtype " << DTypeName(t)
      << " is not supported (float16, bfloat16, float32, float64)";
}

// The data, output (and gradients) share one float dtype; the workspace
// (a hidden output of max pooling, an input of its backward) is bytes.
bool PoolingTypeWithWorkspace(const NodeAttrs& attrs, std::vector<DType>* in,
                              std::vector<DType>* out, size_t n_in, size_t n_out) {
  std::vector<DType> in_f(in->begin(), in->begin() + n_in),
      out_f(out->begin(), out->begin() + n_out);
  const bool ok = SameTypeAll(attrs, &in_f, &out_f);
  std::copy(in_f.begin(), in_f.end(), in->begin());
  std::copy(out_f.begin(), out_f.end(), out->begin());
  for (DType t : in_f) CheckPoolDType(attrs, t);
  if (in->size() > n_in) AssignType(attrs, in, n_in, DType::kUint8, "workspace");
  if (out->size() > n_out) AssignType(attrs, out, n_out, DType::kUint8, "workspace");
  return ok;
}

bool PoolingType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return PoolingTypeWithWorkspace(attrs, in, out, 1, 1);
}

bool PoolingBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return PoolingTypeWithWorkspace(attrs, in, out, 3, 1);
}

uint32_t PoolingNumOutputs(const NodeAttrs& attrs) {
  return PoolHasWorkspace(attrs) ? 2 : 1;
}

uint32_t PoolingBackwardNumInputs(const NodeAttrs& attrs) {
  return PoolHasWorkspace(attrs) ? 4 : 3;
}

template <typename T>
void PoolForward(const PoolGeom& g, const T* in, T* out, OpReqType req,
                 [[maybe_unused]] int threads) {
  using A = AccType<T>;
  const int64_t isz = g.in_size(), osz = g.out_size();
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (g.planes > 1)
#endif
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* src = in + pl * isz;
    T* dst = out + pl * osz;
    for (int64_t z = 0; z < g.od; ++z)
      for (int64_t y = 0; y < g.oh; ++y)
        for (int64_t x = 0; x < g.ow; ++x) {
          const A v = PoolValueAt(g, src, z, y, x);
          T& o = dst[(z * g.oh + y) * g.ow + x];
          o = req == kAddTo ? static_cast<T>(static_cast<A>(o) + v) : static_cast<T>(v);
        }
  }
}

// Max pooling over 2x2 windows with stride 2 inside the input, the usual
// CNN pooling: each output's gradient goes to the first of its four inputs
// equal to it (row-major), as in the general loop, without the window
// arithmetic and search loops. A NaN output matches none and routes nothing.
bool IsMax2x2(const PoolGeom& g) {
  return g.type == pool::kMaxPool && g.spatial <= 2 && g.kh == 2 && g.kw == 2 && g.sh == 2 &&
         g.sw == 2 && g.ph == 0 && g.pw == 0 && 2 * g.oh <= g.h && 2 * g.ow <= g.w;
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
  const int64_t isz = g.in_size(), osz = g.out_size();
  const bool max2x2 = IsMax2x2(g);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (g.planes > 1)
#endif
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* src = in + pl * isz;
    const T* og = ograd + pl * osz;
    const T* o = out + pl * osz;
    T* gi = gin + pl * isz;
    // Accumulate in place: for write, start from zero.
    if (req != kAddTo) std::fill(gi, gi + isz, T(0));
    if (max2x2) {
      MaxPool2x2BackwardPlane(g, og, src, o, gi);
      continue;
    }
    for (int64_t z = 0; z < g.od; ++z)
      for (int64_t y = 0; y < g.oh; ++y)
        for (int64_t x = 0; x < g.ow; ++x) {
          const Window wd = WindowAt(g, z, y, x);
          const int64_t oat = (z * g.oh + y) * g.ow + x;
          const A gv = static_cast<A>(og[oat]);
          if (g.type == pool::kMaxPool) {
            const T m = o[oat];
            int64_t found = -1;
            ForWindow(g, wd, [&](int64_t at) {
              if (src[at] != m) return true;
              found = at;
              return false;
            });
            if (found >= 0) gi[found] = static_cast<T>(static_cast<A>(gi[found]) + gv);
          } else if (g.type == pool::kLpPool) {
            // d/dx (sum x^p)^(1/p) = x^(p-1) / out^(p-1); nothing where out is 0.
            const A m = static_cast<A>(o[oat]);
            ForWindow(g, wd, [&](int64_t at) {
              const A x = static_cast<A>(src[at]);
              const A d = g.p == 1 ? A(1) : (m == A(0) ? A(0) : LpPow(x / m, g.p - 1));
              gi[at] = static_cast<T>(static_cast<A>(gi[at]) + gv * d);
              return true;
            });
          } else {
            const A share =
                g.type == pool::kAvgPool ? (wd.size > 0 ? gv / static_cast<A>(wd.size) : A(0)) : gv;
            ForWindow(g, wd, [&](int64_t at) {
              gi[at] = static_cast<T>(static_cast<A>(gi[at]) + share);
              return true;
            });
          }
        }
  }
}

// Channel-blocked arrays (FLayoutClasses below) that oneDNN declined: the
// plain loops on row-major copies (channel_blocks.h), the result blocked
// back. An array of one position per channel is the same bytes either way.
struct BlockedDims {
  int64_t n, c, hw, ohw;
  BlockedDims(const PoolGeom& g, const Shape& data)
      : n(data[0]), c(data[1]), hw(g.h * g.w), ohw(g.oh * g.ow) {}
};

void BlockedPoolForward(const PoolGeom& g, const OpContext& ctx, const TBlob& in, OpReqType req,
                        const TBlob& out) {
  const BlockedDims d(g, in.shape());
  const float* x = RowMajorCopy(0, in.dptr<float>(), d.n, d.c, d.hw);
  float* y = out.dptr<float>();
  if (d.ohw > 1) y = RowMajorCopy(1, req == kAddTo ? y : nullptr, d.n, d.c, d.ohw);
  PoolForward<float>(g, x, y, req, ctx.run_ctx.omp_threads);
  if (d.ohw > 1) Block(y, out.dptr<float>(), d.n, d.c, d.ohw);
}

void BlockedPoolBackward(const PoolGeom& g, const OpContext& ctx, const std::vector<TBlob>& in,
                         OpReqType req, const TBlob& gdata) {
  const BlockedDims d(g, in[1].shape());
  auto plain = [&](int slot, const float* p, int64_t hw) -> const float* {
    return hw > 1 ? RowMajorCopy(slot, p, d.n, d.c, hw) : p;
  };
  const float *og = plain(0, in[0].dptr<float>(), d.ohw), *x = plain(1, in[1].dptr<float>(), d.hw),
              *y = plain(2, in[2].dptr<float>(), d.ohw);
  float* gi = gdata.dptr<float>();
  if (d.hw > 1) gi = RowMajorCopy(3, req == kAddTo ? gi : nullptr, d.n, d.c, d.hw);
  PoolBackward<float>(g, og, x, y, gi, req, ctx.run_ctx.omp_threads);
  if (d.hw > 1) Block(gi, gdata.dptr<float>(), d.n, d.c, d.hw);
}

// float32 tries oneDNN first, which declines what it does not serve; the
// plain kernel does the rest. Returns whether oneDNN's training forward kept
// the positions of the maxima in `ws`.
bool PoolForwardAny(const PoolGeom& g, const OpContext& ctx, const TBlob& in, OpReqType req,
                    const TBlob& out, uint8_t* ws, int64_t ws_bytes) {
  const int threads = ctx.run_ctx.omp_threads;
  if (in.dtype() == DType::kFloat32 && g.spatial <= 2 && g.planes > 0 && g.oh * g.ow > 0) {
    const int64_t n = in.shape()[0], c = in.shape()[1];
    const float* x = in.dptr<float>();
    float* y = out.dptr<float>();
    if (ws && DnnlPoolForward(g, n, c, x, y, req, threads, ws, ws_bytes)) return true;
    if (DnnlPoolForward(g, n, c, x, y, req, threads, nullptr, 0)) return false;
  }
  if (g.blocked) {
    BlockedPoolForward(g, ctx, in, req, out);
    return false;
  }
  SwitchFloatDType(
      in.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        PoolForward<T>(g, in.dptr<T>(), out.dptr<T>(), req, threads);
      },
      "Pooling");
  return false;
}

// The workspace (out[1]) is filled in training only; its last byte says
// whether it was.
void PoolingCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const bool has_ws = out.size() > 1 && req[1] != kNullOp;
  uint8_t* ws = has_ws ? out[1].dptr<uint8_t>() : nullptr;
  const int64_t ws_bytes = has_ws ? out[1].Size() - 1 : 0;
  if (req[0] == kNullOp) {
    if (has_ws) ws[ws_bytes] = 0;
    return;
  }
  PoolGeom g = MakePoolGeom(attrs, in[0].shape());
  g.blocked = in[0].channel_blocked();
  const bool kept =
      PoolForwardAny(g, ctx, in[0], req[0], out[0], ctx.is_train ? ws : nullptr, ws_bytes);
  if (has_ws) ws[ws_bytes] = kept ? 1 : 0;
}

// _backward_Pooling: inputs (ograd, data, out[, workspace]); output gdata.
// float32 max pooling runs oneDNN's backward on the workspace when the
// forward kept one; else, as the forward, oneDNN where it serves (max
// pooling then recomputes the positions, except on 2x2 windows of stride 2,
// whose loop is as fast), else the loop.
void PoolingBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                            const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                            const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  PoolGeom g = MakePoolGeom(attrs, in[1].shape());
  g.blocked = in[1].channel_blocked();
  const int threads = ctx.run_ctx.omp_threads;
  if (in[0].dtype() == DType::kFloat32 && g.spatial <= 2 && g.planes > 0 && g.oh * g.ow > 0) {
    const int64_t n = in[1].shape()[0], c = in[1].shape()[1];
    const float* og = in[0].dptr<float>();
    float* gi = out[0].dptr<float>();
    if (in.size() > 3) {
      const uint8_t* ws = in[3].dptr<uint8_t>();
      const int64_t ws_bytes = in[3].Size() - 1;
      if (ws[ws_bytes] == 1 &&
          DnnlPoolBackwardFromWorkspace(g, n, c, og, gi, req[0], threads, ws, ws_bytes))
        return;
    }
    // Blocked arrays: oneDNN even for 2x2 windows, sparing the copies.
    if ((g.blocked || !IsMax2x2(g)) &&
        DnnlPoolBackward(g, n, c, og, in[1].dptr<float>(), gi, req[0], threads, ctx.requested[0]))
      return;
  }
  if (g.blocked) return BlockedPoolBackward(g, ctx, in, req[0], out[0]);
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
  const Shape& data = (*in)[1];
  if (in->size() > 3 && data.known()) {
    const PoolGeom g = MakePoolGeom(attrs, data);
    AssignShape(attrs, in, 3, Shape{PoolWorkspaceBytes(attrs, g, data[0], data[1])}, "workspace");
  }
  return AllKnown(*in) && AllKnown(*out);
}

struct PoolingGrad {
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    std::vector<NodeEntry> in{ograds[0], n->inputs[0], NodeEntry{n, 0, 0}};
    if (PoolHasWorkspace(n->attrs)) in.push_back(NodeEntry{n, 1, 0});
    return MakeGradNode("_backward_Pooling", n, std::move(in));
  }
};

}  // namespace

namespace {

// 2-D pooling reads and writes its data, output and their gradients in
// either layout, all in one (oneDNN's primitives take the blocked one; the
// loops get row-major copies); the workspace is bytes.
LayoutClasses PoolingLayouts(const NodeAttrs&, const std::vector<Shape>& in) {
  if (in[0].ndim() != 4) return {};
  return {{1}, {1, kLayoutPlain}};
}

// _backward_Pooling: (ograd, data, out[, workspace]) -> gdata.
LayoutClasses PoolingBackwardLayouts(const NodeAttrs&, const std::vector<Shape>& in) {
  if (in[1].ndim() != 4) return {};
  return {{1, 1, 1, kLayoutPlain}, {1}};
}

}  // namespace

TS_REGISTER_OP(Pooling)
    .describe(R"(Performs pooling on the input, as MXNet.

data is (batch, channel, width), (batch, channel, height, width) or (batch,
channel, depth, height, width) (3-D on the plain kernels). pool_type
'max', 'avg' or 'sum' over windows of size kernel moved by stride over the
input padded by pad on both sides. Output size per spatial axis:
'valid' (default): floor((x + 2 * pad - kernel) / stride) + 1;
'full': ceil((x + 2 * pad - kernel) / stride) + 1.
global_pool pools each whole feature map to 1 (kernel, stride and pad ignored).
Windows are clipped to the input; padded elements never win a max; avg divides
by the window size including padding unless count_include_pad = False.

Max pooling keeps a hidden second output for its backward, as MXNet's oneDNN
pooling does: the position of each maximum, written by a training forward.)")
    .set_num_inputs(1)
    .set_num_outputs(PoolingNumOutputs)
    .set_attr_parser(ParamParser<PoolingParam>)
    .add_argument("data", "NDArray", "Input data to the pooling operator.")
    .add_arguments(PoolingParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs& attrs) {
                                  if (!PoolHasWorkspace(attrs))
                                    return std::vector<std::string>{"output"};
                                  return std::vector<std::string>{"output", "workspace"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", PoolingShape)
    .set_attr<FInferType>("FInferType", PoolingType)
    .set_attr<FCompute>(kFComputeCPU, PoolingCompute)
    .set_attr<FLayoutClasses>("FLayoutClasses", PoolingLayouts)
    .set_attr<FGradient>("FGradient", PoolingGrad{});

TS_REGISTER_OP(_backward_Pooling)
    .describe(
        "Gradient of Pooling. Inputs: ograd, data, out (the forward output, which "
        "locates each max) and, for max pooling, the forward's hidden workspace; output: "
        "the gradient of data.")
    .set_num_inputs(PoolingBackwardNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<PoolingParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", PoolingBackwardShape)
    .set_attr<FInferType>("FInferType", PoolingBackwardType)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, PoolingBackwardCompute)
    .set_attr<FLayoutClasses>("FLayoutClasses", PoolingBackwardLayouts);

}  // namespace tessera::op
