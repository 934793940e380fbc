// Pooling on the GPU, every type and convention the CPU has (max, avg, sum,
// lp; valid, full, same; 1-D to 3-D), with the CPU's window rules
// (pooling-inl.h): the forward takes a thread per output; the backward a
// thread per input, which gathers from the windows holding it (the first
// maximum of a window, in the CPU's order, takes its gradient), so no
// atomics and the same sums in the same order on every run. In training,
// max pooling keeps in its hidden workspace where each window's maximum was
// (its offset in the kernel, one byte each, or four for kernels of over 255
// elements), so the backward reads it instead of searching the windows
// again; the workspace's last byte says which kind it holds (kGpuOffsets
// here; the CPU's oneDNN workspace is 1, none 0).
#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/nn_common.h"
#include "ops/nn/pooling-inl.h"

namespace tessera::op {
namespace {

struct PoolForwardKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, PoolGeom g, const T* in, T* out, OpReqType req) {
    using A = AccType<T>;
    const int64_t osz = g.out_size();
    const int64_t pl = i / osz, r = i % osz;
    const int64_t z = r / (g.oh * g.ow), y = (r / g.ow) % g.oh, x = r % g.ow;
    const A v = PoolValueAt(g, in + pl * g.in_size(), z, y, x);
    out[i] = req == kAddTo ? static_cast<T>(static_cast<A>(out[i]) + v) : static_cast<T>(v);
  }
};

constexpr uint8_t kGpuOffsets = 2;

// The workspace's per-output offsets: one byte or four (PoolWorkspaceBytes).
struct Offsets {
  uint8_t* bytes;
  bool wide;
  TS_XINLINE uint32_t Get(int64_t i) const {
    return wide ? reinterpret_cast<const uint32_t*>(bytes)[i] : bytes[i];
  }
  TS_XINLINE void Set(int64_t i, uint32_t v) const {
    if (wide)
      reinterpret_cast<uint32_t*>(bytes)[i] = v;
    else
      bytes[i] = static_cast<uint8_t>(v);
  }
  TS_XINLINE uint32_t None() const { return wide ? 0xffffffffu : 0xffu; }
};

// Offset of input element (a, row, col) in the kernel of window (z, y, x).
TS_XINLINE uint32_t KernelOffset(const PoolGeom& g, int64_t z, int64_t y, int64_t x, int64_t a,
                                 int64_t row, int64_t col) {
  const int64_t da = a - (z * g.sd - g.pd), dr = row - (y * g.sh - g.ph),
                dc = col - (x * g.sw - g.pw);
  return static_cast<uint32_t>((da * g.kh + dr) * g.kw + dc);
}

// Max pooling in training: the maximum and where it is (the first, in the
// window's order, as the CPU's backward finds it).
struct MaxPoolKeepKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, PoolGeom g, const T* in, T* out, OpReqType req,
                             Offsets off) {
    using A = AccType<T>;
    const int64_t osz = g.out_size();
    const int64_t pl = i / osz, r = i % osz;
    const int64_t z = r / (g.oh * g.ow), y = (r / g.ow) % g.oh, x = r % g.ow;
    const T* src = in + pl * g.in_size();
    const Window wd = WindowAt(g, z, y, x);
    A v = PoolLowest(A(0));
    int64_t at = -1;
    ForWindow(g, wd, [&](int64_t e) {
      const A val = static_cast<A>(src[e]);
      if (val > v) {
        v = val;
        at = e;
      }
      return true;
    });
    off.Set(i, at < 0 ? off.None()
                      : KernelOffset(g, z, y, x, at / (g.h * g.w), (at / g.w) % g.h, at % g.w));
    out[i] = req == kAddTo ? static_cast<T>(static_cast<A>(out[i]) + v) : static_cast<T>(v);
  }
};

// The outputs along one axis whose windows may hold input position p:
// start o * s - pad <= p < start + k.
TS_XINLINE void OutputRange(int64_t p, int64_t k, int64_t s, int64_t pad, int64_t n, int64_t* lo,
                            int64_t* hi) {
  const int64_t top = p + pad;  // o * s <= top and o * s > top - k
  *lo = top - k + 1 <= 0 ? 0 : (top - k + 1 + s - 1) / s;
  *hi = PoolMin(n - 1, top / s);
}

struct PoolBackwardKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, PoolGeom g, const T* ograd, const T* in, const T* out,
                             T* gin, OpReqType req, Offsets off, const uint8_t* kind) {
    const bool kept = kind && *kind == kGpuOffsets;
    using A = AccType<T>;
    const int64_t isz = g.in_size(), osz = g.out_size();
    const int64_t pl = i / isz, at = i % isz;
    const int64_t a = at / (g.h * g.w), row = (at / g.w) % g.h, col = at % g.w;
    const T* src = in + pl * isz;
    const T* og = ograd + pl * osz;
    const T* o = out + pl * osz;
    int64_t z0, z1, y0, y1, x0, x1;
    OutputRange(a, g.kd, g.sd, g.pd, g.od, &z0, &z1);
    OutputRange(row, g.kh, g.sh, g.ph, g.oh, &y0, &y1);
    OutputRange(col, g.kw, g.sw, g.pw, g.ow, &x0, &x1);
    A sum = 0;
    for (int64_t z = z0; z <= z1; ++z)
      for (int64_t y = y0; y <= y1; ++y)
        for (int64_t x = x0; x <= x1; ++x) {
          const Window wd = WindowAt(g, z, y, x);
          if (a < wd.d0 || a >= wd.d1 || row < wd.h0 || row >= wd.h1 || col < wd.w0 || col >= wd.w1)
            continue;  // clipped away at the end (full / same conventions)
          const int64_t oat = (z * g.oh + y) * g.ow + x;
          const A gv = static_cast<A>(og[oat]);
          if (g.type == pool::kMaxPool && kept) {
            if (off.Get(pl * osz + oat) == KernelOffset(g, z, y, x, a, row, col)) sum += gv;
          } else if (g.type == pool::kMaxPool) {
            const T m = o[oat];
            int64_t found = -1;
            ForWindow(g, wd, [&](int64_t e) {
              if (!(src[e] == m)) return true;
              found = e;
              return false;
            });
            if (found == at) sum += gv;
          } else if (g.type == pool::kLpPool) {
            const A m = static_cast<A>(o[oat]);
            const A xv = static_cast<A>(src[at]);
            sum += gv * (g.p == 1 ? A(1) : (m == A(0) ? A(0) : LpPow(xv / m, g.p - 1)));
          } else {
            sum +=
                g.type == pool::kAvgPool ? (wd.size > 0 ? gv / static_cast<A>(wd.size) : A(0)) : gv;
          }
        }
    gin[i] = req == kAddTo ? static_cast<T>(static_cast<A>(gin[i]) + sum) : static_cast<T>(sum);
  }
};

// The workspace's offsets (one byte per output, or four: PoolWorkspaceBytes).
Offsets OffsetsOf(const TBlob& ws, const PoolGeom& g) {
  return {static_cast<uint8_t*>(ws.dptr_), ws.Size() - 1 > g.planes * g.out_size()};
}

void SetWorkspaceKind(const OpContext& ctx, const TBlob& ws, uint8_t kind) {
  TS_CUDA_CALL(cudaMemsetAsync(static_cast<uint8_t*>(ws.dptr_) + ws.Size() - 1, kind, 1,
                               ctx.run_ctx.get_stream<cudaStream_t>()));
}

void PoolingGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const bool has_ws = out.size() > 1 && req[1] != kNullOp;
  if (req[0] == kNullOp) {
    if (has_ws) SetWorkspaceKind(ctx, out[1], 0);
    return;
  }
  const PoolGeom g = MakePoolGeom(attrs, in[0].shape());
  const bool keep = has_ws && ctx.is_train && g.type == pool::kMaxPool;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (keep)
          Kernel<MaxPoolKeepKernel, gpu>::Launch(ctx.run_ctx, g.planes * g.out_size(), g,
                                                 in[0].dptr<T>(), out[0].dptr<T>(), req[0],
                                                 OffsetsOf(out[1], g));
        else
          Kernel<PoolForwardKernel, gpu>::Launch(ctx.run_ctx, g.planes * g.out_size(), g,
                                                 in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
      },
      "Pooling");
  if (has_ws) SetWorkspaceKind(ctx, out[1], keep ? kGpuOffsets : 0);
}

// Inputs (ograd, data, out[, workspace]); output gdata.
void PoolingBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const PoolGeom g = MakePoolGeom(attrs, in[1].shape());
  // The workspace's kind is on the device: each thread reads its last byte.
  const bool has_ws = in.size() > 3;
  const Offsets off = has_ws ? OffsetsOf(in[3], g) : Offsets{nullptr, false};
  const uint8_t* kind =
      has_ws ? static_cast<const uint8_t*>(in[3].dptr_) + in[3].Size() - 1 : nullptr;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<PoolBackwardKernel, gpu>::Launch(ctx.run_ctx, g.planes * g.in_size(), g,
                                                in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(),
                                                out[0].dptr<T>(), req[0], off, kind);
      },
      "_backward_Pooling");
}

}  // namespace

TS_REGISTER_OP(Pooling).set_attr<FCompute>(kFComputeGPU, PoolingGpu);
TS_REGISTER_OP(_backward_Pooling).set_attr<FCompute>(kFComputeGPU, PoolingBackwardGpu);

}  // namespace tessera::op
