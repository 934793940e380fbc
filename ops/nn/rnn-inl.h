// The fused RNN operator's parameters and geometry, shared by the shape
// functions (rnn.cc), the loop both devices run (rnn_loop-inl.h) and the
// CPU's oneDNN paths (rnn_cpu.cc, rnn_dnnl.cc).
//
// Layout, as MXNet's (and cuDNN's), so that MXNet-trained weights load:
//   data (T, N, I), state (L*D, N, S), state_cell (L*D, N, H) for LSTM,
//   out (T, N, D*S), hy (L*D, N, S), cy (L*D, N, H); layer-major,
//   direction-minor; S = H, or P for an LSTM with projection_size P.
//   The parameter vector holds every weight, then every bias, each walked
//   layer by layer and, inside a layer, direction by direction:
//     W_i2h (G*H, I_l), W_h2h (G*H, S) [, W_h2r (P, H)] ... then b_i2h (G*H),
//     b_h2h (G*H) ...
//   with G gates per step (rnn 1, lstm 4 in the order i f g o, gru 3 in the
//   order r z n) and I_l = I for the first layer, D*S above it.
//
// The hidden last output, the reserve, keeps what the backward needs, per
// layer: the state sequence H_l (T, N, D*S), per direction the gates after
// their activation (T, N, G*H), one more (T, N, H) array (LSTM: the cell
// sequence; GRU: U_n h + b_hn, the candidate's recurrent half before the
// reset gate) and, with a projection, h before it (T, N, H); and, below the
// top layer when p > 0, the dropout mask applied to H_l before the next
// layer reads it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "ops/nn/nn_common.h"

namespace tessera::op {

enum RnnMode { kRnnRelu, kRnnTanh, kLstm, kGru };

struct RNNParam : Params<RNNParam> {
  int state_size = 0;
  int num_layers = 0;
  bool bidirectional = false;
  int mode = kLstm;
  float p = 0.f;
  bool state_outputs = false;
  std::optional<int> projection_size;
  std::optional<double> lstm_state_clip_min, lstm_state_clip_max;
  bool lstm_state_clip_nan = false;
  bool use_sequence_length = false;
  static void Declare(ParamDecl<RNNParam>& d);
};

inline const RNNParam& RnnParams(const NodeAttrs& attrs) {
  return ParamsOf<RNNParam>(attrs);
}

// Where every piece of the parameter vector and of the reserve starts.
// S is the width of the recurrent state and of a direction's output: H, or
// the projection size P of an LSTM with projection (LSTMP), whose cell
// stays H wide (r = W_h2r h is what recurs and what comes out).
struct RnnGeom {
  int mode = kLstm;
  int64_t T = 0, N = 0, I = 0, H = 0, L = 0, D = 1, G = 1;
  int64_t P = 0;         // projection size; 0: none
  bool dropout = false;  // p > 0: masks between layers

  RnnGeom(const RNNParam& p, int64_t seq, int64_t batch, int64_t input);

  int64_t S() const { return P > 0 ? P : H; }
  int64_t GH() const { return G * H; }
  int64_t DS() const { return D * S(); }
  int64_t LayerInput(int64_t l) const { return l == 0 ? I : DS(); }
  int64_t Rows() const { return T * N; }

  // Parameter vector, in elements. Per layer and direction: W_i2h
  // (G*H, I_l), W_h2h (G*H, S) and, with a projection, W_h2r (P, H).
  int64_t LayerWeights(int64_t l) const;  // one direction's weights in layer l
  int64_t WeightI2H(int64_t l, int64_t d) const;
  int64_t WeightH2H(int64_t l, int64_t d) const { return WeightI2H(l, d) + GH() * LayerInput(l); }
  int64_t WeightH2R(int64_t l, int64_t d) const { return WeightH2H(l, d) + GH() * S(); }
  int64_t BiasI2H(int64_t l, int64_t d) const { return weights_ + 2 * GH() * (l * D + d); }
  int64_t BiasH2H(int64_t l, int64_t d) const { return BiasI2H(l, d) + GH(); }
  int64_t ParamSize() const { return weights_ + 2 * GH() * L * D; }

  // Reserve, in elements. Per layer: the state sequence (T, N, D*S); per
  // direction the gates, the extra sequence and, with a projection, h
  // before it (T, N, H) (or, when training on oneDNN, its final states and
  // workspace in the same region, sized for the larger); then the dropout
  // mask.
  int64_t ExtraPerStep() const { return mode == kLstm || mode == kGru ? H : 0; }
  int64_t PerDirection() const { return Rows() * (GH() + ExtraPerStep() + (P > 0 ? H : 0)); }
  int64_t States(int64_t l) const { return l * layer_; }
  int64_t Gates(int64_t l, int64_t d) const {
    return States(l) + Rows() * DS() + d * PerDirection();
  }
  int64_t Extra(int64_t l, int64_t d) const { return Gates(l, d) + Rows() * GH(); }
  int64_t PreProjection(int64_t l, int64_t d) const {
    return Extra(l, d) + Rows() * ExtraPerStep();
  }
  int64_t Region() const { return std::max(D * PerDirection(), dnnl_); }
  bool HasMask(int64_t l) const { return dropout && l + 1 < L; }
  int64_t Mask(int64_t l) const { return States(l) + Rows() * DS() + Region(); }
  // oneDNN training: the layer's final states (D, N, H) and cells, then
  // its workspace, 64-byte aligned within the reserve.
  int64_t DnnlIter(int64_t l) const { return States(l) + Rows() * DS(); }
  int64_t DnnlIterC(int64_t l) const { return DnnlIter(l) + D * N * H; }
  int64_t DnnlWorkspace(int64_t l) const { return (DnnlIterC(l) + D * N * H + 15) / 16 * 16; }
  // The last element says what the forward kept for the backward: the
  // loop's gates (1), oneDNN's workspace (2), or nothing (0; inference on
  // oneDNN).
  int64_t Flag() const { return L * layer_; }
  int64_t ReserveSize() const { return L * layer_ + 1; }

 private:
  int64_t weights_ = 0;  // elements of all weights (biases start here)
  int64_t dnnl_ = 0;     // elements oneDNN's training needs after the states
  int64_t layer_ = 0;    // reserve elements per layer
};

inline int RnnGates(int mode) {
  return mode == kLstm ? 4 : mode == kGru ? 3 : 1;
}
inline bool RnnHasCell(const NodeAttrs& attrs) {
  return RnnParams(attrs).mode == kLstm;
}

// The CPU kernels (rnn_cpu.cc; the GPU's are in rnn.cu). Forward inputs: data, parameters, state,
// [state_cell], [sequence_length]; outputs: out, hy, [cy], reserve.
// Backward inputs: dout, [dhy, [dcy]] (with state_outputs), the forward's
// inputs, reserve; outputs: ddata, dparameters, dstate, [dstate_cell].
void RnnForwardCpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out);
void RnnBackwardCpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out);

// The forward in inference on oneDNN (rnn_dnnl.cc), where it applies:
// float32, LSTM or a plain RNN, no sequence lengths, clip or projection, and
// oneDNN loaded. Writes every layer's outputs where the loop does (the
// reserve's state sequences) and hy (and cy) with their requests.
bool RnnDnnlInferenceApplies(const RNNParam& p, DType t);
// Training on oneDNN (same conditions, but for the dtype, which shape
// inference does not know): the elements a layer's region needs, 0 where
// it does not apply; the forward and the backward of one layer.
bool RnnDnnlTrainingApplies(const RNNParam& p);
int64_t RnnDnnlTrainingElements(const RnnGeom& g);
size_t RnnDnnlScratchBytes(const RnnGeom& g, bool backward, int threads);
void RnnDnnlTrainForward(const RnnGeom& g, int64_t l, const OpContext& ctx, void* scratch,
                         const float* layer_in, const float* w, const float* hx, const float* cx,
                         float* res);
// dy: the layer output's gradient; dhy, dcy: the final states' (or null);
// dx, dhx, dcx written; dw: the parameters' gradient, added to (dw_zero:
// it holds zeros, so the layer's weights' part may be written directly).
void RnnDnnlTrainBackward(const RnnGeom& g, int64_t l, const OpContext& ctx, void* scratch,
                          const float* layer_in, const float* w, const float* hx, const float* cx,
                          const float* res, const float* dy, const float* dhy, const float* dcy,
                          float* dx, float* dhx, float* dcx, float* dw, bool dw_zero);
void RnnDnnlInference(const RnnGeom& g, const OpContext& ctx, const float* x, const float* w,
                      const float* hx, const float* cx, float* res, float* hy_out, OpReqType hy_req,
                      float* cy_out, OpReqType cy_req);
// Forces the loop for float32 inference too (tests); returns the old value.
bool SetRnnForceLoop(bool on);

}  // namespace tessera::op
