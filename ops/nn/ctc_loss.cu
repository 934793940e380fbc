// CTCLoss on the GPU: the labels and lengths are copied to the host and
// checked there (the op waits for its stream once), then uploaded with each
// sequence's scratch offset; a thread per sequence runs CtcSequence
// (ctc_loss-inl.h) on its own slice of the temp space.
#include <cuda_runtime.h>

#include <vector>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/ctc_loss-inl.h"
#include "ops/tensor/host_copy_cuda.h"

namespace tessera::op {
namespace {

// Sequence n's integers on the device, after the labels (N * Lmax): the
// label lengths, the steps and the scratch offsets (N each).
struct CtcDeviceLabels {
  const int64_t* label_len;
  const int64_t* steps;
  const int64_t* offset;
};

struct CtcSequenceKernel {
  template <typename T>
  __device__ static void Map(int64_t n, CtcDeviceLabels lab, CtcBatch<T> b, double* scratch) {
    b.Solve(n, lab.steps[n], lab.label_len[n], scratch + lab.offset[n]);
  }
};

}  // namespace

template <>
struct CtcKernels<gpu> {
  static CtcLabels CheckLabels(const NodeAttrs& attrs, const OpContext& ctx,
                               const std::vector<TBlob>& in, int64_t T_, int64_t C, int64_t N) {
    std::vector<std::vector<unsigned char>> raw(in.size());
    std::vector<TBlob> host(in.size());
    for (size_t i = 1; i < in.size(); ++i) host[i] = CopyToHost(ctx.run_ctx, in[i], &raw[i]);
    return CtcCheckLabels(attrs, host, T_, C, N);
  }

  template <typename T>
  static void Run(const OpContext& ctx, const CtcLabels& lab, const TBlob& data,
                  const TBlob& loss_out, OpReqType req, const TBlob& grad_out) {
    CtcBatch<T> b = MakeCtcBatch<T>(lab, data, loss_out, req, grad_out);
    const int64_t N = b.N;
    cudaStream_t stream = ctx.run_ctx.get_stream<cudaStream_t>();
    TS_CUDA_CALL(cudaMemsetAsync(grad_out.dptr_, 0, grad_out.bytes(), stream));
    if (N == 0) return;
    // Host side: the integers, each sequence's scratch offset after them.
    std::vector<int64_t> ints = lab.labels;
    ints.insert(ints.end(), lab.label_len.begin(), lab.label_len.end());
    ints.insert(ints.end(), lab.steps.begin(), lab.steps.end());
    int64_t doubles = 0;
    for (int64_t n = 0; n < N; ++n) {
      ints.push_back(doubles);
      doubles += b.Scratch(lab.steps[size_t(n)], lab.label_len[size_t(n)]);
    }
    const size_t int_bytes = (ints.size() * sizeof(int64_t) + 63) / 64 * 64;
    char* space = static_cast<char*>(
        ctx.requested.at(0).get_space(int_bytes + static_cast<size_t>(doubles) * sizeof(double)));
    // From pageable memory the copy is staged before cudaMemcpyAsync returns.
    TS_CUDA_CALL(cudaMemcpyAsync(space, ints.data(), ints.size() * sizeof(int64_t),
                                 cudaMemcpyHostToDevice, stream));
    const int64_t* dev = reinterpret_cast<const int64_t*>(space);
    const int64_t labels = N * lab.Lmax;
    b.labels = dev;  // the kernel reads the device's copy
    const CtcDeviceLabels dl{dev + labels, dev + labels + N, dev + labels + 2 * N};
    Kernel<CtcSequenceKernel, gpu>::Launch(ctx.run_ctx, N, dl, b,
                                           reinterpret_cast<double*>(space + int_bytes));
  }
};

TS_REGISTER_OP(CTCLoss).set_attr<FCompute>(kFComputeGPU, CtcForward<gpu>);
TS_REGISTER_OP(_backward_CTCLoss).set_attr<FCompute>(kFComputeGPU, CtcBackward<gpu>);

}  // namespace tessera::op
