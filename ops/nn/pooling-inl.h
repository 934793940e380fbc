// Pooling (1-D, 2-D and 3-D; max, avg, sum; global; 'valid' and 'full'
// conventions), MXNet's parameters and semantics: windows are clipped to the
// input, avg divides by the window size counted over the padding
// (count_include_pad, default True) or over the input elements only, and the
// max backward routes each output gradient to the first input of its window
// equal to the output. The plain kernels, for every float dtype, and the
// registration are in pooling.cc; float32 calls whose semantics oneDNN shares
// run its pooling (pooling_dnnl.cc) first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <cmath>

#include "engine/base/dtype.h"
#include "engine/base/host_device.h"
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"

namespace tessera::op {

namespace pool {
enum PoolType { kMaxPool = 0, kAvgPool = 1, kSumPool = 2, kLpPool = 3 };
enum PoolConvention { kValid = 0, kFull = 1, kSame = 2 };
}  // namespace pool

struct PoolingParam : Params<PoolingParam> {
  Shape kernel, stride, pad;
  int pool_type = pool::kMaxPool;
  bool global_pool = false;
  bool cudnn_off = false;
  int pooling_convention = pool::kValid;
  std::optional<int> p_value;
  std::optional<bool> count_include_pad;
  std::optional<std::string> layout;
  static void Declare(ParamDecl<PoolingParam>& d) {
    d.field("kernel", &PoolingParam::kernel)
        .set_default(Shape())
        .describe("Pooling kernel size: (w,), (h, w) or (d, h, w). Ignored when global_pool.");
    d.field("pool_type", &PoolingParam::pool_type)
        .set_default(pool::kMaxPool)
        .add_enum("max", pool::kMaxPool)
        .add_enum("avg", pool::kAvgPool)
        .add_enum("sum", pool::kSumPool)
        .add_enum("lp", pool::kLpPool)
        .describe("Pooling type to be applied; 'lp' is (sum of x^p)^(1/p) with p_value.");
    d.field("global_pool", &PoolingParam::global_pool)
        .set_default(false)
        .describe("Ignore kernel size, do global pooling based on current input feature map.");
    d.field("cudnn_off", &PoolingParam::cudnn_off)
        .set_default(false)
        .describe("Turn off cudnn pooling and use MXNet pooling operator.");
    d.field("pooling_convention", &PoolingParam::pooling_convention)
        .set_default(pool::kValid)
        .add_enum("valid", pool::kValid)
        .add_enum("full", pool::kFull)
        .add_enum("same", pool::kSame)
        .describe(
            "Pooling convention: 'valid' out = floor((x + 2 pad - kernel) / stride) + 1, "
            "'full' the same with ceil, 'same' ceil((in + 2 pad) / stride), the windows clipped at "
            "the end.");
    d.field("stride", &PoolingParam::stride)
        .set_default(Shape())
        .describe(
            "Stride for pooling: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension.");
    d.field("pad", &PoolingParam::pad)
        .set_default(Shape())
        .describe("Pad for pooling: (w,), (h, w) or (d, h, w). Defaults to no padding.");
    d.field("p_value", &PoolingParam::p_value)
        .set_default(std::nullopt)
        .describe("Value of p for Lp pooling: 1, 2 or 3 (MXNet's).");
    d.field("count_include_pad", &PoolingParam::count_include_pad)
        .set_default(std::nullopt)
        .describe(
            "For avg pooling: whether padded elements count in the divisor. None means "
            "True, as MXNet.");
    d.field("layout", &PoolingParam::layout)
        .set_default(std::nullopt)
        .describe("Data layout: None (the default for the data's rank), 'NCW', 'NCHW' or 'NCDHW'.");
  }
};

// The pooling as 3-D over (batch * channel) planes: 1-D and 2-D data are
// seen as depth (and height) 1.
struct PoolGeom {
  int spatial = 2;
  int64_t planes = 0, d = 1, h = 1, w = 0, kd = 1, kh = 1, kw = 1, sd = 1, sh = 1, sw = 1;
  int64_t pd = 0, ph = 0, pw = 0;
  int64_t od = 1, oh = 1, ow = 0;
  int type = pool::kMaxPool;
  int p = 2;  // lp pooling's p: 1, 2 or 3
  bool include_pad = true;
  // The arrays are channel-blocked (MemLayout::kNChw16c; oneDNN or copies).
  bool blocked = false;
  TS_XINLINE int64_t in_size() const { return d * h * w; }
  TS_XINLINE int64_t out_size() const { return od * oh * ow; }
};

// Checks the parameters against the data shape (the supported types and
// conventions, ndim, layout, kernel within the padded input) and fills the
// geometry; errors name the op, the parameter and the shapes. An unknown
// (0) spatial dimension gives an output size of 0.
// The window of output (z, y, x): [d0, d1) x [h0, h1) x [w0, w1) clipped to
// the input, and the avg divisor. Host and device code alike (pooling.cu).
struct Window {
  int64_t d0, d1, h0, h1, w0, w1, size;
};

TS_XINLINE int64_t PoolMin(int64_t a, int64_t b) {
  return a < b ? a : b;
}
TS_XINLINE int64_t PoolMax(int64_t a, int64_t b) {
  return a > b ? a : b;
}

TS_XINLINE Window WindowAt(const PoolGeom& g, int64_t z, int64_t y, int64_t x) {
  Window r;
  int64_t ds = z * g.sd - g.pd, hs = y * g.sh - g.ph, ws = x * g.sw - g.pw;
  int64_t de = PoolMin(ds + g.kd, g.d + g.pd), he = PoolMin(hs + g.kh, g.h + g.ph),
          we = PoolMin(ws + g.kw, g.w + g.pw);
  r.size = (de - ds) * (he - hs) * (we - ws);
  ds = PoolMax(ds, 0);
  hs = PoolMax(hs, 0);
  ws = PoolMax(ws, 0);
  de = PoolMin(de, g.d);
  he = PoolMin(he, g.h);
  we = PoolMin(we, g.w);
  if (!g.include_pad) r.size = (de - ds) * (he - hs) * (we - ws);
  r.d0 = ds;
  r.d1 = de;
  r.h0 = hs;
  r.h1 = he;
  r.w0 = ws;
  r.w1 = we;
  return r;
}

// The window's elements, as offsets in one plane of the input, in order
// (depth, then row, then column): fn(offset) -> false stops.
template <typename F>
TS_XINLINE void ForWindow(const PoolGeom& g, const Window& wd, F fn) {
  for (int64_t a = wd.d0; a < wd.d1; ++a)
    for (int64_t i = wd.h0; i < wd.h1; ++i)
      for (int64_t j = wd.w0; j < wd.w1; ++j)
        if (!fn((a * g.h + i) * g.w + j)) return;
}

// Lp pooling as MXNet's (pool.h): x^p summed, then the p-th root; for p = 1
// a plain sum, for p = 3 the real cube root (so negative sums keep a sign).
template <typename A>
TS_XINLINE A LpPow(A x, int p) {
  return p == 1 ? x : (p == 2 ? x * x : x * x * x);
}
template <typename A>
TS_XINLINE A LpRoot(A v, int p) {
  using std::cbrt;
  using std::sqrt;
  return p == 1 ? v : (p == 2 ? sqrt(v) : cbrt(v));
}

// The lowest finite value, the max's start (a window of NaNs gives it).
TS_XINLINE float PoolLowest(float) {
  return -3.402823466e+38F;
}
TS_XINLINE double PoolLowest(double) {
  return -1.7976931348623157e+308;
}

// Output (z, y, x) of one plane `src`: the window's max, lp norm, sum or
// average, in AccType. The CPU's loops and the GPU's threads both call it.
template <typename T>
TS_XINLINE AccType<T> PoolValueAt(const PoolGeom& g, const T* src, int64_t z, int64_t y,
                                  int64_t x) {
  using A = AccType<T>;
  const Window wd = WindowAt(g, z, y, x);
  A v;
  if (g.type == pool::kMaxPool) {
    v = PoolLowest(A(0));
    ForWindow(g, wd, [&](int64_t at) {
      const A e = static_cast<A>(src[at]);
      if (e > v) v = e;
      return true;
    });
  } else if (g.type == pool::kLpPool) {
    v = 0;
    ForWindow(g, wd, [&](int64_t at) {
      v += LpPow(static_cast<A>(src[at]), g.p);
      return true;
    });
    v = LpRoot(v, g.p);
  } else {
    v = 0;
    ForWindow(g, wd, [&](int64_t at) {
      v += static_cast<A>(src[at]);
      return true;
    });
    if (g.type == pool::kAvgPool) v = wd.size > 0 ? v / static_cast<A>(wd.size) : A(0);
  }
  return v;
}

PoolGeom MakePoolGeom(const NodeAttrs& attrs, const Shape& data);

// Max pooling keeps a hidden second output for its backward, as MXNet's
// oneDNN pooling does (src/operator/nn/pooling.cc, GetNumOutputs): the workspace of oneDNN's
// training forward (the position of each maximum in its window: one byte per output for windows of
// up to 255 elements, four above), then one flag byte, 1 when a training
// forward on oneDNN wrote those positions and 0 when the forward ran
// elsewhere (inference, another dtype, a plain kernel), which the backward
// then does without them. Its size in bytes, the flag included, for data of
// shape (n, c, ...).
bool PoolHasWorkspace(const NodeAttrs& attrs);
int64_t PoolWorkspaceBytes(const NodeAttrs& attrs, const PoolGeom& g, int64_t n, int64_t c);

// oneDNN float32 paths (pooling_dnnl.cc), for 1-D and 2-D data of shape
// (n, c, ...), row-major or, where g.blocked, channel-blocked. They return false, having written
// nothing, for 3-D data (the plain kernels run it), where oneDNN's semantics differ from MXNet's
// (sum; avg counting the padding when a 'full' window reaches past it; padding as large as the
// kernel), for a `req` they do not serve (forward: write; backward: write to a separate buffer), or
// when oneDNN refuses the shape: the plain kernels do it then. `ws` (max pooling in training,
// `ws_bytes` long without the flag) receives the positions of the maxima; null runs the inference
// forward.
bool DnnlPoolForward(const PoolGeom& g, int64_t n, int64_t c, const float* in, float* out,
                     OpReqType req, int threads, uint8_t* ws, int64_t ws_bytes);
// Max pooling's backward from the positions a training forward kept in `ws`.
bool DnnlPoolBackwardFromWorkspace(const PoolGeom& g, int64_t n, int64_t c, const float* ograd,
                                   float* gin, OpReqType req, int threads, const uint8_t* ws,
                                   int64_t ws_bytes);
// The backward without a workspace: max pooling runs a training forward into
// `temp` first, for the positions of the maxima.
bool DnnlPoolBackward(const PoolGeom& g, int64_t n, int64_t c, const float* ograd, const float* in,
                      float* gin, OpReqType req, int threads, const Resource& temp);

}  // namespace tessera::op
