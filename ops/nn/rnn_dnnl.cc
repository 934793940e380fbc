// The fused RNN op's forward in inference on oneDNN (float32; LSTM and the
// plain RNNs, without sequence lengths, clip or projection), where oneDNN's
// RNN primitive measured 1.4x faster than the loop over the BLAS
// (tests/bench/rnn_bench.cc: 50.7 vs 70.3 ms for the 2 x 512 LSTM). One
// primitive per layer (both directions at once, bidirectional_concat),
// created once per geometry; the weights are reordered at each call from
// MXNet's packed layout, described to oneDNN by its strides, to the layout
// the primitive prefers, in the op's temp space with the scratchpad. The
// layer outputs go where the loop puts them (the reserve's state
// sequences), so the op writes its outputs the same way after either.
// Training keeps the loop: its backward reads the gates the loop saves.
#include <algorithm>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "ops/nn/rnn-inl.h"
#include "ops/tensor/dnnl_util.h"

namespace tessera::op {
namespace {

using dnnl::memory;
using nn_dnnl::Carver;
using nn_dnnl::CpuEngine;
using Dims = memory::dims;
using Tag = memory::format_tag;

struct LayerPrims {
  memory::desc user_wl, user_wi, src, dst, iter, bias, wl, wi, scratch;
  std::unique_ptr<dnnl::primitive> fwd;
  std::unique_ptr<dnnl::reorder> to_wl, to_wi;  // null where the layouts agree
};

// mode, T, N, layer input, H, directions.
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t>;

std::unique_ptr<dnnl::reorder> ReorderOrNull(const memory::desc& from, const memory::desc& to) {
  if (from == to) return nullptr;
  return std::make_unique<dnnl::reorder>(
      dnnl::reorder::primitive_desc(CpuEngine(), from, CpuEngine(), to));
}

std::shared_ptr<LayerPrims> Create(int mode, int64_t T, int64_t N, int64_t in, int64_t H,
                                   int64_t D) {
  auto p = std::make_shared<LayerPrims>();
  const auto f32 = memory::data_type::f32;
  const int64_t G = RnnGates(mode), per_dir = G * H * (in + H);
  // MXNet's W_i2h (G*H, in) and W_h2h (G*H, H) of each direction, one
  // direction's pair after the other, seen as oneDNN's (l, d, i, g, o).
  p->user_wl = memory::desc({1, D, in, G, H}, f32, Dims{D * per_dir, per_dir, 1, H * in, in});
  p->user_wi = memory::desc({1, D, H, G, H}, f32, Dims{D * per_dir, per_dir, 1, H * H, H});
  p->src = memory::desc({T, N, in}, f32, Tag::tnc);
  p->dst = memory::desc({T, N, D * H}, f32, Tag::tnc);
  p->iter = memory::desc({1, D, N, H}, f32, Tag::ldnc);
  p->bias = memory::desc({1, D, G, H}, f32, Tag::ldgo);
  const memory::desc wl_any({1, D, in, G, H}, f32, Tag::any);
  const memory::desc wi_any({1, D, H, G, H}, f32, Tag::any);
  const auto dir = D == 2 ? dnnl::rnn_direction::bidirectional_concat
                          : dnnl::rnn_direction::unidirectional_left2right;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto infer = dnnl::prop_kind::forward_inference;
  if (mode == kLstm) {
    dnnl::lstm_forward::desc d(infer, dir, p->src, p->iter, p->iter, wl_any, wi_any, p->bias,
                               p->dst, p->iter, p->iter);
    dnnl::lstm_forward::primitive_desc pd(d, attr, CpuEngine());
    p->wl = pd.weights_layer_desc();
    p->wi = pd.weights_iter_desc();
    p->scratch = pd.scratchpad_desc();
    p->fwd = std::make_unique<dnnl::lstm_forward>(pd);
  } else {
    const auto act =
        mode == kRnnRelu ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_tanh;
    dnnl::vanilla_rnn_forward::desc d(infer, act, dir, p->src, p->iter, wl_any, wi_any, p->bias,
                                      p->dst, p->iter);
    dnnl::vanilla_rnn_forward::primitive_desc pd(d, attr, CpuEngine());
    p->wl = pd.weights_layer_desc();
    p->wi = pd.weights_iter_desc();
    p->scratch = pd.scratchpad_desc();
    p->fwd = std::make_unique<dnnl::vanilla_rnn_forward>(pd);
  }
  p->to_wl = ReorderOrNull(p->user_wl, p->wl);
  p->to_wi = ReorderOrNull(p->user_wi, p->wi);
  return p;
}

std::shared_ptr<LayerPrims> Get(const RnnGeom& g, int64_t l) {
  static nn_dnnl::PrimitiveCache<Key, LayerPrims> cache;
  const int64_t in = g.LayerInput(l);
  return cache.Get(Key{g.mode, g.T, g.N, in, g.H, g.D},
                   [&] { return Create(g.mode, g.T, g.N, in, g.H, g.D); });
}

memory Wrap(const memory::desc& d, const void* p) {
  return memory(d, CpuEngine(), const_cast<void*>(p));
}

}  // namespace

bool RnnDnnlInferenceApplies(const RNNParam& p, DType t) {
  return t == DType::kFloat32 && (p.mode == kLstm || p.mode == kRnnRelu || p.mode == kRnnTanh) &&
         !p.use_sequence_length && !p.projection_size && !p.lstm_state_clip_min &&
         !p.lstm_state_clip_max && nn_dnnl::Available();
}

void RnnDnnlInference(const RnnGeom& g, const OpContext& ctx, const float* x, const float* w,
                      const float* hx, const float* cx, float* res, float* hy_out, OpReqType hy_req,
                      float* cy_out, OpReqType cy_req) {
  std::vector<std::shared_ptr<LayerPrims>> prims;
  Carver carve;
  size_t weights_at = 0, bias_at = 0, scratch_at = 0, weights_bytes = 0, scratch_bytes = 0;
  for (int64_t l = 0; l < g.L; ++l) {
    prims.push_back(Get(g, l));
    weights_bytes =
        std::max(weights_bytes, prims.back()->wl.get_size() + 64 + prims.back()->wi.get_size());
    scratch_bytes = std::max(scratch_bytes, prims.back()->scratch.get_size());
  }
  weights_at = carve.Add(weights_bytes);
  bias_at = carve.Add(static_cast<size_t>(g.D * g.GH()) * sizeof(float));
  scratch_at = carve.Add(scratch_bytes);
  const size_t n_state = static_cast<size_t>(g.L * g.D * g.N * g.H);
  const size_t hy_at = carve.Add(n_state * sizeof(float)),
               cy_at = carve.Add(n_state * sizeof(float));
  char* space = static_cast<char*>(ctx.requested.at(1).get_space(carve.Total()));
  float* bias = reinterpret_cast<float*>(space + bias_at);
  float* hy = reinterpret_cast<float*>(space + hy_at);
  float* cy = reinterpret_cast<float*>(space + cy_at);
  nn_dnnl::ScopedOmpThreads threads(ctx.run_ctx.omp_threads);
  dnnl::stream s(CpuEngine());
  const float* layer_in = x;
  for (int64_t l = 0; l < g.L; ++l) {
    const LayerPrims& p = *prims[static_cast<size_t>(l)];
    // Weights in the primitive's layout; b = b_i2h + b_h2h per direction.
    memory wl = Wrap(p.user_wl, w + g.WeightI2H(l, 0)), wi = Wrap(p.user_wi, w + g.WeightH2H(l, 0));
    if (p.to_wl) {
      memory to(p.wl, CpuEngine(), space + weights_at);
      p.to_wl->execute(s, wl, to);
      wl = to;
    }
    if (p.to_wi) {
      memory to(p.wi, CpuEngine(), space + weights_at + (p.wl.get_size() + 63) / 64 * 64);
      p.to_wi->execute(s, wi, to);
      wi = to;
    }
    for (int64_t d = 0; d < g.D; ++d) {
      const float *bx = w + g.BiasI2H(l, d), *bh = w + g.BiasH2H(l, d);
      for (int64_t j = 0; j < g.GH(); ++j) bias[d * g.GH() + j] = bx[j] + bh[j];
    }
    const int64_t state = l * g.D * g.N * g.H;
    float* out = res + g.States(l);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC_LAYER, Wrap(p.src, layer_in)},
        {DNNL_ARG_SRC_ITER, Wrap(p.iter, hx + state)},
        {DNNL_ARG_WEIGHTS_LAYER, wl},
        {DNNL_ARG_WEIGHTS_ITER, wi},
        {DNNL_ARG_BIAS, Wrap(p.bias, bias)},
        {DNNL_ARG_DST_LAYER, Wrap(p.dst, out)},
        {DNNL_ARG_DST_ITER, Wrap(p.iter, hy + state)},
        {DNNL_ARG_SCRATCHPAD, Wrap(p.scratch, space + scratch_at)}};
    if (g.mode == kLstm) {
      args.emplace(DNNL_ARG_SRC_ITER_C, Wrap(p.iter, cx + state));
      args.emplace(DNNL_ARG_DST_ITER_C, Wrap(p.iter, cy + state));
    }
    p.fwd->execute(s, args);
    s.wait();
    layer_in = out;
  }
  auto store = [&](const float* from, float* to, OpReqType req) {
    if (req == kNullOp) return;
    for (size_t i = 0; i < n_state; ++i) to[i] = req == kAddTo ? to[i] + from[i] : from[i];
  };
  store(hy, hy_out, hy_req);
  if (g.mode == kLstm) store(cy, cy_out, cy_req);
}

}  // namespace tessera::op
