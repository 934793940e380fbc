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

#include "engine/base/dtype.h"
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

// The LSTM cell clip (lstm_state_clip_min/max) in the arithmetic type; NaN
// becomes lo when clip_nan is set (cuDNN's "do not propagate NaN"). Built
// on the host (the bounds start infinite there) and passed to kernels by
// value.
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

// Each function reads its elements of type T into A = AccType<T> (float
// for the 16-bit floats), computes there and writes T back: for float and
// double nothing changes.

// Unit j of an LSTM step: gates i f g o at g[j], g[H + j], ...
template <typename T, typename A = AccType<T>>
TS_XINLINE void LstmForwardAt(int64_t H, int64_t j, T* g, const T* c_prev, T* c, T* h) {
  const A i = Sigmoid(A(g[j])), f = Sigmoid(A(g[H + j]));
  const A gg = Tanh(A(g[2 * H + j])), o = Sigmoid(A(g[3 * H + j]));
  const A cn = f * A(c_prev[j]) + i * gg;
  g[j] = T(i), g[H + j] = T(f), g[2 * H + j] = T(gg), g[3 * H + j] = T(o);
  c[j] = T(cn);
  h[j] = T(o * Tanh(cn));
}

// Clips a unit's cell state and recomputes h from it: a second pass, so
// that the common loop stays branch-free and vectorises.
template <typename T, typename A = AccType<T>>
TS_XINLINE void ClipCellAt(int64_t H, int64_t j, const T* g, T* c, T* h, const CellClip<A>& clip) {
  const A cj = clip.Apply(A(c[j]));
  c[j] = T(cj);
  h[j] = T(A(g[3 * H + j]) * Tanh(cj));
}

// kClip: no gradient passes through a cell that the clip held at a bound
// (a template parameter, so that the loop without a clip has no test).
template <bool kClip, typename T, typename A = AccType<T>>
TS_XINLINE void LstmBackwardAt(int64_t H, int64_t j, const T* g, const T* c_prev, const T* c,
                               const T* dy, T* dh, T* dc, T* dg, const CellClip<A>& clip) {
  const A i = A(g[j]), f = A(g[H + j]), gg = A(g[2 * H + j]), o = A(g[3 * H + j]);
  const A dht = A(dh[j]) + A(dy[j]);
  const A cj = A(c[j]);
  const A tc = Tanh(cj);
  A dct = A(dc[j]) + dht * o * (A(1) - tc * tc);
  if constexpr (kClip) dct = clip.Clipped(cj) ? A(0) : dct;
  dg[j] = T(dct * gg * i * (A(1) - i));
  dg[H + j] = T(dct * A(c_prev[j]) * f * (A(1) - f));
  dg[2 * H + j] = T(dct * i * (A(1) - gg * gg));
  dg[3 * H + j] = T(dht * tc * o * (A(1) - o));
  dc[j] = T(dct * f);
  dh[j] = T(0);
}

// GRU, cuDNN's form: n = tanh(x_n + r * (U_n h + b_hn)), h' = (1 - z) n + z h.
// hu: U h without its bias, bh: b_h2h (added here, in the order the sum
// U h + b_h2h would take); hn_out keeps U_n h + b_hn for the backward.
template <typename T, typename A = AccType<T>>
TS_XINLINE void GruForwardAt(int64_t H, int64_t j, T* g, const T* hu, const T* bh, const T* h_prev,
                             T* hn_out, T* h) {
  const A hr = A(hu[j]) + A(bh[j]), hz = A(hu[H + j]) + A(bh[H + j]);
  const A r = Sigmoid(A(g[j]) + hr), z = Sigmoid(A(g[H + j]) + hz);
  const A hn = A(hu[2 * H + j]) + A(bh[2 * H + j]);
  const A n = Tanh(A(g[2 * H + j]) + r * hn);
  g[j] = T(r), g[H + j] = T(z), g[2 * H + j] = T(n);
  hn_out[j] = T(hn);
  h[j] = T((A(1) - z) * n + z * A(h_prev[j]));
}

// dgx: the gates' gradient as the input projection sees it; dgh: as the
// recurrent product sees it (the candidate's part scaled by r).
template <typename T, typename A = AccType<T>>
TS_XINLINE void GruBackwardAt(int64_t H, int64_t j, const T* g, const T* hn, const T* h_prev,
                              const T* dy, T* dh, T* dgx, T* dgh) {
  const A r = A(g[j]), z = A(g[H + j]), n = A(g[2 * H + j]);
  const A dht = A(dh[j]) + A(dy[j]);
  const A dn = dht * (A(1) - z) * (A(1) - n * n);
  const A dz = dht * (A(h_prev[j]) - n) * z * (A(1) - z);
  const A dr = dn * A(hn[j]) * r * (A(1) - r);
  dgx[j] = dgh[j] = T(dr);
  dgx[H + j] = dgh[H + j] = T(dz);
  dgx[2 * H + j] = T(dn);
  dgh[2 * H + j] = T(dn * r);
  dh[j] = T(dht * z);
}

// Plain RNN: h' = act(g); the gate stores h'.
template <typename T, typename A = AccType<T>>
TS_XINLINE void VanillaForwardAt(int64_t j, bool relu, T* g, T* h) {
  const A x = A(g[j]);
  const A v = relu ? (x > A(0) ? x : A(0)) : Tanh(x);
  g[j] = T(v);
  h[j] = T(v);
}

template <typename T, typename A = AccType<T>>
TS_XINLINE void VanillaBackwardAt(int64_t j, bool relu, const T* g, const T* dy, T* dh, T* dg) {
  const A dht = A(dh[j]) + A(dy[j]), v = A(g[j]);
  dg[j] = T(relu ? (v > A(0) ? dht : A(0)) : dht * (A(1) - v * v));
  dh[j] = T(0);
}

}  // namespace tessera::op::rnn
