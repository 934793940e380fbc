// GPU bandwidth: elemwise_add of two 256M-element float32 arrays on gpu(0)
// through Invoke into a preallocated output (push, kernel and wait, as a
// user's call), against a device-to-device cudaMemcpyAsync of one such
// array (the memory's limit), in the same run, medians of alternated runs.
// The add moves 12 bytes per element (two reads, one write), the copy 8.
// Then the cost of one call: a 1-element add on gpu(0) waited for after
// every call (the engine's round trip: push, launch, stream synchronise,
// completion, wake), against a 4-byte copy and a stream synchronize called
// directly (the floor without the engine), and 1000 such calls pushed
// before one wait.
// Prints `name: value unit` lines; without a GPU it says so and exits 0.
#include <cstdio>

#include "engine/base/context.h"
#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "tests/bench/bench_timing.h"

#ifdef TESSERA_WITH_CUDA
#include <cuda_runtime.h>
#endif

using namespace tessera;

int main() {
#ifndef TESSERA_WITH_CUDA
  std::puts("gpu_elemwise_bench: skipped, this build has no CUDA");
  return 0;
#else
  if (NumGPUs() == 0) {
    std::puts("gpu_elemwise_bench: skipped, no GPU");
    return 0;
  }
  constexpr int64_t n = int64_t{256} << 20;
  const size_t bytes = n * sizeof(float);
  const Context gpu = Context::GPU(0);
  NDArray a =
      Invoke("_ones", {}, {{"shape", "(" + std::to_string(n) + ",)"}, {"ctx", "gpu(0)"}})[0];
  NDArray b = a.CopyTo(gpu), out(Shape{n}, gpu);
  auto attrs = MakeAttrs("elemwise_add");
  std::vector<NDArray> outs{out};
  auto add = [&] {
    Invoke(attrs, {a, b}, &outs);
    out.WaitToRead();
  };
  void *src = nullptr, *dst = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
    std::puts("gpu_elemwise_bench: cudaMalloc failed");
    return 1;
  }
  cudaMemset(src, 0, bytes);
  auto copy = [&] {
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr);
    cudaStreamSynchronize(nullptr);
  };
  double t_add = 1e30, t_copy = 1e30;
  for (int round = 0; round < 3; ++round) {  // alternated, best median of each
    t_add = std::min(t_add, bench::MedianMs(add, 20));
    t_copy = std::min(t_copy, bench::MedianMs(copy, 20));
  }
  const double add_gbs = 12.0 * n / (t_add * 1e-3) * 1e-9;
  const double copy_gbs = 8.0 * n / (t_copy * 1e-3) * 1e-9;
  std::printf("gpu_add_256M: %.3f ms\n", t_add);
  std::printf("gpu_add_256M_bandwidth: %.0f GB/s\n", add_gbs);
  std::printf("gpu_copy_256M_bandwidth: %.0f GB/s\n", copy_gbs);
  std::printf("gpu_add_share_of_copy_bandwidth: %.3f ratio\n", add_gbs / copy_gbs);
  cudaFree(src);
  cudaFree(dst);

  NDArray one = a.Slice(0, 1), one_out(Shape{1}, gpu);
  std::vector<NDArray> one_outs{one_out};
  auto call = [&] { Invoke(attrs, {one, one}, &one_outs); };
  const double t_wait = bench::MedianMs(
      [&] {
        for (int i = 0; i < 100; ++i) {
          call();
          one_out.WaitToRead();
        }
      },
      5);
  const double t_batch = bench::MedianMs(
      [&] {
        for (int i = 0; i < 1000; ++i) call();
        one_out.WaitToRead();
      },
      5);
  // The floor of a waited call without the engine: a 4-byte
  // device-to-device copy on a stream of its own, then a synchronize (a
  // launch and a wait, the same loop shape).
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  void* from = one.data().dptr_;
  void* to = one_out.data().dptr_;
  const double t_direct = bench::MedianMs(
      [&] {
        for (int i = 0; i < 100; ++i) {
          cudaMemcpyAsync(to, from, sizeof(float), cudaMemcpyDeviceToDevice, s);
          cudaStreamSynchronize(s);
        }
      },
      5);
  cudaStreamDestroy(s);
  std::printf("gpu_add_1_wait_each: %.2f us/call\n", t_wait * 1e3 / 100);
  std::printf("gpu_copy_4B_sync_each_direct: %.2f us/call\n", t_direct * 1e3 / 100);
  std::printf("gpu_add_1_pushed_1000: %.2f us/call\n", t_batch * 1e3 / 1000);
  return 0;
#endif
}
