// GPU convolution: 3x3, 64 -> 64 channels, batch 32, 56x56, pad 1, float32
// with bias (ResNet's first stage), forward and backward (gradients of data,
// weight and bias). Tessera's Convolution and _backward_Convolution on
// gpu(0) through Invoke into preallocated outputs (push, cuDNN on the op's
// stream, wait) against cuDNN called directly on a stream of its own, on
// the same buffers, with the same settings as the op's defaults: exact
// float32 (FMA math, no TF32), algorithms chosen by cudnnFind* within the
// op's 1024 MB workspace limit, the bias through cudnnAddTensor and
// cudnnConvolutionBackwardBias; then a stream synchronize. The same loop
// shape on both sides; then ten forward-backward pairs queued before one
// wait, on both sides. Best of 3 alternated medians. Prints `name: value
// unit` lines; without a GPU (or without cuDNN at build time) it says so
// and exits 0.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "engine/base/context.h"
#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "tests/bench/bench_timing.h"

#if defined(TESSERA_WITH_CUDA) && defined(TESSERA_BENCH_CUDNN)
#include <cuda_runtime.h>
#include <cudnn.h>
#endif

using namespace tessera;

#if defined(TESSERA_WITH_CUDA) && defined(TESSERA_BENCH_CUDNN)
namespace {

constexpr int kN = 32, kC = 64, kF = 64, kH = 56, kW = 56, kK = 3;
constexpr size_t kWorkspaceLimit = size_t{1024} << 20;  // Convolution's default workspace

void Check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "gpu_conv_bench: %s: %s\n", what, cudnnGetErrorString(s));
    std::exit(1);
  }
}

NDArray Uniform(const std::string& shape) {
  return Invoke("_random_uniform", {}, {{"shape", shape}})[0].CopyTo(Context::GPU(0));
}

// The first result cuDNN ranks best that succeeded, fits the limit and is
// exact float32 (FMA math), as the op picks; the descriptor takes its math.
template <typename Perf>
int Pick(const Perf* perf, int count, cudnnConvolutionDescriptor_t conv, size_t* bytes) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kWorkspaceLimit) continue;
    if (perf[i].mathType != CUDNN_FMA_MATH) continue;
    Check(cudnnSetConvolutionMathType(conv, perf[i].mathType), "cudnnSetConvolutionMathType");
    *bytes = std::max(*bytes, perf[i].memory);
    return static_cast<int>(perf[i].algo);
  }
  std::fprintf(stderr, "gpu_conv_bench: cuDNN has no exact float32 algorithm\n");
  std::exit(1);
}

struct Direct {
  cudnnHandle_t h{};
  cudaStream_t s{};
  cudnnTensorDescriptor_t x{}, y{}, b{};
  cudnnFilterDescriptor_t w{};
  cudnnConvolutionDescriptor_t fwd{}, bwd_data{}, bwd_filter{};
  cudnnConvolutionFwdAlgo_t fwd_algo{};
  cudnnConvolutionBwdDataAlgo_t data_algo{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo{};
  size_t bytes = 0;
  void* workspace = nullptr;

  Direct() {
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    Check(cudnnCreate(&h), "cudnnCreate");
    Check(cudnnSetStream(h, s), "cudnnSetStream");
    for (auto* d : {&x, &y, &b}) Check(cudnnCreateTensorDescriptor(d), "tensor descriptor");
    Check(cudnnCreateFilterDescriptor(&w), "filter descriptor");
    Check(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kN, kC, kH, kW), "x");
    Check(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kN, kF, kH, kW), "y");
    Check(cudnnSetTensor4dDescriptor(b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, kF, 1, 1), "b");
    Check(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, kF, kC, kK, kK), "w");
    for (auto* c : {&fwd, &bwd_data, &bwd_filter}) {
      Check(cudnnCreateConvolutionDescriptor(c), "convolution descriptor");
      Check(cudnnSetConvolution2dDescriptor(*c, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            "convolution");
      Check(cudnnSetConvolutionMathType(*c, CUDNN_FMA_MATH), "math type");
    }
    constexpr int kMax = 16;
    int n = 0;
    cudnnConvolutionFwdAlgoPerf_t fp[kMax];
    Check(cudnnFindConvolutionForwardAlgorithm(h, x, w, fwd, y, kMax, &n, fp), "find forward");
    fwd_algo = static_cast<cudnnConvolutionFwdAlgo_t>(Pick(fp, n, fwd, &bytes));
    cudnnConvolutionBwdDataAlgoPerf_t dp[kMax];
    Check(cudnnFindConvolutionBackwardDataAlgorithm(h, w, y, bwd_data, x, kMax, &n, dp),
          "find backward data");
    data_algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(Pick(dp, n, bwd_data, &bytes));
    cudnnConvolutionBwdFilterAlgoPerf_t wp[kMax];
    Check(cudnnFindConvolutionBackwardFilterAlgorithm(h, x, y, bwd_filter, w, kMax, &n, wp),
          "find backward filter");
    filter_algo = static_cast<cudnnConvolutionBwdFilterAlgo_t>(Pick(wp, n, bwd_filter, &bytes));
    cudaMalloc(&workspace, std::max<size_t>(bytes, 1));
    // Beside TESSERA_CUDNN_LOG=1's lines for the op's choices.
    std::fprintf(stderr, "gpu_conv_bench: cuDNN called directly: forward %d, data %d, filter %d\n",
                 int(fwd_algo), int(data_algo), int(filter_algo));
  }
  ~Direct() {
    cudaFree(workspace);
    for (auto c : {fwd, bwd_data, bwd_filter}) cudnnDestroyConvolutionDescriptor(c);
    cudnnDestroyFilterDescriptor(w);
    for (auto d : {x, y, b}) cudnnDestroyTensorDescriptor(d);
    cudnnDestroy(h);
    cudaStreamDestroy(s);
  }
};

double BestOf3(const std::function<void()>& a, const std::function<void()>& b, double* tb) {
  double ta = 1e30;
  *tb = 1e30;
  for (int round = 0; round < 3; ++round) {
    ta = std::min(ta, bench::MedianMs(a, 20));
    *tb = std::min(*tb, bench::MedianMs(b, 20));
  }
  return ta;
}

void Run() {
  const std::string xs = "(32,64,56,56)", ws = "(64,64,3,3)";
  NDArray x = Uniform(xs), w = Uniform(ws), bias = Uniform("(64,)"), dy = Uniform(xs);
  const op::ParamDict params{{"kernel", "(3,3)"}, {"pad", "(1,1)"}, {"num_filter", "64"}};
  auto fattrs = MakeAttrs("Convolution", params);
  auto battrs = MakeAttrs("_backward_Convolution", params);
  std::vector<NDArray> y = Invoke("Convolution", {x, w, bias}, params);
  std::vector<NDArray> grads = Invoke("_backward_Convolution", {dy, x, w}, params);
  for (const NDArray& a : grads) a.WaitToRead();
  auto ours_forward = [&] {
    Invoke(fattrs, {x, w, bias}, &y);
    y[0].WaitToRead();
  };
  auto ours_backward = [&] {
    Invoke(battrs, {dy, x, w}, &grads);
    for (const NDArray& a : grads) a.WaitToRead();
  };

  Direct d;
  const float one = 1, zero = 0;
  auto ptr = [](const NDArray& a) { return a.data().dptr_; };
  auto theirs_forward_queue = [&] {
    cudnnConvolutionForward(d.h, &one, d.x, ptr(x), d.w, ptr(w), d.fwd, d.fwd_algo, d.workspace,
                            d.bytes, &zero, d.y, ptr(y[0]));
    cudnnAddTensor(d.h, &one, d.b, ptr(bias), &one, d.y, ptr(y[0]));
  };
  auto theirs_backward_queue = [&] {
    cudnnConvolutionBackwardData(d.h, &one, d.w, ptr(w), d.y, ptr(dy), d.bwd_data, d.data_algo,
                                 d.workspace, d.bytes, &zero, d.x, ptr(grads[0]));
    cudnnConvolutionBackwardFilter(d.h, &one, d.x, ptr(x), d.y, ptr(dy), d.bwd_filter,
                                   d.filter_algo, d.workspace, d.bytes, &zero, d.w, ptr(grads[1]));
    cudnnConvolutionBackwardBias(d.h, &one, d.y, ptr(dy), &zero, d.b, ptr(grads[2]));
  };
  auto theirs_forward = [&] {
    theirs_forward_queue();
    cudaStreamSynchronize(d.s);
  };
  auto theirs_backward = [&] {
    theirs_backward_queue();
    cudaStreamSynchronize(d.s);
  };
  // Then kQueued forward-backward pairs before one wait, on both sides: the
  // fixed cost of each call overlaps the GPU's work on the ones before it.
  constexpr int kQueued = 10;
  auto ours_queued = [&] {
    for (int i = 0; i < kQueued; ++i) {
      Invoke(fattrs, {x, w, bias}, &y);
      Invoke(battrs, {dy, x, w}, &grads);
    }
    for (const NDArray& a : grads) a.WaitToRead();
    y[0].WaitToRead();
  };
  auto theirs_queued = [&] {
    for (int i = 0; i < kQueued; ++i) {
      theirs_forward_queue();
      theirs_backward_queue();
    }
    cudaStreamSynchronize(d.s);
  };
  double tf_theirs = 0, tb_theirs = 0, tq_theirs = 0;
  const double tf = BestOf3(ours_forward, theirs_forward, &tf_theirs);
  const double tb = BestOf3(ours_backward, theirs_backward, &tb_theirs);
  const double tq = BestOf3(ours_queued, theirs_queued, &tq_theirs) / kQueued;
  tq_theirs /= kQueued;
  const char* name = "gpu_conv3x3_64_b32_56";
  std::printf("%s_forward_tessera: %.3f ms\n", name, tf);
  std::printf("%s_forward_cudnn: %.3f ms\n", name, tf_theirs);
  std::printf("%s_forward_vs_cudnn: %.3f ratio\n", name, tf_theirs / tf);
  std::printf("%s_backward_tessera: %.3f ms\n", name, tb);
  std::printf("%s_backward_cudnn: %.3f ms\n", name, tb_theirs);
  std::printf("%s_backward_vs_cudnn: %.3f ratio\n", name, tb_theirs / tb);
  std::printf("%s_step_queued_tessera: %.3f ms\n", name, tq);
  std::printf("%s_step_queued_cudnn: %.3f ms\n", name, tq_theirs);
  std::printf("%s_step_queued_vs_cudnn: %.3f ratio\n", name, tq_theirs / tq);
}

}  // namespace
#endif

int main() {
#if !defined(TESSERA_WITH_CUDA)
  std::puts("gpu_conv_bench: skipped, this build has no CUDA");
  return 0;
#elif !defined(TESSERA_BENCH_CUDNN)
  std::puts("gpu_conv_bench: skipped, cuDNN was not found when this benchmark was built");
  return 0;
#else
  if (NumGPUs() == 0) {
    std::puts("gpu_conv_bench: skipped, no GPU");
    return 0;
  }
  Run();
  return 0;
#endif
}
