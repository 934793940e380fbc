// The fused RNN op on the CPU: oneDNN's primitive where it applies
// (rnn_dnnl.cc: the forward and backward hand it each layer), the op's own
// loop over the BLAS elsewhere (rnn_loop-inl.h, the GPU's too); the
// reserve's last element says which path a forward took. Also the
// geometry (RnnGeom) both devices share.
#include <algorithm>
#include <atomic>
#include <type_traits>
#include <vector>

#include "ops/nn/gemm_steps.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/rnn-inl.h"
#include "ops/nn/rnn_loop-inl.h"

namespace tessera::op {

namespace {

std::atomic<bool> g_force_loop{false};

// Training on oneDNN, layer by layer, with the loop's dropout between
// layers; the reserve keeps each layer's workspace and final states.
void TrainForwardDnnl(const RNNParam& p, const RnnGeom& g, const OpContext& ctx, const float* x,
                      const float* w, const float* hx, const float* cx, float* res,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const int64_t xbuf_n = g.dropout && g.L > 1 ? g.Rows() * g.DS() : 0;
  const size_t scratch_n =
      RnnDnnlScratchBytes(g, false, ctx.run_ctx.omp_threads) / sizeof(float) + 16;
  float* tmp = ctx.requested.at(1).get_space_typed<float>(static_cast<size_t>(xbuf_n) + scratch_n);
  float* xbuf = tmp;
  void* scratch = tmp + (xbuf_n + 15) / 16 * 16;
  const float* layer_in = x;
  for (int64_t l = 0; l < g.L; ++l) {
    RnnDnnlTrainForward(g, l, ctx, scratch, layer_in, w, hx, cx, res);
    if (l + 1 < g.L) layer_in = rnn::DropoutBetween<cpu>(p, g, ctx, l, res, xbuf);
  }
  res[g.Flag()] = 2.f;
  rnn::WriteOutput<cpu>(ctx, g, nullptr, res + g.States(g.L - 1), out[0].dptr<float>(), req[0]);
  const int64_t n = g.D * g.N * g.H;
  for (int64_t l = 0; l < g.L; ++l) {
    rnn::StoreRows<cpu>(ctx, static_cast<const float*>(res + g.DnnlIter(l)), n, 1, n,
                        out[1].dptr<float>() + l * n, n, req[1]);
    if (g.mode == kLstm)
      rnn::StoreRows<cpu>(ctx, static_cast<const float*>(res + g.DnnlIterC(l)), n, 1, n,
                          out[2].dptr<float>() + l * n, n, req[2]);
  }
}

template <typename T>
void ForwardTyped(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if constexpr (std::is_same_v<T, float>) {
    const RNNParam& p = RnnParams(attrs);
    const bool lstm = p.mode == kLstm;
    const bool inference = !ctx.is_train && RnnDnnlInferenceApplies(p, DType::kFloat32);
    const bool training = ctx.is_train && RnnDnnlTrainingApplies(p);
    if (!g_force_loop.load() && (inference || training)) {
      const RnnGeom g(p, in[0].shape()[0], in[0].shape()[1], in[0].shape()[2]);
      const float* x = in[0].dptr<float>();
      const float* w = in[1].dptr<float>();
      const float* hx = in[2].dptr<float>();
      const float* cx = lstm ? in[3].dptr<float>() : nullptr;
      float* res = out.back().dptr<float>();
      if (training) return TrainForwardDnnl(p, g, ctx, x, w, hx, cx, res, req, out);
      RnnDnnlInference(g, ctx, x, w, hx, cx, res, out[1].dptr<float>(), req[1],
                       lstm ? out[2].dptr<float>() : nullptr, lstm ? req[2] : kNullOp);
      res[g.Flag()] = 0.f;  // no gates kept: no backward from this forward
      rnn::WriteOutput<cpu>(ctx, g, nullptr, res + g.States(g.L - 1), out[0].dptr<float>(), req[0]);
      return;
    }
  }
  rnn::LoopForward<cpu, T>(attrs, ctx, in, req, out);
}

// The backward of a forward trained on oneDNN, layer by layer from the top
// (inputs and outputs as BackwardTyped's).
void TrainBackwardDnnl(const RNNParam& p, const RnnGeom& g, const OpContext& ctx,
                       const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                       const std::vector<TBlob>& out) {
  const bool lstm = p.mode == kLstm;
  const size_t n_og = p.state_outputs ? (lstm ? 3 : 2) : 1;
  const float* dout = in[0].dptr<float>();
  const float* dhy = p.state_outputs ? in[1].dptr<float>() : nullptr;
  const float* dcy = p.state_outputs && lstm ? in[2].dptr<float>() : nullptr;
  const float* x = in[n_og].dptr<float>();
  const float* w = in[n_og + 1].dptr<float>();
  const float* hx = in[n_og + 2].dptr<float>();
  const float* cx = lstm ? in[n_og + 3].dptr<float>() : nullptr;
  const float* res = in.back().dptr<float>();
  // Scratch: two layer-gradient buffers, the dropped-out input, the first
  // layer's input gradient (when added to), the states' gradients, the
  // parameters' (when not asked for), oneDNN's buffers.
  const int64_t seq = g.Rows() * g.DS(), n = g.D * g.N * g.H;
  const int64_t n_layer = g.L > 1 ? seq : 0, n_x = g.dropout && g.L > 1 ? seq : 0;
  const int64_t n_dx0 = req[0] == kWriteTo || req[0] == kWriteInplace ? 0 : g.Rows() * g.I;
  const int64_t n_dw = req[1] == kNullOp ? g.ParamSize() : 0;
  const int64_t dnnl_n =
      static_cast<int64_t>(RnnDnnlScratchBytes(g, true, ctx.run_ctx.omp_threads) / sizeof(float)) +
      16;
  auto up = [](int64_t k) { return (k + 15) / 16 * 16; };
  const int64_t total = 2 * up(n_layer) + up(n_x) + up(n_dx0) + 2 * up(n) + up(n_dw) + dnnl_n;
  float* at = ctx.requested.at(0).get_space_typed<float>(static_cast<size_t>(total));
  auto take = [&](int64_t k) {
    float* r = at;
    at += up(k);
    return r;
  };
  float* buf[2] = {take(n_layer), take(n_layer)};
  float* xbuf = take(n_x);
  float* dx0 = take(n_dx0);
  float* dhx = take(n);
  float* dcx = take(n);
  float* dw = n_dw ? take(n_dw) : out[1].dptr<float>();
  void* scratch = at;
  if (req[1] != kAddTo) std::fill(dw, dw + g.ParamSize(), 0.f);
  const float* dy = dout;
  for (int64_t l = g.L - 1; l >= 0; --l) {
    const float* xl = rnn::LayerInputOf<cpu>(ctx, g, l, x, res, xbuf);
    float* dx = l > 0 ? buf[l % 2] : (n_dx0 ? dx0 : out[0].dptr<float>());
    RnnDnnlTrainBackward(g, l, ctx, scratch, xl, w, hx, cx, res, dy, dhy, dcy, dx, dhx, dcx, dw,
                         req[1] != kAddTo);
    rnn::StoreRows<cpu>(ctx, static_cast<const float*>(dhx), n, 1, n, out[2].dptr<float>() + l * n,
                        n, req[2]);
    if (lstm)
      rnn::StoreRows<cpu>(ctx, static_cast<const float*>(dcx), n, 1, n,
                          out[3].dptr<float>() + l * n, n, req[3]);
    if (l > 0) {
      rnn::ThroughDropout<cpu>(ctx, g, l, res, dx);
      dy = dx;
    } else if (n_dx0) {
      rnn::StoreRows<cpu>(ctx, static_cast<const float*>(dx0), g.Rows() * g.I, 1, g.Rows() * g.I,
                          out[0].dptr<float>(), 0, req[0]);
    }
  }
}

template <typename T>
void BackwardTyped(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RNNParam& p = RnnParams(attrs);
  const size_t n_og = p.state_outputs ? (p.mode == kLstm ? 3 : 2) : 1;
  const TBlob& data = in[n_og];
  const RnnGeom g(p, data.shape()[0], data.shape()[1], data.shape()[2]);
  const float flag = static_cast<float>(in.back().dptr<T>()[g.Flag()]);
  TS_CHECK(flag != 0.f)
      << OpLabel(attrs)
      << ": backward after a forward in inference mode, which keeps nothing for it: run the "
         "forward in training (under mx.autograd.record, or forward{is_train = true})";
  if constexpr (std::is_same_v<T, float>) {
    if (flag == 2.f) return TrainBackwardDnnl(p, g, ctx, in, req, out);
  }
  rnn::LoopBackward<cpu, T>(attrs, ctx, in, req, out);
}

}  // namespace

RnnGeom::RnnGeom(const RNNParam& p, int64_t seq, int64_t batch, int64_t input)
    : mode(p.mode),
      T(seq),
      N(batch),
      I(input),
      H(p.state_size),
      L(p.num_layers),
      D(p.bidirectional ? 2 : 1),
      G(RnnGates(p.mode)),
      P(p.projection_size ? *p.projection_size : 0),
      dropout(p.p > 0) {
  for (int64_t l = 0; l < L; ++l) weights_ += D * LayerWeights(l);
  if (RnnDnnlTrainingApplies(p)) dnnl_ = RnnDnnlTrainingElements(*this);
  layer_ = Rows() * DS() + Region() + (dropout ? Rows() * DS() : 0);
}

int64_t RnnGeom::LayerWeights(int64_t l) const {
  return GH() * (LayerInput(l) + S()) + P * H;
}

int64_t RnnGeom::WeightI2H(int64_t l, int64_t d) const {
  int64_t off = 0;
  for (int64_t k = 0; k < l; ++k) off += D * LayerWeights(k);
  return off + d * LayerWeights(l);
}

bool SetRnnForceLoop(bool on) {
  return g_force_loop.exchange(on);
}

void RnnForwardCpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) { ForwardTyped<typename decltype(tag)::type>(attrs, ctx, in, req, out); },
      "RNN");
}

void RnnBackwardCpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) { BackwardTyped<typename decltype(tag)::type>(attrs, ctx, in, req, out); },
      "_backward_RNN");
}

}  // namespace tessera::op
