// Pooling and _backward_Pooling (1-D and 2-D; max, avg, sum; global; 'valid'
// and 'full' conventions), MXNet's parameters and semantics: windows are
// clipped to the input, avg divides by the window size counted over the
// padding (count_include_pad, default True) or over the input elements only,
// and the max backward routes each output gradient to the first input of its
// window equal to the output. Plain kernels, parallel over the (batch,
// channel) planes; every float dtype. float32 forwards whose semantics
// oneDNN shares (max; avg unless a 'full' window reaches past the padding)
// run oneDNN's pooling on the plain layout, primitives cached per shape.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "ops/tensor/dnnl_util.h"

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"

namespace tessera::op {

namespace {

enum PoolType { kMaxPool = 0, kAvgPool = 1, kSumPool = 2, kLpPool = 3 };
enum PoolConvention { kValid = 0, kFull = 1, kSame = 2 };

struct PoolingParam : Params<PoolingParam> {
  Shape kernel, stride, pad;
  int pool_type = kMaxPool;
  bool global_pool = false;
  bool cudnn_off = false;
  int pooling_convention = kValid;
  std::optional<int> p_value;
  std::optional<bool> count_include_pad;
  std::optional<std::string> layout;
  static void Declare(ParamDecl<PoolingParam>& d) {
    d.field("kernel", &PoolingParam::kernel)
        .set_default(Shape())
        .describe("Pooling kernel size: (w,) or (h, w). Ignored when global_pool.");
    d.field("pool_type", &PoolingParam::pool_type)
        .set_default(kMaxPool)
        .add_enum("max", kMaxPool)
        .add_enum("avg", kAvgPool)
        .add_enum("sum", kSumPool)
        .add_enum("lp", kLpPool)
        .describe("Pooling type to be applied ('lp' is not supported).");
    d.field("global_pool", &PoolingParam::global_pool)
        .set_default(false)
        .describe("Ignore kernel size, do global pooling based on current input feature map.");
    d.field("cudnn_off", &PoolingParam::cudnn_off)
        .set_default(false)
        .describe("Turn off cudnn pooling and use MXNet pooling operator.");
    d.field("pooling_convention", &PoolingParam::pooling_convention)
        .set_default(kValid)
        .add_enum("valid", kValid)
        .add_enum("full", kFull)
        .add_enum("same", kSame)
        .describe(
            "Pooling convention: 'valid' out = floor((x + 2 pad - kernel) / stride) + 1, "
            "'full' the same with ceil ('same' is not supported).");
    d.field("stride", &PoolingParam::stride)
        .set_default(Shape())
        .describe("Stride for pooling: (w,) or (h, w). Defaults to 1 for each dimension.");
    d.field("pad", &PoolingParam::pad)
        .set_default(Shape())
        .describe("Pad for pooling: (w,) or (h, w). Defaults to no padding.");
    d.field("p_value", &PoolingParam::p_value)
        .set_default(std::nullopt)
        .describe("Value of p for Lp pooling (unused: 'lp' is not supported).");
    d.field("count_include_pad", &PoolingParam::count_include_pad)
        .set_default(std::nullopt)
        .describe(
            "For avg pooling: whether padded elements count in the divisor. None means "
            "True, as MXNet.");
    d.field("layout", &PoolingParam::layout)
        .set_default(std::nullopt)
        .describe("Data layout: None (the default for the data's rank), 'NCW' or 'NCHW'.");
  }
};

struct PoolGeom {
  int spatial = 2;
  int64_t planes = 0, h = 1, w = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 1, ow = 0;
  int type = kMaxPool;
  bool include_pad = true;
};

void PoolTuple(const NodeAttrs& attrs, const char* name, const Shape& s, int spatial, int64_t fill,
               int64_t min, const Shape& data, int64_t* h, int64_t* w) {
  if (s.ndim() == 0) {
    *h = spatial == 2 ? fill : 1;
    *w = fill;
    return;
  }
  TS_CHECK(s.ndim() == spatial) << OpLabel(attrs) << ": parameter '" << name << "' is " << s
                                << ", expected " << spatial << " value(s) for data of shape "
                                << data;
  for (int i = 0; i < spatial; ++i)
    TS_CHECK(s[i] >= min) << OpLabel(attrs) << ": parameter '" << name << "' is " << s
                          << ", every value must be >= " << min;
  *h = spatial == 2 ? s[0] : 1;
  *w = s[spatial - 1];
}

PoolGeom MakePoolGeom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<PoolingParam>(attrs);
  TS_CHECK(p.pool_type != kLpPool) << OpLabel(attrs) << ": pool_type 'lp' is not supported";
  TS_CHECK(p.pooling_convention != kSame)
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
  if (p.layout) {
    const char* want = spatial == 1 ? "NCW" : "NCHW";
    TS_CHECK(*p.layout == want) << OpLabel(attrs) << ": layout '" << *p.layout
                                << "' is not supported for " << spatial << "-D pooling, expected '"
                                << want << "'";
  }
  g.spatial = spatial;
  g.planes = data[0] * data[1];
  g.h = spatial == 2 ? data[2] : 1;
  g.w = data[spatial + 1];
  if (p.global_pool) {
    g.kh = g.h;
    g.kw = g.w;
    g.oh = 1;
    g.ow = 1;
    return g;
  }
  PoolTuple(attrs, "kernel", p.kernel, spatial, 1, 1, data, &g.kh, &g.kw);
  PoolTuple(attrs, "stride", p.stride, spatial, 1, 1, data, &g.sh, &g.sw);
  PoolTuple(attrs, "pad", p.pad, spatial, 0, 0, data, &g.ph, &g.pw);
  if (spatial == 1) g.ph = 0;
  auto out_dim = [&](int64_t x, int64_t k, int64_t s, int64_t pd, const char* axis) -> int64_t {
    if (x == 0) return 0;
    TS_CHECK(k <= x + 2 * pd) << OpLabel(attrs) << ": kernel " << p.kernel << " (" << k << " along "
                              << axis << ") exceeds the padded input " << x + 2 * pd
                              << " of data of shape " << data;
    const int64_t span = x + 2 * pd - k;
    return 1 + (p.pooling_convention == kFull ? (span + s - 1) / s : span / s);
  };
  g.oh = spatial == 2 ? out_dim(g.h, g.kh, g.sh, g.ph, "height") : 1;
  g.ow = out_dim(g.w, g.kw, g.sw, g.pw, "width");
  return g;
}

bool PoolingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input (data), got " << in->size();
  const Shape& data = (*in)[0];
  if (data.ndim() == 0) return false;
  const PoolGeom g = MakePoolGeom(attrs, data);
  std::vector<int64_t> od{data[0], data[1]};
  if (g.spatial == 2) od.push_back(g.oh);
  od.push_back(g.ow);
  AssignShape(attrs, out, 0, Shape(od), "output");
  if (data[0] == 0 && (*out)[0][0] != 0) {
    Shape d = data;
    d[0] = (*out)[0][0];
    AssignShape(attrs, in, 0, d, "input");
  }
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
        if (g.type == kMaxPool) {
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
          if (g.type == kAvgPool) v = wd.size > 0 ? v / static_cast<A>(wd.size) : A(0);
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
  return g.type == kMaxPool && g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 &&
         g.pw == 0 && 2 * g.oh <= g.h && 2 * g.ow <= g.w;
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
        if (g.type == kMaxPool) {
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
              g.type == kAvgPool ? (wd.size > 0 ? gv / static_cast<A>(wd.size) : A(0)) : gv;
          for (int64_t i = wd.h0; i < wd.h1; ++i)
            for (int64_t j = wd.w0; j < wd.w1; ++j)
              gi[i * g.w + j] = static_cast<T>(static_cast<A>(gi[i * g.w + j]) + share);
        }
      }
  }
}

// oneDNN pooling (float32, plain layout). The calls return false where
// oneDNN's semantics differ from MXNet's (sum; avg counting the padding when a
// 'full' window reaches past it; padding as large as the kernel; add).
using PoolKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t, int>;

PoolKey MakePoolKey(const PoolGeom& g, int64_t n, int64_t c, int64_t prh, int64_t prw,
                    dnnl::algorithm alg) {
  return {g.spatial, n, c, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, prh, prw, int(alg)};
}

// oneDNN's algorithm and right padding for `g`, or false where its semantics
// differ from MXNet's.
bool DnnlPoolAlg(const PoolGeom& g, dnnl::algorithm* alg, int64_t* prh, int64_t* prw) {
  if (g.type == kSumPool || g.ph >= g.kh || g.pw >= g.kw) return false;
  *prh = (g.oh - 1) * g.sh + g.kh - g.h - g.ph;
  *prw = (g.ow - 1) * g.sw + g.kw - g.w - g.pw;
  if (*prh < 0 || *prw < 0) return false;
  *alg = dnnl::algorithm::pooling_max;
  if (g.type == kAvgPool) {
    if (g.include_pad && (*prh > g.ph || *prw > g.pw)) return false;
    *alg = g.include_pad ? dnnl::algorithm::pooling_avg_include_padding
                         : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  return true;
}

// Plain-layout descriptors of the input and output of `g`.
std::pair<dnnl::memory::desc, dnnl::memory::desc> PoolDescs(const PoolGeom& g, int64_t n,
                                                            int64_t c) {
  using dnnl::memory;
  using Dims = memory::dims;
  const bool d2 = g.spatial == 2;
  const auto tag = d2 ? memory::format_tag::nchw : memory::format_tag::ncw;
  return {
      memory::desc(d2 ? Dims{n, c, g.h, g.w} : Dims{n, c, g.w}, memory::data_type::f32, tag),
      memory::desc(d2 ? Dims{n, c, g.oh, g.ow} : Dims{n, c, g.ow}, memory::data_type::f32, tag)};
}

dnnl::pooling_forward::desc PoolForwardDesc(const PoolGeom& g, dnnl::prop_kind kind,
                                            dnnl::algorithm alg, const dnnl::memory::desc& src,
                                            const dnnl::memory::desc& dst, int64_t prh,
                                            int64_t prw) {
  using Dims = dnnl::memory::dims;
  const bool d2 = g.spatial == 2;
  auto sp = [&](int64_t a, int64_t b) { return d2 ? Dims{a, b} : Dims{b}; };
  return dnnl::pooling_forward::desc(kind, alg, src, dst, sp(g.sh, g.sw), sp(g.kh, g.kw),
                                     sp(g.ph, g.pw), sp(prh, prw));
}

bool DnnlPoolForward(const PoolGeom& g, int64_t n, int64_t c, const float* in, float* out,
                     OpReqType req, int threads) {
  if (req != kWriteTo && req != kWriteInplace) return false;
  dnnl::algorithm alg;
  int64_t prh, prw;
  if (!DnnlPoolAlg(g, &alg, &prh, &prw)) return false;
  struct Prim {
    dnnl::memory::desc src, dst;
    dnnl::pooling_forward fwd;
  };
  static nn_dnnl::PrimitiveCache<PoolKey, Prim> cache;
  try {
    auto p = cache.Get(MakePoolKey(g, n, c, prh, prw, alg), [&] {
      auto made = std::make_shared<Prim>();
      std::tie(made->src, made->dst) = PoolDescs(g, n, c);
      made->fwd = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(
          PoolForwardDesc(g, dnnl::prop_kind::forward_inference, alg, made->src, made->dst, prh,
                          prw),
          nn_dnnl::CpuEngine()));
      return made;
    });
    const auto& eng = nn_dnnl::CpuEngine();
    nn_dnnl::RunPrimitive(p->fwd,
                          {{DNNL_ARG_SRC, dnnl::memory(p->src, eng, const_cast<float*>(in))},
                           {DNNL_ARG_DST, dnnl::memory(p->dst, eng, out)}},
                          threads);
  } catch (const dnnl::error&) {
    return false;  // the plain kernel does it
  }
  return true;
}

// oneDNN pooling backward (float32, plain layout, written not added). Max
// pooling's backward needs the positions of the maxima, which oneDNN keeps
// in the workspace of a training forward: that forward is run first, into
// temp space. Measured on 2 threads (tests/bench/nn_dnnl_bench.cc) the pair
// ran 1.8x ahead of the loop for 3x3 windows with stride 2 and broke even on
// 2x2 windows with stride 2, which keep their own loop.
bool DnnlPoolBackward(const PoolGeom& g, int64_t n, int64_t c, const float* ograd, const float* in,
                      float* gin, OpReqType req, int threads, const Resource& temp) {
  if (req != kWriteTo) return false;
  dnnl::algorithm alg;
  int64_t prh, prw;
  if (!DnnlPoolAlg(g, &alg, &prh, &prw)) return false;
  struct Prim {
    dnnl::memory::desc src, dst, ws;
    dnnl::pooling_forward fwd;  // max only: makes the workspace
    dnnl::pooling_backward bwd;
  };
  static nn_dnnl::PrimitiveCache<PoolKey, Prim> cache;
  const bool max = alg == dnnl::algorithm::pooling_max;
  try {
    auto p = cache.Get(MakePoolKey(g, n, c, prh, prw, alg), [&] {
      auto made = std::make_shared<Prim>();
      std::tie(made->src, made->dst) = PoolDescs(g, n, c);
      const auto& eng = nn_dnnl::CpuEngine();
      dnnl::pooling_forward::primitive_desc fpd(
          PoolForwardDesc(g, dnnl::prop_kind::forward_training, alg, made->src, made->dst, prh,
                          prw),
          eng);
      if (max) {
        made->fwd = dnnl::pooling_forward(fpd);
        made->ws = fpd.workspace_desc();
      }
      using Dims = dnnl::memory::dims;
      const bool d2 = g.spatial == 2;
      auto sp = [&](int64_t a, int64_t b) { return d2 ? Dims{a, b} : Dims{b}; };
      made->bwd = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
          dnnl::pooling_backward::desc(alg, made->src, made->dst, sp(g.sh, g.sw), sp(g.kh, g.kw),
                                       sp(g.ph, g.pw), sp(prh, prw)),
          eng, fpd));
      return made;
    });
    using dnnl::memory;
    const auto& eng = nn_dnnl::CpuEngine();
    memory diff_dst(p->dst, eng, const_cast<float*>(ograd)), diff_src(p->src, eng, gin);
    if (!max) {
      nn_dnnl::RunPrimitive(p->bwd, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}},
                            threads);
      return true;
    }
    nn_dnnl::Carver carve;
    const size_t at_dst = carve.Add(p->dst.get_size()), at_ws = carve.Add(p->ws.get_size());
    char* tmp = static_cast<char*>(temp.get_space(carve.Total()));
    memory ws(p->ws, eng, tmp + at_ws);
    nn_dnnl::RunPrimitive(p->fwd,
                          {{DNNL_ARG_SRC, memory(p->src, eng, const_cast<float*>(in))},
                           {DNNL_ARG_DST, memory(p->dst, eng, tmp + at_dst)},
                           {DNNL_ARG_WORKSPACE, ws}},
                          threads);
    nn_dnnl::RunPrimitive(
        p->bwd,
        {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}, {DNNL_ARG_WORKSPACE, ws}},
        threads);
  } catch (const dnnl::error&) {
    return false;  // the loop does it
  }
  return true;
}

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

// _backward_Pooling: inputs (ograd, data, out); output gdata.
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
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs&) { return std::vector<std::string>{"data"}; })
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
