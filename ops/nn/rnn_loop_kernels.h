// The fused RNN loop's element kernels (rnn_loop-inl.h), for either device:
// the cells of a time step (rnn_cells.h) over its N x H units, forward and
// backward, and the small passes around them (biases, copies, the output,
// dropout masks, the projection's carried rows). Row-shaped work runs
// through LaunchRows: a row per CPU thread, so a row's loop vectorises, and
// a unit per GPU thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/op/kernel_launch.h"
#include "engine/resource/random_stream.h"
#include "ops/nn/rnn-inl.h"
#include "ops/nn/rnn_cells.h"

// The cells' loops over a row vectorise on the CPU; the GPU runs one unit
// per thread.
#if defined(__CUDACC__)
#define TS_RNN_SIMD
#else
#define TS_RNN_SIMD _Pragma("omp simd")
#endif

namespace tessera::op::rnn {

// Whether row n still runs at step t (no lengths: every row does).
TS_XINLINE bool Live(const int64_t* len, int64_t n, int64_t t) {
  return len == nullptr || t < len[n];
}

// ------------------------------------------------------ element kernels

// A rows x cols block of units (a step's N x H cells, or a matrix's
// elements): Body::Row(r, j0, j1, cols, args...) does units [j0, j1) of row
// r. The GPU's thread i does unit i; the CPU's threads take whole rows (a
// row's loop vectorises), shared from a few thousand units up, weighted by
// what one costs (a cell: about a transcendental function per gate).
template <typename Body>
struct UnitElements {
  template <typename... A>
  TS_XINLINE static void Map(int64_t i, int64_t cols, A... a) {
    const int64_t r = i / cols, j = i % cols;
    Body::Row(r, j, j + 1, cols, a...);
  }
};

template <typename xpu, typename Body, typename... A>
void LaunchRows(const RunContext& rctx, int64_t rows, int64_t cols, int64_t weight, A... a) {
  if (rows * cols == 0) return;
  if constexpr (xpu::kDevice == DeviceType::kCPU) {
    [[maybe_unused]] const int threads =
        rows > 1 && rows * cols * weight >= 8192 ? std::max(1, rctx.omp_threads) : 1;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (int64_t r = 0; r < rows; ++r) Body::Row(r, 0, cols, cols, a...);
  } else {
    Kernel<UnitElements<Body>, xpu>::Launch(rctx, rows * cols, cols, a...);
  }
}

// One forward step's rows: row n of each at its pointer + n * its stride.
template <typename T>
struct StepRows {
  T* g;             // gates (ld G*H)
  const T* hu;      // GRU: U h without bias (ld G*H)
  const T* bh;      // GRU: b_h2h
  const T* h_prev;  // the state before the step
  int64_t ld_prev;
  const T* c_prev;  // LSTM: the cell before (ld H)
  T* c;             // LSTM: the cell after; GRU: U_n h + b_hn (ld H)
  T* h;             // h after: the state row, or with a projection h before it
  int64_t ld_h;
  T* hs;  // the state sequence at this step (a carried row's target)
  int64_t ld_hs;
  T* pre;  // with a projection: h before it (ld H), else null
  const int64_t* len;
  int64_t t;
  int64_t S;  // the state's width
  int mode;
};

struct CellForward {
  template <typename T>
  TS_XINLINE static void Row(int64_t n, int64_t j0, int64_t j1, int64_t H, StepRows<T> s,
                             CellClip<AccType<T>> clip) {
    if (!Live(s.len, n, s.t)) return Carry(n, j0, j1, H, s);
    const int64_t GH = (s.mode == kLstm ? 4 : s.mode == kGru ? 3 : 1) * H;
    T* g = s.g + n * GH;
    T* h = s.h + n * s.ld_h;
    if (s.mode == kLstm) {
      const T* cp = s.c_prev + n * H;
      T* c = s.c + n * H;
      TS_RNN_SIMD
      for (int64_t j = j0; j < j1; ++j) LstmForwardAt(H, j, g, cp, c, h);
      if (clip.on)
        for (int64_t j = j0; j < j1; ++j) ClipCellAt(H, j, g, c, h, clip);
    } else if (s.mode == kGru) {
      const T* hu = s.hu + n * GH;
      const T* hp = s.h_prev + n * s.ld_prev;
      T* hn = s.c + n * H;
      TS_RNN_SIMD
      for (int64_t j = j0; j < j1; ++j) GruForwardAt(H, j, g, hu, s.bh, hp, hn, h);
    } else {
      const bool relu = s.mode == kRnnRelu;
      TS_RNN_SIMD
      for (int64_t j = j0; j < j1; ++j) VanillaForwardAt(j, relu, g, h);
    }
  }

  // Past the row's end: the state carries over; h before the projection is
  // zero, so it has no part in the projection's gradient.
  template <typename T>
  TS_XINLINE static void Carry(int64_t n, int64_t j0, int64_t j1, int64_t H, const StepRows<T>& s) {
    const T* hp = s.h_prev + n * s.ld_prev;
    T* hs = s.hs + n * s.ld_hs;
    for (int64_t j = j0; j < j1; ++j) {
      if (j < s.S) hs[j] = hp[j];
      if (s.pre) s.pre[n * H + j] = T(0);
      if (s.mode == kLstm) s.c[n * H + j] = s.c_prev[n * H + j];
    }
  }
};

// One backward step's rows.
template <typename T>
struct BackRows {
  const T* g;       // gates after activation (ld G*H)
  const T* c_prev;  // LSTM: the cell before (ld H)
  const T* c;       // LSTM: the cell after; GRU: U_n h + b_hn (ld H)
  const T* h_prev;  // GRU: the state before
  int64_t ld_prev;
  const T* dy;  // the gradient of h after the step from above
  int64_t ld_dy;
  T* dh;   // the state's gradient (ld H)
  T* dc;   // LSTM: the cell's (ld H)
  T* dgx;  // the gates' gradients (ld G*H)
  T* dgh;  // GRU: as the recurrent product sees them; else dgx
  const int64_t* len;
  int64_t t;
  int mode;
};

struct CellBackward {
  template <typename T>
  TS_XINLINE static void Row(int64_t n, int64_t j0, int64_t j1, int64_t H, BackRows<T> s,
                             CellClip<AccType<T>> clip) {
    const int G = s.mode == kLstm ? 4 : s.mode == kGru ? 3 : 1;
    T* gx = s.dgx + n * G * H;
    T* gh = s.dgh + n * G * H;
    if (!Live(s.len, n, s.t)) {  // a carried state: its gradient passes through
      for (int64_t j = j0; j < j1; ++j)
        for (int k = 0; k < G; ++k) gx[k * H + j] = gh[k * H + j] = T(0);
      return;
    }
    const T* g = s.g + n * G * H;
    const T* dy = s.dy + n * s.ld_dy;
    T* dh = s.dh + n * H;
    if (s.mode == kLstm) {
      const T* cp = s.c_prev + n * H;
      const T* c = s.c + n * H;
      T* dc = s.dc + n * H;
      if (clip.on) {
        for (int64_t j = j0; j < j1; ++j)
          LstmBackwardAt<true>(H, j, g, cp, c, dy, dh, dc, gx, clip);
      } else {
        TS_RNN_SIMD
        for (int64_t j = j0; j < j1; ++j)
          LstmBackwardAt<false>(H, j, g, cp, c, dy, dh, dc, gx, clip);
      }
    } else if (s.mode == kGru) {
      const T* hn = s.c + n * H;
      const T* hp = s.h_prev + n * s.ld_prev;
      TS_RNN_SIMD
      for (int64_t j = j0; j < j1; ++j) GruBackwardAt(H, j, g, hn, hp, dy, dh, gx, gh);
    } else {
      const bool relu = s.mode == kRnnRelu;
      TS_RNN_SIMD
      for (int64_t j = j0; j < j1; ++j) VanillaBackwardAt(j, relu, g, dy, dh, gx);
    }
  }
};

// dst (rows x cols, row stride ldd) (+)= src (row stride ld), by request.
struct StoreRowsBody {
  template <typename T>
  TS_XINLINE static void Row(int64_t r, int64_t j0, int64_t j1, int64_t, const T* src, int64_t ld,
                             T* dst, int64_t ldd, OpReqType req) {
    for (int64_t j = j0; j < j1; ++j) AssignReqAt(dst[r * ldd + j], src[r * ld + j], req);
  }
};

struct FillKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* dst, T v) {
    dst[i] = v;
  }
};

// Each row of `out` (ld cols) += bx (+ bh when given), summed bx + bh first.
struct AddGateBiasBody {
  template <typename T>
  TS_XINLINE static void Row(int64_t r, int64_t j0, int64_t j1, int64_t cols, T* out, const T* bx,
                             const T* bh) {
    using A = AccType<T>;
    T* row = out + r * cols;
    if (bh) {
      TS_RNN_SIMD
      for (int64_t j = j0; j < j1; ++j) row[j] = T(A(row[j]) + (A(bx[j]) + A(bh[j])));
    } else {
      TS_RNN_SIMD
      for (int64_t j = j0; j < j1; ++j) row[j] = T(A(row[j]) + A(bx[j]));
    }
  }
};

// The op's output from the top layer's states, row r = t * N + n: zero
// past each row's end.
struct OutputBody {
  template <typename T>
  TS_XINLINE static void Row(int64_t r, int64_t j0, int64_t j1, int64_t cols, int64_t N,
                             const T* top, T* y, const int64_t* len, OpReqType req) {
    const bool live = Live(len, r % N, r / N);
    for (int64_t j = j0; j < j1; ++j)
      AssignReqAt(y[r * cols + j], live ? top[r * cols + j] : T(0), req);
  }
};

// A fresh dropout mask (kept: 1 / keep, else 0) and the input it makes.
struct DropoutMaskKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, const T* hs, T* mask, T* x, resource::RandomStream s,
                             uint64_t base, float keep, T scale) {
    const bool kept = resource::RandomUniformFloat(s, base + static_cast<uint64_t>(i)) < keep;
    mask[i] = kept ? scale : T(0);
    x[i] = T(AccType<T>(hs[i]) * AccType<T>(mask[i]));
  }
};

// out = a * mask (out may be a).
struct MaskProductKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* a, const T* mask) {
    out[i] = T(AccType<T>(a[i]) * AccType<T>(mask[i]));
  }
};

// Projection, forward: the rows past their end keep the state (P wide).
struct ProjectCarryKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, int64_t P, const int64_t* len, int64_t t, T* r,
                             int64_t ld_r, const T* hp, int64_t ld_hp) {
    const int64_t n = i / P, j = i % P;
    if (!Live(len, n, t)) r[n * ld_r + j] = hp[n * ld_hp + j];
  }
};

// Projection, backward: the gradient of r at step t, from the next step
// (dh) and from above (dy, live rows only).
struct ProjectGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, int64_t P, const int64_t* len, int64_t t, T* dr,
                             const T* dh, const T* dy, int64_t ld_dy) {
    const int64_t n = i / P, j = i % P;
    using A = AccType<T>;
    dr[i] = T(A(dh[i]) + (Live(len, n, t) ? A(dy[n * ld_dy + j]) : A(0)));
  }
};

// Projection, backward: a carried row passes its gradient on.
struct ProjectCarryGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, int64_t P, const int64_t* len, int64_t t, const T* dr,
                             T* dh) {
    if (!Live(len, i / P, t)) dh[i] = dr[i];
  }
};

}  // namespace tessera::op::rnn
