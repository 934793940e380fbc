// The fused RNN op (LSTM, 2 layers of 512, sequence 35, batch 32, input 512,
// float32) against its limit: the same GEMMs, of the same shapes and in the
// same order, called directly with nothing between them. The op's figure
// minus the GEMMs' is what its pointwise cell steps, bias sums and copies
// cost. Prints `name: value unit` lines (medians after a warm-up).
//   rnn_bench [reps] [threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "ops/tensor/gemm.h"

using tessera::Context;
using tessera::Invoke;
using tessera::MakeAttrs;
using tessera::NDArray;
using tessera::Shape;
using tessera::op::Gemm;

namespace {

constexpr int64_t T = 35, N = 32, I = 512, H = 512, L = 2, G = 4, GH = G * H;

double MedianMs(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// The GEMMs of rnn_cpu.cc for this LSTM: per layer, the input projection
// and one recurrent product per step forward; one recurrent product per step
// and the three weight/input gradients backward.
struct GemmOnly {
  int threads;
  std::vector<float> x = Random(T * N * I, 1), w = Random(GH * (I + H), 2),
                     gates = Random(T * N * GH, 3), hs = Random(T * N * H, 4),
                     dh = Random(N * H, 5), dw = Random(GH * (I + H), 6), dx = Random(T * N * I, 7);
  void Forward() {
    for (int64_t l = 0; l < L; ++l) {
      Gemm(false, true, T * N, GH, I, 1.f, x.data(), I, w.data(), I, 0.f, gates.data(), GH,
           threads);
      for (int64_t t = 0; t < T; ++t)
        Gemm(false, true, N, GH, H, 1.f, hs.data() + t * N * H, H, w.data() + GH * I, H, 1.f,
             gates.data() + t * N * GH, GH, threads);
    }
  }
  void Backward() {
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t t = 0; t < T; ++t)
        Gemm(false, false, N, H, GH, 1.f, gates.data() + t * N * GH, GH, w.data() + GH * I, H, 1.f,
             dh.data(), H, threads);
      Gemm(true, false, GH, I, T * N, 1.f, gates.data(), GH, x.data(), I, 1.f, dw.data(), I,
           threads);
      Gemm(true, false, GH, H, (T - 1) * N, 1.f, gates.data() + N * GH, GH, hs.data(), H, 1.f,
           dw.data() + GH * I, H, threads);
      Gemm(true, false, GH, H, N, 1.f, gates.data(), GH, hs.data(), H, 1.f, dw.data() + GH * I, H,
           threads);
      Gemm(false, false, T * N, I, GH, 1.f, gates.data(), GH, w.data(), I, 0.f, dx.data(), I,
           threads);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const Context cpu = Context::CPU();
  const int64_t P = GH * (I + H) + GH * (H + H) + 2 * L * GH;
  auto fill = [&](const Shape& s, unsigned seed) {
    NDArray a(s, cpu);
    std::vector<float> v = Random(static_cast<size_t>(s.Size()), seed);
    a.SyncCopyFromCPU(v.data(), v.size());
    return a;
  };
  NDArray x = fill(Shape{T, N, I}, 1), w = fill(Shape{P}, 2);
  NDArray hx = fill(Shape{L, N, H}, 3), cx = fill(Shape{L, N, H}, 4);
  NDArray dy = fill(Shape{T, N, H}, 5);
  auto fwd = MakeAttrs("RNN", {{"state_size", "512"}, {"num_layers", "2"}, {"mode", "lstm"}});
  auto bwd =
      MakeAttrs("_backward_RNN", {{"state_size", "512"}, {"num_layers", "2"}, {"mode", "lstm"}});
  std::vector<NDArray> outs;
  tessera::InvokeOptions train;
  train.is_train = true;
  auto forward = [&] {
    outs.clear();
    Invoke(fwd, {x, w, hx, cx}, &outs, train);
    outs[0].WaitToRead();
  };
  auto backward = [&] {
    std::vector<NDArray> grads;
    Invoke(bwd, {dy, x, w, hx, cx, outs.back()}, &grads);
    for (NDArray& g : grads) g.WaitToRead();
  };
  forward();
  const double op_fwd = MedianMs(forward, reps);
  const double op_bwd = MedianMs(backward, reps);
  GemmOnly g{threads};
  const double gemm_fwd = MedianMs([&] { g.Forward(); }, reps);
  const double gemm_bwd = MedianMs([&] { g.Backward(); }, reps);
  std::printf("lstm2x512_t35_b32_op_forward: %.2f ms\n", op_fwd);
  std::printf("lstm2x512_t35_b32_op_backward: %.2f ms\n", op_bwd);
  std::printf("lstm2x512_t35_b32_gemm_forward: %.2f ms\n", gemm_fwd);
  std::printf("lstm2x512_t35_b32_gemm_backward: %.2f ms\n", gemm_bwd);
  std::printf("lstm2x512_t35_b32_op_vs_gemms: %.2f x\n", (op_fwd + op_bwd) / (gemm_fwd + gemm_bwd));
  return 0;
}
