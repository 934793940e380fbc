// One time step of each RNN cell on one unit j of one batch row, forward and
// backward: the pointwise part of the fused RNN op, device-safe, so that the
// CPU's row loops and the GPU's threads (rnn_loop-inl.h) run the same
// arithmetic. The GEMMs around it (input projection for the whole sequence,
// the recurrent product per step) are the loop's.
//
// Forward: `g` is the row's pre-activation gates (x W^T + h U^T + biases;
// GRU: without U_n h + b_hn, which arrives in `hu`) and is overwritten with
// the gates after activation, which the backward reads back.
// Backward: `dh` (and `dc`) hold the gradient of the state after the step on
// entry and that of the state before it on exit, less the recurrent GEMM's
// part (dGh U), which the caller adds.
#pragma once

#include <cstdint>

#include "ops/tensor/elemwise_math.h"

namespace tessera::op::rnn {

// Through tanh, whose float version is branch-free, so the CPU's loops
// vectorise: sigmoid(x) = (1 + tanh(x / 2)) / 2.
template <typename T>
TS_XINLINE T Tanh(T x) {
  return math::tanh(x);
}
template <typename T>
TS_XINLINE T Sigmoid(T x) {
  return T(0.5) + T(0.5) * math::tanh(T(0.5) * x);
}

// The LSTM cell clip (lstm_state_clip_min/max); NaN becomes lo when
// clip_nan is set (cuDNN's "do not propagate NaN"). Built on the host
// (the bounds start infinite there) and passed to kernels by value.
template <typename T>
struct CellClip {
  bool on = false, nan_to_lo = false;
  T lo = T(0), hi = T(0);
  TS_XINLINE T Apply(T c) const {
    if (!on) return c;
    if (c != c) return nan_to_lo ? lo : c;
    return c < lo ? lo : (c > hi ? hi : c);
  }
  // Whether the clip held c at a bound, so no gradient passes.
  TS_XINLINE bool Clipped(T c) const { return on && (c <= lo || c >= hi); }
};

// Unit j of an LSTM step: gates i f g o at g[j], g[H + j], ...
template <typename T>
TS_XINLINE void LstmForwardAt(int64_t H, int64_t j, T* g, const T* c_prev, T* c, T* h) {
  const T i = Sigmoid(g[j]), f = Sigmoid(g[H + j]);
  const T gg = Tanh(g[2 * H + j]), o = Sigmoid(g[3 * H + j]);
  const T cn = f * c_prev[j] + i * gg;
  g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
  c[j] = cn;
  h[j] = o * Tanh(cn);
}

// Clips a unit's cell state and recomputes h from it: a second pass, so
// that the common loop stays branch-free and vectorises.
template <typename T>
TS_XINLINE void ClipCellAt(int64_t H, int64_t j, const T* g, T* c, T* h, const CellClip<T>& clip) {
  c[j] = clip.Apply(c[j]);
  h[j] = g[3 * H + j] * Tanh(c[j]);
}

// kClip: no gradient passes through a cell that the clip held at a bound
// (a template parameter, so that the loop without a clip has no test).
template <bool kClip, typename T>
TS_XINLINE void LstmBackwardAt(int64_t H, int64_t j, const T* g, const T* c_prev, const T* c,
                               const T* dy, T* dh, T* dc, T* dg, const CellClip<T>& clip) {
  const T i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
  const T dht = dh[j] + dy[j];
  const T tc = Tanh(c[j]);
  T dct = dc[j] + dht * o * (T(1) - tc * tc);
  if constexpr (kClip) dct = clip.Clipped(c[j]) ? T(0) : dct;
  dg[j] = dct * gg * i * (T(1) - i);
  dg[H + j] = dct * c_prev[j] * f * (T(1) - f);
  dg[2 * H + j] = dct * i * (T(1) - gg * gg);
  dg[3 * H + j] = dht * tc * o * (T(1) - o);
  dc[j] = dct * f;
  dh[j] = T(0);
}

// GRU, cuDNN's form: n = tanh(x_n + r * (U_n h + b_hn)), h' = (1 - z) n + z h.
// hu: U h without its bias, bh: b_h2h (added here, in the order the sum
// U h + b_h2h would take); hn_out keeps U_n h + b_hn for the backward.
template <typename T>
TS_XINLINE void GruForwardAt(int64_t H, int64_t j, T* g, const T* hu, const T* bh, const T* h_prev,
                             T* hn_out, T* h) {
  const T hr = hu[j] + bh[j], hz = hu[H + j] + bh[H + j];
  const T r = Sigmoid(g[j] + hr), z = Sigmoid(g[H + j] + hz);
  const T hn = hu[2 * H + j] + bh[2 * H + j];
  const T n = Tanh(g[2 * H + j] + r * hn);
  g[j] = r, g[H + j] = z, g[2 * H + j] = n;
  hn_out[j] = hn;
  h[j] = (T(1) - z) * n + z * h_prev[j];
}

// dgx: the gates' gradient as the input projection sees it; dgh: as the
// recurrent product sees it (the candidate's part scaled by r).
template <typename T>
TS_XINLINE void GruBackwardAt(int64_t H, int64_t j, const T* g, const T* hn, const T* h_prev,
                              const T* dy, T* dh, T* dgx, T* dgh) {
  const T r = g[j], z = g[H + j], n = g[2 * H + j];
  const T dht = dh[j] + dy[j];
  const T dn = dht * (T(1) - z) * (T(1) - n * n);
  const T dz = dht * (h_prev[j] - n) * z * (T(1) - z);
  const T dr = dn * hn[j] * r * (T(1) - r);
  dgx[j] = dgh[j] = dr;
  dgx[H + j] = dgh[H + j] = dz;
  dgx[2 * H + j] = dn;
  dgh[2 * H + j] = dn * r;
  dh[j] = dht * z;
}

// Plain RNN: h' = act(g); the gate stores h'.
template <typename T>
TS_XINLINE void VanillaForwardAt(int64_t j, bool relu, T* g, T* h) {
  const T v = relu ? (g[j] > T(0) ? g[j] : T(0)) : Tanh(g[j]);
  g[j] = v;
  h[j] = v;
}

template <typename T>
TS_XINLINE void VanillaBackwardAt(int64_t j, bool relu, const T* g, const T* dy, T* dh, T* dg) {
  const T dht = dh[j] + dy[j], v = g[j];
  dg[j] = relu ? (v > T(0) ? dht : T(0)) : dht * (T(1) - v * v);
  dh[j] = T(0);
}

}  // namespace tessera::op::rnn
