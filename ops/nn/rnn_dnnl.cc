// The fused RNN op on oneDNN (float32; LSTM and the plain RNNs, and GRU in
// inference, without sequence lengths, clip or projection): inference and training, forward
// and backward, one primitive per layer (both directions at once,
// bidirectional_concat), created once per geometry. The weights are
// reordered at each call from MXNet's packed layout, described to oneDNN by
// its strides, to the layouts the primitives prefer, and the weights'
// gradients back, in the op's temp space with the scratchpads. Layer
// outputs go where the loop puts them (the reserve's state sequences); in
// training the forward also keeps the workspace and the final states there
// for the backward. On tests/bench/rnn_bench.cc's 2 x 512 LSTM this ran the
// forward 1.28x and inference 1.32x faster than the loop, the backward at
// its speed (docs/sequence.md has the figures).
#include <algorithm>
#include <cstring>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "engine/base/env.h"
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

// GRU's gates are r, z, n in MXNet (and cuDNN) and u (= z), r, o (= n) in
// oneDNN's linear-before-reset GRU, which computes MXNet's n = tanh(W_in x +
// b_in + r (W_hn h + b_hn)): the first two gate blocks swap. Its bias has a
// fourth block, b_hn, kept apart from b_in.
int64_t BiasGates(int mode) {
  return mode == kGru ? 4 : RnnGates(mode);
}

// A GRU layer's weights as the inference primitive reads them: every
// direction's W_i2h, then every direction's W_h2h, each dense (gate, out,
// in), the first two gate blocks swapped (oneDNN's packed weight formats
// reorder only from dense ones, which MXNet's interleaved layout is not).
void GruDense(const RnnGeom& g, int64_t l, const float* mxnet, float* dense) {
  const int64_t in = g.LayerInput(l), H = g.H;
  const int64_t per_dir = 3 * H * (in + H);
  for (int64_t d = 0; d < g.D; ++d)
    for (int m = 0; m < 2; ++m) {  // W_i2h, then W_h2h
      const int64_t cols = m == 0 ? in : H, block = H * cols;
      const int64_t mx_at = d * per_dir + (m == 0 ? 0 : 3 * H * in);
      const int64_t dense_at = (m == 0 ? 0 : g.D * 3 * H * in) + d * 3 * block;
      for (int k = 0; k < 3; ++k) {  // oneDNN's gate k is MXNet's gate (1, 0, 2)[k]
        const float* mx = mxnet + mx_at + (k == 0 ? 1 : k == 1 ? 0 : 2) * block;
        std::copy(mx, mx + block, dense + dense_at + k * block);
      }
    }
}

// The bias oneDNN adds: b_i2h + b_h2h per direction; for a GRU [b_z, b_r,
// b_in, b_hn] with b_z and b_r summed likewise.
void FillBias(const RnnGeom& g, int64_t l, const float* w, float* bias) {
  const int64_t H = g.H, nb = BiasGates(g.mode) * H;
  for (int64_t d = 0; d < g.D; ++d) {
    const float *bx = w + g.BiasI2H(l, d), *bh = w + g.BiasH2H(l, d);
    float* b = bias + d * nb;
    if (g.mode != kGru) {
      for (int64_t j = 0; j < g.GH(); ++j) b[j] = bx[j] + bh[j];
      continue;
    }
    for (int64_t j = 0; j < H; ++j) {
      b[j] = bx[H + j] + bh[H + j];  // z
      b[H + j] = bx[j] + bh[j];      // r
      b[2 * H + j] = bx[2 * H + j];  // n, input side
      b[3 * H + j] = bh[2 * H + j];  // n, hidden side
    }
  }
}

// The bias gradient back into MXNet's two biases (LSTM and plain RNNs:
// GRUs train on the loop).
void AddBiasGrad(const RnnGeom& g, int64_t l, const float* dbias, float* dw) {
  TS_DCHECK(g.mode != kGru);
  for (int64_t d = 0; d < g.D; ++d)
    for (int64_t j = 0; j < g.GH(); ++j) {
      dw[g.BiasI2H(l, d) + j] += dbias[d * g.GH() + j];
      dw[g.BiasH2H(l, d) + j] += dbias[d * g.GH() + j];
    }
}

// Layer l's weights as the primitives read them: MXNet's own, or for a GRU
// the dense copy in `buffer`; and where W_h2h starts from there.
const float* LayerWeights(const RnnGeom& g, int64_t l, const float* w, float* buffer) {
  if (g.mode != kGru) return w + g.WeightI2H(l, 0);
  GruDense(g, l, w + g.WeightI2H(l, 0), buffer);
  return buffer;
}
int64_t IterWeightsOffset(const RnnGeom& g, int64_t l) {
  return (g.mode == kGru ? g.D : 1) * g.GH() * g.LayerInput(l);
}

// What a layer's primitives are asked for, inference or training: the
// weights in the layouts oneDNN prefers, the direction, and a scratchpad
// the op supplies.
struct LayerAsk {
  memory::desc wl_any, wi_any;
  dnnl::rnn_direction dir;
  dnnl::primitive_attr attr;
};

LayerAsk AnyLayouts(int mode, int64_t in, int64_t H, int64_t D) {
  const auto f32 = memory::data_type::f32;
  const int64_t G = RnnGates(mode);
  LayerAsk a{memory::desc({1, D, in, G, H}, f32, Tag::any),
             memory::desc({1, D, H, G, H}, f32, Tag::any),
             D == 2 ? dnnl::rnn_direction::bidirectional_concat
                    : dnnl::rnn_direction::unidirectional_left2right,
             dnnl::primitive_attr()};
  a.attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
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
  if (mode == kGru) {  // the dense copy GruDense makes
    p->user_wl = memory::desc({1, D, in, G, H}, f32, Tag::ldgoi);
    p->user_wi = memory::desc({1, D, H, G, H}, f32, Tag::ldgoi);
  }
  p->src = memory::desc({T, N, in}, f32, Tag::tnc);
  p->dst = memory::desc({T, N, D * H}, f32, Tag::tnc);
  p->iter = memory::desc({1, D, N, H}, f32, Tag::ldnc);
  p->bias = memory::desc({1, D, BiasGates(mode), H}, f32, Tag::ldgo);
  const auto [wl_any, wi_any, dir, attr] = AnyLayouts(mode, in, H, D);
  const auto infer = dnnl::prop_kind::forward_inference;
  if (mode == kLstm) {
    dnnl::lstm_forward::desc d(infer, dir, p->src, p->iter, p->iter, wl_any, wi_any, p->bias,
                               p->dst, p->iter, p->iter);
    dnnl::lstm_forward::primitive_desc pd(d, attr, CpuEngine());
    p->wl = pd.weights_layer_desc();
    p->wi = pd.weights_iter_desc();
    p->scratch = pd.scratchpad_desc();
    p->fwd = std::make_unique<dnnl::lstm_forward>(pd);
  } else if (mode == kGru) {
    dnnl::lbr_gru_forward::desc d(infer, dir, p->src, p->iter, wl_any, wi_any, p->bias, p->dst,
                                  p->iter);
    dnnl::lbr_gru_forward::primitive_desc pd(d, attr, CpuEngine());
    p->wl = pd.weights_layer_desc();
    p->wi = pd.weights_iter_desc();
    p->scratch = pd.scratchpad_desc();
    p->fwd = std::make_unique<dnnl::lbr_gru_forward>(pd);
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

// Layer l's primitives on `threads` OpenMP threads from `cache`, made by
// `create` on first use.
template <typename Prims, typename CreateFn>
std::shared_ptr<Prims> Cached(nn_dnnl::PrimitiveCache<Key, Prims>& cache, CreateFn create,
                              const RnnGeom& g, int64_t l, int threads) {
  const int64_t in = g.LayerInput(l);
  return cache.Get(Key{g.mode, g.T, g.N, in, g.H, g.D}, threads,
                   [&] { return create(g.mode, g.T, g.N, in, g.H, g.D); });
}

std::shared_ptr<LayerPrims> Get(const RnnGeom& g, int64_t l, int threads) {
  static nn_dnnl::PrimitiveCache<Key, LayerPrims> cache;
  return Cached(cache, Create, g, l, threads);
}

memory Wrap(const memory::desc& d, const void* p) {
  return memory(d, CpuEngine(), const_cast<void*>(p));
}

// Training: the forward keeps a workspace for the backward, which has its
// own preferred weight layouts and writes the weights' gradients in them.
struct TrainPrims {
  memory::desc user_wl, user_wi, src, dst, iter, bias;
  memory::desc f_wl, f_wi, ws, f_scratch;            // forward
  memory::desc b_wl, b_wi, b_dwl, b_dwi, b_scratch;  // backward
  std::unique_ptr<dnnl::primitive> fwd, bwd;
  std::unique_ptr<dnnl::reorder> to_fwl, to_fwi, to_bwl, to_bwi, from_dwl, from_dwi;
};

std::shared_ptr<TrainPrims> CreateTrain(int mode, int64_t T, int64_t N, int64_t in, int64_t H,
                                        int64_t D) {
  auto p = std::make_shared<TrainPrims>();
  const std::shared_ptr<LayerPrims> base = Create(mode, T, N, in, H, D);  // the plain layouts
  p->user_wl = base->user_wl;
  p->user_wi = base->user_wi;
  p->src = base->src;
  p->dst = base->dst;
  p->iter = base->iter;
  p->bias = base->bias;
  const auto [wl_any, wi_any, dir, attr] = AnyLayouts(mode, in, H, D);
  const auto& e = CpuEngine();
  auto fill = [&](const auto& fpd, const auto& bpd) {
    p->f_wl = fpd.weights_layer_desc();
    p->f_wi = fpd.weights_iter_desc();
    p->ws = fpd.workspace_desc();
    p->f_scratch = fpd.scratchpad_desc();
    p->b_wl = bpd.weights_layer_desc();
    p->b_wi = bpd.weights_iter_desc();
    p->b_dwl = bpd.diff_weights_layer_desc();
    p->b_dwi = bpd.diff_weights_iter_desc();
    p->b_scratch = bpd.scratchpad_desc();
  };
  const memory::desc &src = p->src, &dst = p->dst, &iter = p->iter, &bias = p->bias;
  if (mode == kLstm) {
    dnnl::lstm_forward::desc fd(dnnl::prop_kind::forward_training, dir, src, iter, iter, wl_any,
                                wi_any, bias, dst, iter, iter);
    dnnl::lstm_forward::primitive_desc fpd(fd, attr, e);
    dnnl::lstm_backward::desc bd(dnnl::prop_kind::backward, dir, src, iter, iter, wl_any, wi_any,
                                 bias, dst, iter, iter, src, iter, iter, wl_any, wi_any, bias, dst,
                                 iter, iter);
    dnnl::lstm_backward::primitive_desc bpd(bd, attr, e, fpd);
    fill(fpd, bpd);
    p->fwd = std::make_unique<dnnl::lstm_forward>(fpd);
    p->bwd = std::make_unique<dnnl::lstm_backward>(bpd);
  } else {
    const auto act =
        mode == kRnnRelu ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_tanh;
    dnnl::vanilla_rnn_forward::desc fd(dnnl::prop_kind::forward_training, act, dir, src, iter,
                                       wl_any, wi_any, bias, dst, iter);
    dnnl::vanilla_rnn_forward::primitive_desc fpd(fd, attr, e);
    dnnl::vanilla_rnn_backward::desc bd(dnnl::prop_kind::backward, act, dir, src, iter, wl_any,
                                        wi_any, bias, dst, iter, src, iter, wl_any, wi_any, bias,
                                        dst, iter);
    dnnl::vanilla_rnn_backward::primitive_desc bpd(bd, attr, e, fpd);
    fill(fpd, bpd);
    p->fwd = std::make_unique<dnnl::vanilla_rnn_forward>(fpd);
    p->bwd = std::make_unique<dnnl::vanilla_rnn_backward>(bpd);
  }
  p->to_fwl = ReorderOrNull(p->user_wl, p->f_wl);
  p->to_fwi = ReorderOrNull(p->user_wi, p->f_wi);
  p->to_bwl = ReorderOrNull(p->user_wl, p->b_wl);
  p->to_bwi = ReorderOrNull(p->user_wi, p->b_wi);
  // Always a reorder back: MXNet's layout is strided, the buffer is not.
  p->from_dwl = std::make_unique<dnnl::reorder>(
      dnnl::reorder::primitive_desc(CpuEngine(), p->b_dwl, CpuEngine(), p->user_wl));
  p->from_dwi = std::make_unique<dnnl::reorder>(
      dnnl::reorder::primitive_desc(CpuEngine(), p->b_dwi, CpuEngine(), p->user_wi));
  return p;
}

std::shared_ptr<TrainPrims> GetTrain(const RnnGeom& g, int64_t l, int threads) {
  static nn_dnnl::PrimitiveCache<Key, TrainPrims> cache;
  return Cached(cache, CreateTrain, g, l, threads);
}

size_t Aligned(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// `user`, in the primitive's layout `to` at `at` when they differ.
memory Prepared(const std::unique_ptr<dnnl::reorder>& r, const memory& user, const memory::desc& to,
                char* at, dnnl::stream& s) {
  if (!r) return user;
  memory m(to, CpuEngine(), at);
  r->execute(s, const_cast<memory&>(user), m);
  return m;
}

// TESSERA_RNN_DNNL=0 keeps every RNN on the loop (read once): oneDNN's
// training workspace is larger than the loop's saved gates.
bool DnnlAllowed() {
  static const bool allowed = EnvBool("TESSERA_RNN_DNNL", true);
  return allowed;
}

// The arguments the training forward and the backward share: the layer's
// input, initial and final states, weights, bias, output and workspace.
std::unordered_map<int, memory> TrainArgs(const TrainPrims& p, const RnnGeom& g, int64_t l,
                                          const float* layer_in, const memory& wl, const memory& wi,
                                          const float* bias, const float* hx, const float* cx,
                                          const float* res) {
  const int64_t state = l * g.D * g.N * g.H;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC_LAYER, Wrap(p.src, layer_in)},
                                       {DNNL_ARG_SRC_ITER, Wrap(p.iter, hx + state)},
                                       {DNNL_ARG_WEIGHTS_LAYER, wl},
                                       {DNNL_ARG_WEIGHTS_ITER, wi},
                                       {DNNL_ARG_BIAS, Wrap(p.bias, bias)},
                                       {DNNL_ARG_DST_LAYER, Wrap(p.dst, res + g.States(l))},
                                       {DNNL_ARG_DST_ITER, Wrap(p.iter, res + g.DnnlIter(l))},
                                       {DNNL_ARG_WORKSPACE, Wrap(p.ws, res + g.DnnlWorkspace(l))}};
  if (g.mode == kLstm) {
    args.emplace(DNNL_ARG_SRC_ITER_C, Wrap(p.iter, cx + state));
    args.emplace(DNNL_ARG_DST_ITER_C, Wrap(p.iter, res + g.DnnlIterC(l)));
  }
  return args;
}

}  // namespace

// GRUs train on the loop: oneDNN's linear-before-reset GRU measured a 10%
// faster forward but a 1.45x slower backward there (2 x 512, sequence 35,
// batch 32, 2 threads: 56 + 121 ms against the loop's 63 + 85 ms).
bool RnnDnnlTrainingApplies(const RNNParam& p) {
  return p.mode != kGru && !p.use_sequence_length && !p.projection_size && !p.lstm_state_clip_min &&
         !p.lstm_state_clip_max && DnnlAllowed() && nn_dnnl::Available();
}

int64_t RnnDnnlTrainingElements(const RnnGeom& g) {
  size_t most = 0;
  // The workspace holds the gates and states, whatever the thread count.
  for (int64_t l = 0; l < g.L; ++l) most = std::max(most, GetTrain(g, l, 0)->ws.get_size());
  // The final states and cells, alignment, the workspace.
  return 2 * g.D * g.N * g.H + 16 + static_cast<int64_t>((most + 3) / 4);
}

size_t RnnDnnlScratchBytes(const RnnGeom& g, bool backward, int threads) {
  size_t most = 0;
  for (int64_t l = 0; l < g.L; ++l) {
    const TrainPrims& p = *GetTrain(g, l, threads);
    size_t b = Aligned(static_cast<size_t>(g.D * g.GH()) * 4);  // bias
    if (!backward) {
      b +=
          Aligned(p.f_wl.get_size()) + Aligned(p.f_wi.get_size()) + Aligned(p.f_scratch.get_size());
    } else {
      b += Aligned(p.b_wl.get_size()) + Aligned(p.b_wi.get_size()) +
           Aligned(p.b_scratch.get_size()) + Aligned(p.b_dwl.get_size()) +
           Aligned(p.b_dwi.get_size()) +
           Aligned(static_cast<size_t>(g.D * g.LayerWeights(l)) * 4) +  // dW in MXNet's layout
           Aligned(static_cast<size_t>(g.D * g.GH()) * 4) +             // d bias
           Aligned(static_cast<size_t>(g.D * g.N * g.H) * 4);           // zeros for dhy, dcy
    }
    most = std::max(most, b);
  }
  return most;
}

void RnnDnnlTrainForward(const RnnGeom& g, int64_t l, const OpContext& ctx, void* scratch,
                         const float* layer_in, const float* w, const float* hx, const float* cx,
                         float* res) {
  const TrainPrims& p = *GetTrain(g, l, ctx.run_ctx.omp_threads);
  char* at = static_cast<char*>(scratch);
  float* bias = reinterpret_cast<float*>(at);
  at += Aligned(static_cast<size_t>(g.D * g.GH()) * 4);
  const float* lw = w + g.WeightI2H(l, 0);
  nn_dnnl::ScopedOmpThreads threads(ctx.run_ctx.omp_threads);
  dnnl::stream s(CpuEngine());
  const memory wl = Prepared(p.to_fwl, Wrap(p.user_wl, lw), p.f_wl, at, s);
  at += Aligned(p.f_wl.get_size());
  const memory wi =
      Prepared(p.to_fwi, Wrap(p.user_wi, lw + g.GH() * g.LayerInput(l)), p.f_wi, at, s);
  at += Aligned(p.f_wi.get_size());
  FillBias(g, l, w, bias);
  std::unordered_map<int, memory> args = TrainArgs(p, g, l, layer_in, wl, wi, bias, hx, cx, res);
  args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(p.f_scratch, at));
  p.fwd->execute(s, args);
  s.wait();
}

void RnnDnnlTrainBackward(const RnnGeom& g, int64_t l, const OpContext& ctx, void* scratch,
                          const float* layer_in, const float* w, const float* hx, const float* cx,
                          const float* res, const float* dy, const float* dhy, const float* dcy,
                          float* dx, float* dhx, float* dcx, float* dw, bool dw_zero) {
  const TrainPrims& p = *GetTrain(g, l, ctx.run_ctx.omp_threads);
  const size_t n_state = static_cast<size_t>(g.D * g.N * g.H);
  char* at = static_cast<char*>(scratch);
  auto take = [&](size_t bytes) {
    char* r = at;
    at += Aligned(bytes);
    return r;
  };
  float* bias = reinterpret_cast<float*>(take(static_cast<size_t>(g.D * g.GH()) * 4));
  const float* lw = w + g.WeightI2H(l, 0);
  nn_dnnl::ScopedOmpThreads threads(ctx.run_ctx.omp_threads);
  dnnl::stream s(CpuEngine());
  const memory wl = Prepared(p.to_bwl, Wrap(p.user_wl, lw), p.b_wl, take(p.b_wl.get_size()), s);
  const memory wi = Prepared(p.to_bwi, Wrap(p.user_wi, lw + g.GH() * g.LayerInput(l)), p.b_wi,
                             take(p.b_wi.get_size()), s);
  FillBias(g, l, w, bias);
  char* scratchpad = take(p.b_scratch.get_size());
  // oneDNN adds the weights' gradients to what these hold: start at zero.
  char* dwl_p = take(p.b_dwl.get_size());
  char* dwi_p = take(p.b_dwi.get_size());
  std::memset(dwl_p, 0, p.b_dwl.get_size());
  std::memset(dwi_p, 0, p.b_dwi.get_size());
  memory dwl(p.b_dwl, CpuEngine(), dwl_p), dwi(p.b_dwi, CpuEngine(), dwi_p);
  float* dw_user = reinterpret_cast<float*>(take(static_cast<size_t>(g.D * g.LayerWeights(l)) * 4));
  const int64_t n_bias = g.D * g.GH();
  float* dbias = reinterpret_cast<float*>(take(static_cast<size_t>(n_bias) * 4));
  std::fill(dbias, dbias + n_bias, 0.f);
  float* zeros = reinterpret_cast<float*>(take(n_state * 4));  // no dhy or dcy given
  std::fill(zeros, zeros + n_state, 0.f);
  const int64_t state = l * g.D * g.N * g.H;
  std::unordered_map<int, memory> args = TrainArgs(p, g, l, layer_in, wl, wi, bias, hx, cx, res);
  args.emplace(DNNL_ARG_DIFF_SRC_LAYER, Wrap(p.src, dx));
  args.emplace(DNNL_ARG_DIFF_SRC_ITER, Wrap(p.iter, dhx));
  args.emplace(DNNL_ARG_DIFF_WEIGHTS_LAYER, dwl);
  args.emplace(DNNL_ARG_DIFF_WEIGHTS_ITER, dwi);
  args.emplace(DNNL_ARG_DIFF_BIAS, Wrap(p.bias, dbias));
  args.emplace(DNNL_ARG_DIFF_DST_LAYER, Wrap(p.dst, dy));
  args.emplace(DNNL_ARG_DIFF_DST_ITER, Wrap(p.iter, dhy ? dhy + state : zeros));
  args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(p.b_scratch, scratchpad));
  if (g.mode == kLstm) {
    args.emplace(DNNL_ARG_DIFF_SRC_ITER_C, Wrap(p.iter, dcx));
    args.emplace(DNNL_ARG_DIFF_DST_ITER_C, Wrap(p.iter, dcy ? dcy + state : zeros));
  }
  p.bwd->execute(s, args);
  // The weights' gradients back in MXNet's layout: straight into dw when
  // it starts at zero (this layer's part of it was never written), else
  // beside it and added.
  const bool direct = dw_zero;
  float* to = direct ? dw + g.WeightI2H(l, 0) : dw_user;
  memory user_dwl = Wrap(p.user_wl, to), user_dwi = Wrap(p.user_wi, to + g.GH() * g.LayerInput(l));
  p.from_dwl->execute(s, dwl, user_dwl);
  p.from_dwi->execute(s, dwi, user_dwi);
  s.wait();
  if (!direct) {
    float* dst = dw + g.WeightI2H(l, 0);
    for (int64_t i = 0; i < g.D * g.LayerWeights(l); ++i) dst[i] += dw_user[i];
  }
  AddBiasGrad(g, l, dbias, dw);
}

bool RnnDnnlInferenceApplies(const RNNParam& p, DType t) {
  return t == DType::kFloat32 && !p.use_sequence_length && !p.projection_size &&
         !p.lstm_state_clip_min && !p.lstm_state_clip_max && DnnlAllowed() && nn_dnnl::Available();
}

void RnnDnnlInference(const RnnGeom& g, const OpContext& ctx, const float* x, const float* w,
                      const float* hx, const float* cx, float* res, float* hy_out, OpReqType hy_req,
                      float* cy_out, OpReqType cy_req) {
  std::vector<std::shared_ptr<LayerPrims>> prims;
  Carver carve;
  size_t weights_at = 0, bias_at = 0, scratch_at = 0, weights_bytes = 0, scratch_bytes = 0;
  for (int64_t l = 0; l < g.L; ++l) {
    prims.push_back(Get(g, l, ctx.run_ctx.omp_threads));
    weights_bytes =
        std::max(weights_bytes, prims.back()->wl.get_size() + 64 + prims.back()->wi.get_size());
    scratch_bytes = std::max(scratch_bytes, prims.back()->scratch.get_size());
  }
  weights_at = carve.Add(weights_bytes);
  bias_at = carve.Add(static_cast<size_t>(g.D * BiasGates(g.mode) * g.H) * sizeof(float));
  int64_t most_weights = 0;  // a GRU layer's dense copy
  for (int64_t l = 0; l < g.L; ++l) most_weights = std::max(most_weights, g.LayerWeights(l));
  const size_t swapped_at =
      carve.Add(g.mode == kGru ? static_cast<size_t>(g.D * most_weights) * sizeof(float) : 0);
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
    // Weights in the primitive's layout; the bias as FillBias makes it.
    const float* lw = LayerWeights(g, l, w, reinterpret_cast<float*>(space + swapped_at));
    memory wl = Wrap(p.user_wl, lw), wi = Wrap(p.user_wi, lw + IterWeightsOffset(g, l));
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
    FillBias(g, l, w, bias);
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
