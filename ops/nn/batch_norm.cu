// BatchNorm and its gradient on the GPU. A channel's elements are split
// over several blocks (a channel of a 32x64x112x112 batch is 400K elements:
// one block each would leave most of the GPU idle), each summing its part
// in double; a small kernel per channel combines the parts as the CPU does
// (batch_norm.cc: two passes, the mean, then the squared deviations from
// it), updates the moving statistics on the device and writes each
// channel's scale and shift; an elementwise kernel applies them. The
// backward sums dy and dy * xhat the same way. Nothing is copied to the
// host inside a training step.
#include <cuda_runtime.h>

#include <algorithm>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/batch_norm-inl.h"
#include "ops/tensor/block_sum.cuh"

namespace tessera::op {
namespace {

constexpr int kThreads = 256;
// Elements one block sums at least, and parts per channel at most.
constexpr int64_t kPartElements = 16384;
constexpr int64_t kMaxParts = 128;

// Element e of channel c: (outer o, inner i) for e = o * inner + i.
__device__ __forceinline__ int64_t At(const BnGeom& g, int64_t c, int64_t e) {
  return ((e / g.inner) * g.c + c) * g.inner + e % g.inner;
}

// Block (c, part) covers elements [first, last) of channel c.
struct Parts {
  int64_t m, parts;  // elements per channel, parts per channel
  __device__ void Range(int64_t part, int64_t* first, int64_t* last) const {
    const int64_t per = (m + parts - 1) / parts;
    *first = part * per;
    *last = min(m, *first + per);
  }
};

Parts MakeParts(const BnGeom& g) {
  const int64_t m = g.outer * g.inner;
  return {m, std::clamp<int64_t>((m + kPartElements - 1) / kPartElements, 1, kMaxParts)};
}

dim3 Grid(const BnGeom& g, const Parts& p) {
  TS_CHECK(g.c <= 0x7fffffff) << "BatchNorm on the GPU: " << g.c << " channels";
  return dim3(static_cast<unsigned>(g.c), static_cast<unsigned>(p.parts));
}

// The call's temp space: two arrays of part sums (g.c * parts each), then
// `coefs` coefficients per channel.
struct PartSums {
  double *first, *second, *coef;
};

PartSums TempPartSums(const OpContext& ctx, const BnGeom& g, const Parts& p, int64_t coefs) {
  double* t =
      ctx.requested.at(0).get_space_typed<double>(static_cast<size_t>(g.c * (2 * p.parts + coefs)));
  return {t, t + g.c * p.parts, t + 2 * g.c * p.parts};
}

// The mean of channel c from the parts' sums of x.
__device__ double MeanOf(const double* sums, int64_t c, const Parts& p) {
  double s = 0;
  for (int64_t k = 0; k < p.parts; ++k) s += sums[c * p.parts + k];
  return p.m > 0 ? s / p.m : 0.0;
}

// part sums of x (pass 1, sums1 null) or of (x - mean)^2 (pass 2).
template <typename T>
__global__ void SumParts(BnGeom g, Parts p, const T* x, const double* sums1, double* out) {
  __shared__ double buf[kThreads];
  const int64_t c = blockIdx.x, part = blockIdx.y;
  int64_t first, last;
  p.Range(part, &first, &last);
  const double mean = sums1 ? MeanOf(sums1, c, p) : 0.0;
  double s = 0;
  for (int64_t e = first + threadIdx.x; e < last; e += blockDim.x) {
    const double v = static_cast<double>(x[At(g, c, e)]);
    s += sums1 ? (v - mean) * (v - mean) : v;
  }
  s = BlockSum(s, buf);
  if (threadIdx.x == 0) out[c * p.parts + part] = s;
}

template <typename T>
__device__ __forceinline__ void Put(T& dst, double v, OpReqType req) {
  if (req == kNullOp) return;
  dst = req == kAddTo ? static_cast<T>(static_cast<double>(dst) + v) : static_cast<T>(v);
}

struct ForwardArgs {
  BnGeom g;
  Parts p;
  bool batch_stats, fix_gamma;
  double eps, momentum;
  OpReqType req_out, req_mean, req_invstd;
};

// A thread per channel: the statistics (the batch's, or the moving ones),
// the moving statistics' update, and y = x * scale + shift's coefficients.
template <typename T>
__global__ void FinishStats(ForwardArgs a, const double* sums, const double* sqsums, const T* gamma,
                            const T* beta, T* mm, T* mv, T* mean_out, T* invstd_out, double* coef) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= a.g.c) return;
  double mean, var;
  if (a.batch_stats) {
    mean = MeanOf(sums, c, a.p);
    double s2 = 0;
    for (int64_t k = 0; k < a.p.parts; ++k) s2 += sqsums[c * a.p.parts + k];
    var = a.p.m > 0 ? s2 / a.p.m : 0.0;
    mm[c] = static_cast<T>(static_cast<double>(mm[c]) * a.momentum + mean * (1 - a.momentum));
    mv[c] = static_cast<T>(static_cast<double>(mv[c]) * a.momentum + var * (1 - a.momentum));
  } else {
    mean = static_cast<double>(mm[c]);
    var = static_cast<double>(mv[c]);
  }
  const double invstd = 1.0 / sqrt(var + a.eps);
  const double gm = a.fix_gamma ? 1.0 : static_cast<double>(gamma[c]);
  const double scale = gm * invstd;
  coef[2 * c] = scale;
  coef[2 * c + 1] = static_cast<double>(beta[c]) - mean * scale;
  Put(mean_out[c], mean, a.req_mean);
  Put(invstd_out[c], invstd, a.req_invstd);
}

// y = x * scale[c] + shift[c] (+ y for kAddTo).
struct Normalize {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const T* x, const double* coef, int64_t c,
                             int64_t inner, bool add) {
    using A = AccType<T>;
    const int64_t ch = (i / inner) % c;
    const A v =
        static_cast<A>(x[i]) * static_cast<A>(coef[2 * ch]) + static_cast<A>(coef[2 * ch + 1]);
    y[i] = add ? static_cast<T>(static_cast<A>(y[i]) + v) : static_cast<T>(v);
  }
};

// Inputs: data, gamma, beta, moving_mean, moving_var; outputs: out, mean, invstd.
void BatchNormGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& prm = ParamsOf<BatchNormParam>(attrs);
  const BnGeom g = MakeBnGeom(attrs, in[0].shape());
  if (g.c == 0) return;
  ForwardArgs a{
      g,      MakeParts(g), UsesBatchStats(prm, ctx), prm.fix_gamma, prm.eps, prm.momentum, req[0],
      req[1], req[2]};
  const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
  const PartSums t = TempPartSums(ctx, g, a.p, 2);  // sums of x, of squared deviations
  WithBnBlobs<BnForwardBlobs>(in, out, "BatchNorm", [&](auto tag, const auto& b) {
    using T = typename decltype(tag)::type;
    if (a.batch_stats) {
      SumParts<T><<<Grid(g, a.p), kThreads, 0, s>>>(g, a.p, b.x, nullptr, t.first);
      SumParts<T><<<Grid(g, a.p), kThreads, 0, s>>>(g, a.p, b.x, t.first, t.second);
      TS_CUDA_CALL(cudaGetLastError());
    }
    const unsigned blocks = static_cast<unsigned>((g.c + kThreads - 1) / kThreads);
    FinishStats<T><<<blocks, kThreads, 0, s>>>(a, t.first, t.second, b.gamma, b.beta, b.moving_mean,
                                               b.moving_var, b.mean, b.invstd, t.coef);
    TS_CUDA_CALL(cudaGetLastError());
    if (req[0] != kNullOp)
      Kernel<Normalize, gpu>::Launch(ctx.run_ctx, in[0].Size(), b.y, b.x, t.coef, g.c, g.inner,
                                     req[0] == kAddTo);
  });
}

// part sums of dy and of dy * (x - mean) * invstd.
template <typename T>
__global__ void GradParts(BnGeom g, Parts p, const T* dy, const T* x, const T* mean_in,
                          const T* invstd_in, double* sdy, double* sdyx) {
  __shared__ double buf[kThreads];
  const int64_t c = blockIdx.x, part = blockIdx.y;
  int64_t first, last;
  p.Range(part, &first, &last);
  const double mean = static_cast<double>(mean_in[c]), invstd = static_cast<double>(invstd_in[c]);
  double a = 0, b = 0;
  for (int64_t e = first + threadIdx.x; e < last; e += blockDim.x) {
    const int64_t i = At(g, c, e);
    const double d = static_cast<double>(dy[i]);
    a += d;
    b += d * (static_cast<double>(x[i]) - mean) * invstd;
  }
  a = BlockSum(a, buf);
  b = BlockSum(b, buf);
  if (threadIdx.x == 0) {
    sdy[c * p.parts + part] = a;
    sdyx[c * p.parts + part] = b;
  }
}

struct BackwardArgs {
  BnGeom g;
  Parts p;
  bool batch_stats, fix_gamma;
  OpReqType req_dx, req_dgamma, req_dbeta;
};

// A thread per channel: dgamma, dbeta, and dx = k dy + u x + v's coefficients.
template <typename T>
__global__ void FinishGrad(BackwardArgs a, const double* sdy_parts, const double* sdyx_parts,
                           const T* gamma, const T* mean_in, const T* invstd_in, T* dgamma,
                           T* dbeta, double* coef) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= a.g.c) return;
  double sdy = 0, sdyx = 0;
  for (int64_t k = 0; k < a.p.parts; ++k) {
    sdy += sdy_parts[c * a.p.parts + k];
    sdyx += sdyx_parts[c * a.p.parts + k];
  }
  const double mean = static_cast<double>(mean_in[c]), invstd = static_cast<double>(invstd_in[c]);
  const double gm = a.fix_gamma ? 1.0 : static_cast<double>(gamma[c]);
  const double m = static_cast<double>(a.p.m);
  const double k = gm * invstd;
  const double am = a.batch_stats && m > 0 ? sdy / m : 0.0;
  const double bm = a.batch_stats && m > 0 ? sdyx / m : 0.0;
  coef[3 * c] = k;
  coef[3 * c + 1] = -k * invstd * bm;
  coef[3 * c + 2] = -k * am + k * invstd * bm * mean;
  Put(dgamma[c], a.fix_gamma ? 0.0 : sdyx, a.req_dgamma);
  Put(dbeta[c], sdy, a.req_dbeta);
}

struct GradData {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* dx, const T* dy, const T* x, const double* coef,
                             int64_t c, int64_t inner, bool add) {
    using A = AccType<T>;
    const int64_t ch = (i / inner) % c;
    const A v = static_cast<A>(coef[3 * ch]) * static_cast<A>(dy[i]) +
                static_cast<A>(coef[3 * ch + 1]) * static_cast<A>(x[i]) +
                static_cast<A>(coef[3 * ch + 2]);
    dx[i] = add ? static_cast<T>(static_cast<A>(dx[i]) + v) : static_cast<T>(v);
  }
};

// Inputs: ograd, data, gamma, mean, invstd; outputs: the gradients of data,
// gamma and beta.
void BatchNormBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  const auto& prm = ParamsOf<BatchNormParam>(attrs);
  const BnGeom g = MakeBnGeom(attrs, in[1].shape());
  if (g.c == 0) return;
  BackwardArgs a{g, MakeParts(g), UsesBatchStats(prm, ctx), prm.fix_gamma, req[0], req[1], req[2]};
  const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
  const PartSums t = TempPartSums(ctx, g, a.p, 3);  // sums of dy, of dy * xhat
  WithBnBlobs<BnBackwardBlobs>(in, out, "_backward_BatchNorm", [&](auto tag, const auto& b) {
    using T = typename decltype(tag)::type;
    GradParts<T>
        <<<Grid(g, a.p), kThreads, 0, s>>>(g, a.p, b.dy, b.x, b.mean, b.invstd, t.first, t.second);
    const unsigned blocks = static_cast<unsigned>((g.c + kThreads - 1) / kThreads);
    FinishGrad<T><<<blocks, kThreads, 0, s>>>(a, t.first, t.second, b.gamma, b.mean, b.invstd,
                                              b.dgamma, b.dbeta, t.coef);
    TS_CUDA_CALL(cudaGetLastError());
    if (req[0] != kNullOp)
      Kernel<GradData, gpu>::Launch(ctx.run_ctx, in[1].Size(), b.dx, b.dy, b.x, t.coef, g.c,
                                    g.inner, req[0] == kAddTo);
  });
}

}  // namespace

TS_REGISTER_OP(BatchNorm).set_attr<FCompute>(kFComputeGPU, BatchNormGpu);
TS_REGISTER_OP(_backward_BatchNorm).set_attr<FCompute>(kFComputeGPU, BatchNormBackwardGpu);

}  // namespace tessera::op
