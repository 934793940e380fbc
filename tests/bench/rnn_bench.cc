// The fused RNN op (LSTM, 2 layers of 512, sequence 35, batch 32, input 512,
// float32): as it runs (on oneDNN) and through its own loop over the BLAS
// (forced), the loop against its limit, the same GEMMs of the same shapes in
// the same order called directly (the difference is what the pointwise
// cell steps, bias sums and copies cost), and oneDNN's LSTM primitive
// called directly with its weights already in the layout it prefers: the
// measurements behind the op's CPU paths. Prints `name: value unit` lines
// (medians after a warm-up).
//   rnn_bench [reps] [threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <unordered_map>

#include "engine/ndarray/imperative.h"
#include "ops/nn/rnn-inl.h"
#include "ops/tensor/gemm.h"
#include "tests/bench/bench_timing.h"

using tessera::Context;
using tessera::Invoke;
using tessera::MakeAttrs;
using tessera::NDArray;
using tessera::Shape;
using tessera::bench::MedianMs;
using tessera::op::Gemm;

namespace {

constexpr int64_t T = 35, N = 32, I = 512, H = 512, L = 2, G = 4, GH = G * H;

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

// oneDNN's LSTM, both layers in one primitive (I = H here), left to right.
struct DnnlLstm {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::unordered_map<int, dnnl::memory> fwd_args, bwd_args;
  dnnl::primitive fwd, bwd, infer;
  std::unordered_map<int, dnnl::memory> infer_args;

  static dnnl::memory Filled(const dnnl::memory::desc& d, const dnnl::engine& e, float v) {
    dnnl::memory m(d, e);
    auto* p = static_cast<float*>(m.get_data_handle());
    for (size_t i = 0; i < d.get_size() / sizeof(float); ++i) p[i] = v;
    return m;
  }

  DnnlLstm() {
    using dnnl::memory;
    const memory::desc src({T, N, I}, dt::f32, tag::tnc), dst({T, N, H}, dt::f32, tag::tnc);
    const memory::desc iter({L, 1, N, H}, dt::f32, tag::ldnc);
    const memory::desc bias({L, 1, G, H}, dt::f32, tag::ldgo);
    const memory::desc wl_any({L, 1, I, G, H}, dt::f32, tag::any);
    const memory::desc wi_any({L, 1, H, G, H}, dt::f32, tag::any);
    const auto dir = dnnl::rnn_direction::unidirectional_left2right;
    dnnl::lstm_forward::desc fd(dnnl::prop_kind::forward_training, dir, src, iter, iter, wl_any,
                                wi_any, bias, dst, iter, iter);
    dnnl::lstm_forward::primitive_desc fpd(fd, eng);
    dnnl::lstm_backward::desc bd(dnnl::prop_kind::backward, dir, src, iter, iter, wl_any, wi_any,
                                 bias, dst, iter, iter, src, iter, iter, wl_any, wi_any, bias, dst,
                                 iter, iter);
    dnnl::lstm_backward::primitive_desc bpd(bd, eng, fpd);
    dnnl::lstm_forward::desc id(dnnl::prop_kind::forward_inference, dir, src, iter, iter, wl_any,
                                wi_any, bias, dst, iter, iter);
    dnnl::lstm_forward::primitive_desc ipd(id, eng);
    infer = dnnl::lstm_forward(ipd);
    fwd = dnnl::lstm_forward(fpd);
    bwd = dnnl::lstm_backward(bpd);
    fwd_args = {{DNNL_ARG_SRC_LAYER, Filled(src, eng, 0.01f)},
                {DNNL_ARG_SRC_ITER, Filled(iter, eng, 0.f)},
                {DNNL_ARG_SRC_ITER_C, Filled(iter, eng, 0.f)},
                {DNNL_ARG_WEIGHTS_LAYER, Filled(fpd.weights_layer_desc(), eng, 0.01f)},
                {DNNL_ARG_WEIGHTS_ITER, Filled(fpd.weights_iter_desc(), eng, 0.01f)},
                {DNNL_ARG_BIAS, Filled(bias, eng, 0.f)},
                {DNNL_ARG_DST_LAYER, Filled(dst, eng, 0.f)},
                {DNNL_ARG_DST_ITER, Filled(iter, eng, 0.f)},
                {DNNL_ARG_DST_ITER_C, Filled(iter, eng, 0.f)},
                {DNNL_ARG_WORKSPACE, Filled(fpd.workspace_desc(), eng, 0.f)}};
    infer_args = fwd_args;
    infer_args.erase(DNNL_ARG_WORKSPACE);
    infer_args[DNNL_ARG_WEIGHTS_LAYER] = Filled(ipd.weights_layer_desc(), eng, 0.01f);
    infer_args[DNNL_ARG_WEIGHTS_ITER] = Filled(ipd.weights_iter_desc(), eng, 0.01f);
    bwd_args = fwd_args;
    bwd_args[DNNL_ARG_WEIGHTS_LAYER] = Filled(bpd.weights_layer_desc(), eng, 0.01f);
    bwd_args[DNNL_ARG_WEIGHTS_ITER] = Filled(bpd.weights_iter_desc(), eng, 0.01f);
    bwd_args[DNNL_ARG_DIFF_SRC_LAYER] = Filled(src, eng, 0.f);
    bwd_args[DNNL_ARG_DIFF_SRC_ITER] = Filled(iter, eng, 0.f);
    bwd_args[DNNL_ARG_DIFF_SRC_ITER_C] = Filled(iter, eng, 0.f);
    bwd_args[DNNL_ARG_DIFF_WEIGHTS_LAYER] = Filled(bpd.diff_weights_layer_desc(), eng, 0.f);
    bwd_args[DNNL_ARG_DIFF_WEIGHTS_ITER] = Filled(bpd.diff_weights_iter_desc(), eng, 0.f);
    bwd_args[DNNL_ARG_DIFF_BIAS] = Filled(bias, eng, 0.f);
    bwd_args[DNNL_ARG_DIFF_DST_LAYER] = Filled(dst, eng, 1.f);
    bwd_args[DNNL_ARG_DIFF_DST_ITER] = Filled(iter, eng, 0.f);
    bwd_args[DNNL_ARG_DIFF_DST_ITER_C] = Filled(iter, eng, 0.f);
  }
  void Forward() {
    fwd.execute(strm, fwd_args);
    strm.wait();
  }
  void Backward() {
    bwd.execute(strm, bwd_args);
    strm.wait();
  }
  void Inference() {
    infer.execute(strm, infer_args);
    strm.wait();
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
  // The loop over the BLAS, forced, then the op as it chooses (oneDNN).
  tessera::op::SetRnnForceLoop(true);
  forward();
  const double loop_fwd = MedianMs(forward, reps);
  const double loop_bwd = MedianMs(backward, reps);
  tessera::op::SetRnnForceLoop(false);
  forward();
  const double op_fwd = MedianMs(forward, reps);
  const double op_bwd = MedianMs(backward, reps);
  GemmOnly g{threads};
  const double gemm_fwd = MedianMs([&] { g.Forward(); }, reps);
  const double gemm_bwd = MedianMs([&] { g.Backward(); }, reps);
  std::printf("lstm2x512_t35_b32_loop_forward: %.2f ms\n", loop_fwd);
  std::printf("lstm2x512_t35_b32_loop_backward: %.2f ms\n", loop_bwd);
  std::printf("lstm2x512_t35_b32_op_forward: %.2f ms\n", op_fwd);
  std::printf("lstm2x512_t35_b32_op_backward: %.2f ms\n", op_bwd);
  std::printf("lstm2x512_t35_b32_gemm_forward: %.2f ms\n", gemm_fwd);
  std::printf("lstm2x512_t35_b32_gemm_backward: %.2f ms\n", gemm_bwd);
  std::printf("lstm2x512_t35_b32_loop_vs_gemms: %.2f x\n",
              (loop_fwd + loop_bwd) / (gemm_fwd + gemm_bwd));
  std::printf("lstm2x512_t35_b32_op_vs_loop: %.2f x\n", (op_fwd + op_bwd) / (loop_fwd + loop_bwd));
  omp_set_num_threads(threads);
  DnnlLstm d;
  const double dnnl_fwd = MedianMs([&] { d.Forward(); }, reps);
  const double dnnl_bwd = MedianMs([&] { d.Backward(); }, reps);
  const double dnnl_inf = MedianMs([&] { d.Inference(); }, reps);
  std::vector<NDArray> infer_outs;
  const double op_inf = MedianMs(
      [&] {
        infer_outs.clear();
        Invoke(fwd, {x, w, hx, cx}, &infer_outs);
        infer_outs[0].WaitToRead();
      },
      reps);
  std::printf("lstm2x512_t35_b32_op_inference: %.2f ms\n", op_inf);
  std::printf("lstm2x512_t35_b32_onednn_inference: %.2f ms\n", dnnl_inf);
  std::printf("lstm2x512_t35_b32_onednn_forward: %.2f ms\n", dnnl_fwd);
  std::printf("lstm2x512_t35_b32_onednn_backward: %.2f ms\n", dnnl_bwd);
  std::printf("lstm2x512_t35_b32_op_vs_onednn: %.2f x\n",
              (op_fwd + op_bwd) / (dnnl_fwd + dnnl_bwd));
  return 0;
}
