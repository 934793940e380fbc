// BatchNorm and its gradient on the GPU: a block per channel sums the
// channel's elements in double, as the CPU kernels do (batch_norm.cc), then
// normalises them; the moving statistics are updated on the device, so a
// training step never copies to the host.
#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/batch_norm-inl.h"

namespace tessera::op {
namespace {

constexpr int kThreads = 256;

// The sum over the block of each thread's `v`, seen by every thread.
__device__ double BlockSum(double v, double* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  const double r = buf[0];
  __syncthreads();
  return r;
}

// Element e of channel c: (outer o, inner i) for e = o * inner + i.
__device__ __forceinline__ int64_t At(const BnGeom& g, int64_t c, int64_t e) {
  return ((e / g.inner) * g.c + c) * g.inner + e % g.inner;
}

template <typename T>
__device__ __forceinline__ void Put(T& dst, double v, OpReqType req) {
  if (req == kNullOp) return;
  dst = req == kAddTo ? static_cast<T>(static_cast<double>(dst) + v) : static_cast<T>(v);
}

struct ForwardArgs {
  BnGeom g;
  bool batch_stats, fix_gamma;
  double eps, momentum;
  OpReqType req_out, req_mean, req_invstd;
};

template <typename T>
__global__ void ForwardKernel(ForwardArgs a, const T* x, const T* gamma, const T* beta, T* mm,
                              T* mv, T* y, T* mean_out, T* invstd_out) {
  __shared__ double buf[kThreads];
  const BnGeom& g = a.g;
  const int64_t c = blockIdx.x, m = g.outer * g.inner;
  double mean, var;
  if (a.batch_stats) {
    double s = 0;
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) s += static_cast<double>(x[At(g, c, e)]);
    mean = m > 0 ? BlockSum(s, buf) / m : 0.0;
    double s2 = 0;
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const double d = static_cast<double>(x[At(g, c, e)]) - mean;
      s2 += d * d;
    }
    var = m > 0 ? BlockSum(s2, buf) / m : 0.0;
    if (threadIdx.x == 0) {
      mm[c] = static_cast<T>(static_cast<double>(mm[c]) * a.momentum + mean * (1 - a.momentum));
      mv[c] = static_cast<T>(static_cast<double>(mv[c]) * a.momentum + var * (1 - a.momentum));
    }
  } else {
    mean = static_cast<double>(mm[c]);
    var = static_cast<double>(mv[c]);
  }
  const double invstd = 1.0 / sqrt(var + a.eps);
  const double gm = a.fix_gamma ? 1.0 : static_cast<double>(gamma[c]);
  const double scale = gm * invstd, shift = static_cast<double>(beta[c]) - mean * scale;
  using A = AccType<T>;
  const A sa = static_cast<A>(scale), sb = static_cast<A>(shift);
  if (a.req_out != kNullOp)
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const int64_t i = At(g, c, e);
      const A v = static_cast<A>(x[i]) * sa + sb;
      y[i] = a.req_out == kAddTo ? static_cast<T>(static_cast<A>(y[i]) + v) : static_cast<T>(v);
    }
  if (threadIdx.x == 0) {
    Put(mean_out[c], mean, a.req_mean);
    Put(invstd_out[c], invstd, a.req_invstd);
  }
}

struct BackwardArgs {
  BnGeom g;
  bool batch_stats, fix_gamma;
  OpReqType req_dx, req_dgamma, req_dbeta;
};

template <typename T>
__global__ void BackwardKernel(BackwardArgs a, const T* dy, const T* x, const T* gamma,
                               const T* mean_in, const T* invstd_in, T* dx, T* dgamma, T* dbeta) {
  __shared__ double buf[kThreads];
  const BnGeom& g = a.g;
  const int64_t c = blockIdx.x, m = g.outer * g.inner;
  const double mean = static_cast<double>(mean_in[c]), invstd = static_cast<double>(invstd_in[c]);
  double sdy = 0, sdyx = 0;
  for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
    const int64_t i = At(g, c, e);
    const double d = static_cast<double>(dy[i]);
    sdy += d;
    sdyx += d * (static_cast<double>(x[i]) - mean) * invstd;
  }
  sdy = BlockSum(sdy, buf);
  sdyx = BlockSum(sdyx, buf);
  const double gm = a.fix_gamma ? 1.0 : static_cast<double>(gamma[c]);
  if (a.req_dx != kNullOp) {
    const double k = gm * invstd;
    const double am = a.batch_stats && m > 0 ? sdy / m : 0.0;
    const double bm = a.batch_stats && m > 0 ? sdyx / m : 0.0;
    using A = AccType<T>;
    const A ka = static_cast<A>(k), ua = static_cast<A>(-k * invstd * bm),
            va = static_cast<A>(-k * am + k * invstd * bm * mean);
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const int64_t i = At(g, c, e);
      const A v = ka * static_cast<A>(dy[i]) + ua * static_cast<A>(x[i]) + va;
      dx[i] = a.req_dx == kAddTo ? static_cast<T>(static_cast<A>(dx[i]) + v) : static_cast<T>(v);
    }
  }
  if (threadIdx.x == 0) {
    Put(dgamma[c], a.fix_gamma ? 0.0 : sdyx, a.req_dgamma);
    Put(dbeta[c], sdy, a.req_dbeta);
  }
}

unsigned Blocks(int64_t channels) {
  TS_CHECK(channels <= 0x7fffffff) << "BatchNorm on the GPU: " << channels << " channels";
  return static_cast<unsigned>(channels);
}

// Inputs: data, gamma, beta, moving_mean, moving_var; outputs: out, mean, invstd.
void BatchNormGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<BatchNormParam>(attrs);
  ForwardArgs a{MakeBnGeom(attrs, in[0].shape()),
                ctx.is_train && !p.use_global_stats,
                p.fix_gamma,
                p.eps,
                p.momentum,
                req[0],
                req[1],
                req[2]};
  if (a.g.c == 0) return;
  const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        ForwardKernel<T><<<Blocks(a.g.c), kThreads, 0, s>>>(
            a, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(), in[4].dptr<T>(),
            out[0].dptr<T>(), out[1].dptr<T>(), out[2].dptr<T>());
        TS_CUDA_CALL(cudaGetLastError());
      },
      "BatchNorm");
}

// Inputs: ograd, data, gamma, mean, invstd; outputs: the gradients of data,
// gamma and beta.
void BatchNormBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<BatchNormParam>(attrs);
  BackwardArgs a{MakeBnGeom(attrs, in[1].shape()),
                 ctx.is_train && !p.use_global_stats,
                 p.fix_gamma,
                 req[0],
                 req[1],
                 req[2]};
  if (a.g.c == 0) return;
  const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        BackwardKernel<T><<<Blocks(a.g.c), kThreads, 0, s>>>(
            a, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(), in[4].dptr<T>(),
            out[0].dptr<T>(), out[1].dptr<T>(), out[2].dptr<T>());
        TS_CUDA_CALL(cudaGetLastError());
      },
      "_backward_BatchNorm");
}

}  // namespace

TS_REGISTER_OP(BatchNorm).set_attr<FCompute>(kFComputeGPU, BatchNormGpu);
TS_REGISTER_OP(_backward_BatchNorm).set_attr<FCompute>(kFComputeGPU, BatchNormBackwardGpu);

}  // namespace tessera::op
