// One time step of each RNN cell on one batch row, forward and backward: the
// pointwise part of the fused RNN op. The GEMMs around it (input projection
// for the whole sequence, the recurrent product per step) are in rnn_cpu.cc.
//
// Forward: `g` holds the row's pre-activation gates (x W^T + h U^T + biases;
// GRU: without U_n h + b_hn, which arrives in `hu`) and is overwritten with
// the gates after activation, which the backward reads back.
// Backward: `dh` (and `dc`) hold the gradient of the state after the step on
// entry and that of the state before it on exit, less the recurrent GEMM's
// part (dGh U), which the caller adds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/tensor/elemwise_math.h"

namespace tessera::op::rnn {

// Through tanh, whose float version is branch-free, so the loops below
// vectorise: sigmoid(x) = (1 + tanh(x / 2)) / 2.
template <typename T>
inline T Tanh(T x) {
  return math::tanh(x);
}
template <typename T>
inline T Sigmoid(T x) {
  return T(0.5) + T(0.5) * math::tanh(T(0.5) * x);
}

// The LSTM cell clip (lstm_state_clip_min/max); NaN becomes lo when
// clip_nan is set (cuDNN's "do not propagate NaN").
template <typename T>
struct CellClip {
  bool on = false, nan_to_lo = false;
  T lo = -std::numeric_limits<T>::infinity(), hi = std::numeric_limits<T>::infinity();
  T Apply(T c) const {
    if (!on) return c;
    if (std::isnan(c)) return nan_to_lo ? lo : c;
    return std::min(hi, std::max(lo, c));
  }
  // Whether the clip held c at a bound, so no gradient passes.
  bool Clipped(T c) const { return on && (c <= lo || c >= hi); }
};

// The cell loops take no clip: a clip is a second pass (ClipCells), so that
// the common loop stays branch-free and vectorises.
template <typename T>
void LstmForward(int64_t H, T* __restrict g, const T* __restrict c_prev, T* __restrict c,
                 T* __restrict h) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const T i = Sigmoid(g[j]), f = Sigmoid(g[H + j]);
    const T gg = Tanh(g[2 * H + j]), o = Sigmoid(g[3 * H + j]);
    const T cn = f * c_prev[j] + i * gg;
    g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
    c[j] = cn;
    h[j] = o * Tanh(cn);
  }
}

// Clips a step's cell state and recomputes h from it.
template <typename T>
void ClipCells(int64_t H, const T* g, T* c, T* h, const CellClip<T>& clip) {
  for (int64_t j = 0; j < H; ++j) {
    c[j] = clip.Apply(c[j]);
    h[j] = g[3 * H + j] * Tanh(c[j]);
  }
}

// kClip: no gradient passes through a cell that the clip held at a bound
// (a template parameter, so that the loop without a clip has no test).
template <bool kClip, typename T>
void LstmBackward(int64_t H, const T* __restrict g, const T* __restrict c_prev,
                  const T* __restrict c, const T* __restrict dy, T* __restrict dh, T* __restrict dc,
                  T* __restrict dg, const CellClip<T>& clip) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
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
}

// GRU, cuDNN's form: n = tanh(x_n + r * (U_n h + b_hn)), h' = (1 - z) n + z h.
template <typename T>
void GruForward(int64_t H, T* __restrict g, const T* __restrict hu, const T* __restrict h_prev,
                T* __restrict hn_out, T* __restrict h) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const T r = Sigmoid(g[j] + hu[j]), z = Sigmoid(g[H + j] + hu[H + j]);
    const T hn = hu[2 * H + j];
    const T n = Tanh(g[2 * H + j] + r * hn);
    g[j] = r, g[H + j] = z, g[2 * H + j] = n;
    hn_out[j] = hn;
    h[j] = (T(1) - z) * n + z * h_prev[j];
  }
}

// dgx: the gates' gradient as the input projection sees it; dgh: as the
// recurrent product sees it (the candidate's part scaled by r).
template <typename T>
void GruBackward(int64_t H, const T* __restrict g, const T* __restrict hn,
                 const T* __restrict h_prev, const T* __restrict dy, T* __restrict dh,
                 T* __restrict dgx, T* __restrict dgh) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
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
}

// Plain RNN: h' = act(g); the gate stores h'.
template <typename T>
void VanillaForward(int64_t H, bool relu, T* g, T* h) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const T v = relu ? std::max(T(0), g[j]) : Tanh(g[j]);
    g[j] = v;
    h[j] = v;
  }
}

template <typename T>
void VanillaBackward(int64_t H, bool relu, const T* g, const T* dy, T* dh, T* dg) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const T dht = dh[j] + dy[j], v = g[j];
    dg[j] = relu ? (v > T(0) ? dht : T(0)) : dht * (T(1) - v * v);
    dh[j] = T(0);
  }
}

}  // namespace tessera::op::rnn
