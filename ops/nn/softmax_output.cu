// SoftmaxOutput on the GPU: the forward is the softmax op's GPU softmax;
// the backward computes each element's (softmax - target) * scale as the
// CPU's SoftmaxOutputBackwardCpu does, with the 'valid' normalization's
// count of labels kept on the device (no copy to the host inside a step).
#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/softmax_output-inl.h"
#include "ops/tensor/softmax_op_gpu.cuh"

namespace tessera::op {
namespace {

// *count = the labels not equal to `ignore` (at least 1), when `valid`;
// else `fixed`. One block.
template <typename T>
__global__ void CountLabels(const T* label, int64_t n, int ignore, bool valid, int64_t fixed,
                            int64_t* count) {
  __shared__ int64_t part[256];
  int64_t c = 0;
  if (valid)
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      c += static_cast<int>(static_cast<AccType<T>>(label[j])) != ignore;
  part[threadIdx.x] = c;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *count = valid ? (part[0] > 0 ? part[0] : 1) : fixed;
}

struct Geometry {
  int64_t len, inner;  // classes, positions per instance (multi_output)
  int64_t n_labels;
  bool multi, prob_labels, use_ignore;
  int ignore;
  double grad_scale, divisor;  // scale = grad_scale / divisor / *count
  double smooth_alpha;
};

struct SoftmaxOutputGrad {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* grad, const T* out, const T* label, const T* og,
                             const int64_t* count, Geometry g, OpReqType req) {
    using A = AccType<T>;
    A v;
    if (g.prob_labels) {
      v = (static_cast<A>(out[i]) - static_cast<A>(label[i])) * static_cast<A>(g.grad_scale);
    } else {
      const int64_t x = g.multi ? (i / g.inner) % g.len : i % g.len;
      const int64_t l = g.multi ? (i / (g.len * g.inner)) * g.inner + i % g.inner : i / g.len;
      const int k = l < g.n_labels ? static_cast<int>(static_cast<A>(label[l])) : -1;
      const A scale = static_cast<A>(g.grad_scale / g.divisor / double(*count));
      if (g.use_ignore && k == g.ignore) {
        v = A(0);
      } else if (g.multi) {
        v = (static_cast<A>(out[i]) - (x == k ? A(1) : A(0))) * scale;
      } else {
        const A alpha = static_cast<A>(g.smooth_alpha);
        const A smooth = g.len > 1 ? static_cast<A>(g.smooth_alpha / double(g.len - 1)) : A(0);
        v = (static_cast<A>(out[i]) - (x == k ? A(1) - alpha : smooth)) * scale;
      }
    }
    if (og) v *= static_cast<A>(og[i]);
    SoftmaxStore(grad[i], v, req);
  }
};

struct FillZero {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out) {
    out[i] = T(0);
  }
};

// Backward inputs: label, out[, ograd when out_grad]. Outputs: the data
// gradient and the label gradient (zeros).
void SoftmaxOutputBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx,
                              const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                              const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SoftmaxOutputParam>(attrs);
  const TBlob &label = in[0], &prob = in[1];
  SwitchFloatDType(
      prob.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t size = prob.shape().Size();
        if (req[0] != kNullOp && size > 0) {
          const SoftmaxGeom sg = SoftmaxOutputGeom(prob.shape(), p);
          Geometry g{};
          g.len = sg.len;
          g.inner = sg.inner;
          g.multi = p.multi_output;
          g.prob_labels = label.shape() == prob.shape();
          g.use_ignore = p.use_ignore;
          g.ignore = static_cast<int>(p.ignore_label);
          g.grad_scale = p.grad_scale;
          g.smooth_alpha = p.smooth_alpha;
          const int64_t n_labels = label.shape().Size();
          g.n_labels = n_labels;
          // The CPU's divisors: 'null' 1; 'batch' the instances (multi) or
          // labels; 'valid' the labels not ignored; multi divides by inner
          // too unless 'valid'.
          const bool valid = p.normalization == softmaxout::kValid;
          const int64_t fixed =
              p.normalization == softmaxout::kBatch ? (p.multi_output ? sg.outer : n_labels) : 1;
          g.divisor = p.multi_output && !valid ? double(sg.inner) : 1.0;
          int64_t* count = ctx.requested.at(0).get_space_typed<int64_t>(1);
          const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
          CountLabels<T>
              <<<1, 256, 0, s>>>(label.dptr<T>(), n_labels, g.ignore, valid, fixed, count);
          TS_CUDA_CALL(cudaGetLastError());
          const T* og = in.size() > 2 ? in[2].dptr<T>() : nullptr;
          Kernel<SoftmaxOutputGrad, gpu>::Launch(ctx.run_ctx, size, out[0].dptr<T>(),
                                                 prob.dptr<T>(), label.dptr<T>(), og, count, g,
                                                 req[0]);
        }
        if (req[1] == kWriteTo || req[1] == kWriteInplace)
          Kernel<FillZero, gpu>::Launch(ctx.run_ctx, out[1].Size(), out[1].dptr<T>());
      },
      "_backward_SoftmaxOutput");
}

}  // namespace

TS_REGISTER_OP(SoftmaxOutput).set_attr<FCompute>(kFComputeGPU, SoftmaxOutputForward<gpu>);
TS_REGISTER_OP(_backward_SoftmaxOutput).set_attr<FCompute>(kFComputeGPU, SoftmaxOutputBackwardGpu);

}  // namespace tessera::op
