// GPU GEMM: `dot` of two 4096 x 4096 matrices on gpu(0) through Invoke into
// a preallocated output (push, cuBLAS on the op's stream, wait), against
// cublasGemmEx called directly on a stream of its own with the same types,
// compute type and math mode (float32: float32-exact, no TF32; float16:
// tensor cores summing in float32), then a stream synchronize: the same
// loop shape on both sides; then ten products queued before one wait, on
// both sides. Best of 3 alternated medians. Prints
// `name: value unit` lines; without a GPU it says so and exits 0.
#include <cstdio>
#include <string>

#include "engine/base/context.h"
#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "tests/bench/bench_timing.h"

#ifdef TESSERA_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

using namespace tessera;

#ifdef TESSERA_WITH_CUDA
namespace {

constexpr int kN = 4096;

// A kN x kN array of uniform values in `t` on gpu(0), drawn on the CPU.
NDArray RandomMatrix(DType t) {
  const std::string shape = "(" + std::to_string(kN) + "," + std::to_string(kN) + ")";
  return Invoke("_random_uniform", {}, {{"shape", shape}})[0].AsType(t).CopyTo(Context::GPU(0));
}

void Compare(DType t, cudaDataType_t cuda_type) {
  const char* dtype = DTypeName(t);
  NDArray a = RandomMatrix(t), b = RandomMatrix(t);
  NDArray c = Invoke("dot", {a, b})[0];
  c.WaitToRead();
  auto attrs = MakeAttrs("dot");
  std::vector<NDArray> outs{c};
  auto ours = [&] {
    Invoke(attrs, {a, b}, &outs);
    c.WaitToRead();
  };
  cublasHandle_t h;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cublasCreate(&h);
  cublasSetStream(h, s);
  cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
  const float one = 1, zero = 0;
  const void* pa = a.data().dptr_;
  const void* pb = b.data().dptr_;
  void* pc = c.data().dptr_;
  auto theirs = [&] {
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, pb, cuda_type, kN, pa, cuda_type,
                 kN, &zero, pc, cuda_type, kN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaStreamSynchronize(s);
  };
  // Then kQueued products in a row and one wait, as a script pushes work:
  // the fixed cost of a call overlaps the products before it.
  constexpr int kQueued = 10;
  auto ours_queued = [&] {
    for (int i = 0; i < kQueued; ++i) Invoke(attrs, {a, b}, &outs);
    c.WaitToRead();
  };
  auto theirs_queued = [&] {
    for (int i = 0; i < kQueued; ++i)
      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, pb, cuda_type, kN, pa, cuda_type,
                   kN, &zero, pc, cuda_type, kN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaStreamSynchronize(s);
  };
  double t_ours = 1e30, t_theirs = 1e30, q_ours = 1e30, q_theirs = 1e30;
  for (int round = 0; round < 3; ++round) {
    t_ours = std::min(t_ours, bench::MedianMs(ours, 20));
    t_theirs = std::min(t_theirs, bench::MedianMs(theirs, 20));
    q_ours = std::min(q_ours, bench::MedianMs(ours_queued, 5) / kQueued);
    q_theirs = std::min(q_theirs, bench::MedianMs(theirs_queued, 5) / kQueued);
  }
  const double flop = 2.0 * kN * kN * double(kN);
  std::printf("gpu_dot_%s_4096: %.3f ms\n", dtype, t_ours);
  std::printf("gpu_dot_%s_4096_tflops: %.1f TFLOP/s\n", dtype, flop / (t_ours * 1e-3) * 1e-12);
  std::printf("gpu_cublas_%s_4096: %.3f ms\n", dtype, t_theirs);
  std::printf("gpu_dot_%s_4096_vs_cublas: %.3f ratio\n", dtype, t_theirs / t_ours);
  std::printf("gpu_dot_%s_4096_queued: %.3f ms\n", dtype, q_ours);
  std::printf("gpu_cublas_%s_4096_queued: %.3f ms\n", dtype, q_theirs);
  std::printf("gpu_dot_%s_4096_queued_vs_cublas: %.3f ratio\n", dtype, q_theirs / q_ours);
  cublasDestroy(h);
  cudaStreamDestroy(s);
}

}  // namespace
#endif

int main() {
#ifndef TESSERA_WITH_CUDA
  std::puts("gpu_gemm_bench: skipped, this build has no CUDA");
  return 0;
#else
  if (NumGPUs() == 0) {
    std::puts("gpu_gemm_bench: skipped, no GPU");
    return 0;
  }
  Compare(DType::kFloat32, CUDA_R_32F);
  Compare(DType::kFloat16, CUDA_R_16F);
  return 0;
#endif
}
