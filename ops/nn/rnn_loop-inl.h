// The fused RNN op's own loop, written once for either device: per layer and
// direction, one GEMM projects the whole input sequence onto the gates, then
// each time step adds the recurrent product (one GEMM of N rows) and applies
// the cell pointwise (rnn_cells.h) as one kernel over the step's N x H
// units. The backward walks the steps in reverse the same way and leaves the
// weight gradients to three GEMMs over the whole sequence. Layouts are in
// rnn-inl.h. The device supplies its GEMM and column sums (RnnSteps<xpu>:
// the BLAS in rnn_cpu.cc, cuBLAS in rnn.cu); everything else is the element
// kernels of rnn_loop_kernels.h.
//
// Sequence lengths: a row at or past its length keeps its state unchanged
// and outputs zeros, so the last state is that of its last real step and
// the reverse direction starts at its last real step, as in MXNet. The
// lengths are read on the host (they are checked there) and handed to the
// kernels as int64 in the op's temp space; no lengths: a null pointer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/nn/rnn-inl.h"
#include "ops/nn/rnn_loop_kernels.h"
#include "ops/tensor/host_values.h"

namespace tessera::op {

// What the loop needs of the device besides element kernels, alpha 1 and
// row-major throughout: the device's GemmSteps (nn_common.h; a TU running the
// loop includes gemm_steps.h):
//   Gemm(rctx, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate):
//     c = op(a) op(b), or c += op(a) op(b) when accumulate;
//   SumRows(rctx, x, rows, n, out, accumulate): out (+)= x's column sums.
template <typename xpu>
struct RnnSteps : GemmSteps<xpu, RnnSteps<xpu>> {
  static constexpr const char* kName = "RNN";
};

namespace rnn {

// ------------------------------------------------------ views

// A state sequence or initial state: row n of step t at ptr + (t * N + n) * ld.
template <typename T>
struct StateView {
  T* ptr = nullptr;
  int64_t ld = 0;
  T* At(int64_t t, int64_t N) const { return ptr + t * N * ld; }
};

// The forward's and backward's view of one (layer, direction).
template <typename T>
struct DirView {
  const T *W, *U, *R;  // W_i2h (G*H, I_l), W_h2h (G*H, S), W_h2r (P, H) or null
  const T *bx, *bh;
  T* gates;                // (T, N, G*H) after activation
  T* extra;                // LSTM cell / GRU U_n h + b_hn sequence, (T, N, H)
  T* pre;                  // with a projection: h before it, (T, N, H)
  StateView<T> hs;         // this direction's slice of H_l, ld D*S
  StateView<T> h0, c0;     // initial state (ld S) and cell (ld H)
  int64_t first_step = 0;  // the step processed first (0 forward, T-1 reverse)
  int64_t step = 1;        // +1 forward, -1 reverse

  // The state before step t: the initial state for the first step
  // processed, else the state after the previous one.
  StateView<T> Prev(StateView<T> seq, StateView<T> init, int64_t t, int64_t N) const {
    if (t == first_step) return init;
    return {seq.At(t - step, N), seq.ld};
  }
};

template <typename T>
DirView<T> MakeDirView(const RnnGeom& g, int64_t l, int64_t d, const T* w, T* res, const T* hx,
                       const T* cx) {
  DirView<T> v;
  v.W = w + g.WeightI2H(l, d);
  v.U = w + g.WeightH2H(l, d);
  v.R = g.P > 0 ? w + g.WeightH2R(l, d) : nullptr;
  v.bx = w + g.BiasI2H(l, d);
  v.bh = w + g.BiasH2H(l, d);
  v.gates = res + g.Gates(l, d);
  v.extra = res + g.Extra(l, d);
  v.pre = g.P > 0 ? res + g.PreProjection(l, d) : nullptr;
  v.hs = {res + g.States(l) + d * g.S(), g.DS()};
  const int64_t s = (l * g.D + d) * g.N;
  v.h0 = {const_cast<T*>(hx) + s * g.S(), g.S()};
  v.c0 = {cx ? const_cast<T*>(cx) + s * g.H : nullptr, g.H};
  v.first_step = d == 0 ? 0 : g.T - 1;
  v.step = d == 0 ? 1 : -1;
  return v;
}

template <typename T>
CellClip<T> MakeClip(const RNNParam& p) {
  CellClip<T> c;
  c.on = p.lstm_state_clip_min.has_value() || p.lstm_state_clip_max.has_value();
  c.lo = p.lstm_state_clip_min ? static_cast<T>(*p.lstm_state_clip_min)
                               : -std::numeric_limits<T>::infinity();
  c.hi = p.lstm_state_clip_max ? static_cast<T>(*p.lstm_state_clip_max)
                               : std::numeric_limits<T>::infinity();
  c.nan_to_lo = p.lstm_state_clip_nan;
  return c;
}

// ------------------------------------------------------ lengths

// Each row's length, read and checked on the host (empty: no lengths).
template <typename xpu>
std::vector<int64_t> ReadLengths(const NodeAttrs& attrs, const RunContext& rctx, const RnnGeom& g,
                                 const TBlob* lengths) {
  if (!lengths) return {};
  const std::vector<double> v = HostValues<xpu>(rctx, *lengths);
  std::vector<int64_t> len(v.size());
  for (size_t n = 0; n < v.size(); ++n) {
    TS_CHECK(v[n] >= 0 && v[n] <= static_cast<double>(g.T) && v[n] == static_cast<int64_t>(v[n]))
        << OpLabel(attrs) << ": sequence_length[" << n << "] = " << v[n]
        << " is not a whole number in [0, " << g.T << "] (the sequence has " << g.T << " steps)";
    len[n] = static_cast<int64_t>(v[n]);
  }
  return len;
}

// Elements of T that hold N int64 lengths at the start of the op's scratch.
template <typename T>
int64_t LengthSlots(const std::vector<int64_t>& len) {
  return static_cast<int64_t>((len.size() * sizeof(int64_t) + sizeof(T) - 1) / sizeof(T));
}

// The lengths where the kernels read them: copied to the scratch's start.
template <typename xpu, typename T>
const int64_t* LengthsForKernels(const OpContext& ctx, const std::vector<int64_t>& len,
                                 T* scratch) {
  if (len.empty()) return nullptr;
  if constexpr (xpu::kDevice == DeviceType::kCPU) return len.data();
  CopyHostToSpace<xpu>(ctx, len.data(), len.size() * sizeof(int64_t), scratch);
  return reinterpret_cast<const int64_t*>(scratch);
}

// ------------------------------------------------------ shared steps

template <typename xpu, typename K, typename... A>
void Launch(const OpContext& ctx, int64_t n, A... a) {
  if (n > 0) Kernel<K, xpu>::Launch(ctx.run_ctx, n, a...);
}

// dst[0, n) = v: the CPU's fill is the library's (a memset for zeros).
template <typename xpu, typename T>
void Fill(const OpContext& ctx, int64_t n, T* dst, T v) {
  if constexpr (xpu::kDevice == DeviceType::kCPU)
    std::fill_n(dst, n, v);
  else
    Launch<xpu, FillKernel>(ctx, n, dst, v);
}

template <typename xpu, typename T>
void StoreRows(const OpContext& ctx, const T* src, int64_t ld, int64_t rows, int64_t cols, T* dst,
               int64_t ldd, OpReqType req) {
  if (req != kNullOp)
    LaunchRows<xpu, StoreRowsBody>(ctx.run_ctx, rows, cols, 1, src, ld, dst, ldd, req);
}

// out: the top layer's states, zero past each row's length.
template <typename xpu, typename T>
void WriteOutput(const OpContext& ctx, const RnnGeom& g, const int64_t* len, const T* top, T* y,
                 OpReqType req) {
  if (req != kNullOp)
    LaunchRows<xpu, OutputBody>(ctx.run_ctx, g.Rows(), g.DS(), 1, g.N, top, y, len, req);
}

// The next layer's input: H_l times a fresh dropout mask in training; the
// mask is all ones otherwise, so a backward after it stays correct.
template <typename xpu, typename T>
const T* DropoutBetween(const RNNParam& p, const RnnGeom& g, const OpContext& ctx, int64_t l,
                        T* res, T* xbuf) {
  const T* hs = res + g.States(l);
  if (!g.HasMask(l)) return hs;
  T* mask = res + g.Mask(l);
  const int64_t n = g.Rows() * g.DS();
  if (!ctx.is_train) {
    Fill<xpu>(ctx, n, mask, T(1));
    return hs;
  }
  const float keep = 1.f - p.p;
  using A = AccType<T>;
  const T scale = keep > 0 ? T(A(1) / static_cast<A>(keep)) : T(0);
  Launch<xpu, DropoutMaskKernel>(ctx, n, hs, mask, xbuf, ctx.requested.at(0).get_random(),
                                 static_cast<uint64_t>(g.Mask(l)), keep, scale);
  return xbuf;
}

// Layer l's input as its forward read it: the data, or the layer below's
// outputs times their dropout mask (recomputed into xbuf).
template <typename xpu, typename T>
const T* LayerInputOf(const OpContext& ctx, const RnnGeom& g, int64_t l, const T* x, const T* res,
                      T* xbuf) {
  if (l == 0) return x;
  const T* below = res + g.States(l - 1);
  if (!g.HasMask(l - 1)) return below;
  Launch<xpu, MaskProductKernel>(ctx, g.Rows() * g.DS(), xbuf, below, res + g.Mask(l - 1));
  return xbuf;
}

// The gradient of layer l's input, made the gradient of the outputs below
// it: times the dropout mask between them.
template <typename xpu, typename T>
void ThroughDropout(const OpContext& ctx, const RnnGeom& g, int64_t l, const T* res, T* dx) {
  if (g.HasMask(l - 1))
    Launch<xpu, MaskProductKernel>(ctx, g.Rows() * g.DS(), dx, dx, res + g.Mask(l - 1));
}

// ------------------------------------------------------ forward

// What both passes hold: the op's parameters and geometry, its context,
// the lengths on the device (or null), and the device's products.
template <typename xpu, typename T>
struct LoopPass {
  const RNNParam& p;
  const RnnGeom& g;
  const OpContext& ctx;
  const int64_t* len;

  void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
            int64_t ldb, T* c, int64_t ldc, bool accumulate) const {
    RnnSteps<xpu>::Gemm(ctx.run_ctx, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  }
};

template <typename xpu, typename T>
struct Forward : LoopPass<xpu, T> {
  using LoopPass<xpu, T>::p, LoopPass<xpu, T>::g, LoopPass<xpu, T>::ctx, LoopPass<xpu, T>::len,
      LoopPass<xpu, T>::Gemm;

  // gates = x W^T + b_i2h (+ b_h2h but for the GRU, which adds it to U h).
  void ProjectInput(const DirView<T>& v, const T* x, int64_t in) const {
    Gemm(false, true, g.Rows(), g.GH(), in, x, in, v.W, in, v.gates, g.GH(), false);
    LaunchRows<xpu, AddGateBiasBody>(ctx.run_ctx, g.Rows(), g.GH(), 1, v.gates, v.bx,
                                     g.mode != kGru ? v.bh : nullptr);
  }

  void Step(const DirView<T>& v, int64_t t, T* hu, const CellClip<AccType<T>>& clip) const {
    const StateView<T> hp = v.Prev(v.hs, v.h0, t, g.N);
    const StateView<T> cp = v.Prev({v.extra, g.H}, v.c0, t, g.N);
    T* gt = v.gates + t * g.N * g.GH();
    const int64_t S = g.S();
    if (g.mode == kGru)
      Gemm(false, true, g.N, g.GH(), S, hp.ptr, hp.ld, v.U, S, hu, g.GH(), false);
    else
      Gemm(false, true, g.N, g.GH(), S, hp.ptr, hp.ld, v.U, S, gt, g.GH(), true);
    StepRows<T> s;
    s.g = gt;
    s.hu = hu;
    s.bh = v.bh;
    s.h_prev = hp.ptr;
    s.ld_prev = hp.ld;
    s.c_prev = cp.ptr;
    s.c = v.extra + t * g.N * g.H;
    s.pre = v.pre ? v.pre + t * g.N * g.H : nullptr;
    s.hs = v.hs.At(t, g.N);
    s.ld_hs = v.hs.ld;
    s.h = s.pre ? s.pre : s.hs;
    s.ld_h = s.pre ? g.H : s.ld_hs;
    s.len = len;
    s.t = t;
    s.S = S;
    s.mode = g.mode;
    LaunchRows<xpu, CellForward>(ctx.run_ctx, g.N, g.H, g.G, s, clip);
    if (v.pre) Project(v, t, hp);
  }

  // r = h W_h2r^T for the step; the rows past their length keep the state.
  void Project(const DirView<T>& v, int64_t t, StateView<T> hp) const {
    T* r = v.hs.At(t, g.N);
    Gemm(false, true, g.N, g.P, g.H, v.pre + t * g.N * g.H, g.H, v.R, g.H, r, v.hs.ld, false);
    if (len)
      Launch<xpu, ProjectCarryKernel>(ctx, g.N * g.P, g.P, len, t, r, v.hs.ld, hp.ptr, hp.ld);
  }

  void Direction(const DirView<T>& v, const T* x, int64_t in, T* hu) const {
    ProjectInput(v, x, in);
    const CellClip<AccType<T>> clip = MakeClip<AccType<T>>(p);
    for (int64_t s = 0; s < g.T; ++s) Step(v, v.first_step + s * v.step, hu, clip);
  }
};

// The loop's forward (inputs and outputs as the op's); every layer's
// gates, cells and states go to the reserve, whose flag says so (1).
template <typename xpu, typename T>
void LoopForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RNNParam& p = RnnParams(attrs);
  const RnnGeom g(p, in[0].shape()[0], in[0].shape()[1], in[0].shape()[2]);
  const bool lstm = g.mode == kLstm;
  const TBlob* lengths = p.use_sequence_length ? &in[lstm ? 4 : 3] : nullptr;
  const std::vector<int64_t> host_len = ReadLengths<xpu>(attrs, ctx.run_ctx, g, lengths);
  const T* x = in[0].dptr<T>();
  const T* w = in[1].dptr<T>();
  const T* hx = in[2].dptr<T>();
  const T* cx = lstm ? in[3].dptr<T>() : nullptr;
  T* res = out.back().dptr<T>();
  TS_DCHECK(static_cast<int64_t>(out.back().Size()) == g.ReserveSize());
  TS_DCHECK(g.S() <= g.H);  // a carried row copies its S-wide state inside the H-unit loop

  // Scratch: the lengths, the dropped-out input of a layer, GRU's U h.
  const int64_t n_len = LengthSlots<T>(host_len);
  const int64_t n_x = g.dropout && g.L > 1 && ctx.is_train ? g.Rows() * g.DS() : 0;
  const int64_t n_hu = g.mode == kGru ? g.N * g.GH() : 0;
  T* tmp = ctx.requested.at(1).get_space_typed<T>(
      static_cast<size_t>(std::max<int64_t>(1, n_len + n_x + n_hu)));
  T* xbuf = tmp + n_len;
  T* hu = xbuf + n_x;

  const Forward<xpu, T> f{{p, g, ctx, LengthsForKernels<xpu>(ctx, host_len, tmp)}};
  const T* layer_in = x;
  for (int64_t l = 0; l < g.L; ++l) {
    for (int64_t d = 0; d < g.D; ++d)
      f.Direction(MakeDirView<T>(g, l, d, w, res, hx, cx), layer_in, g.LayerInput(l), hu);
    if (l + 1 < g.L) layer_in = DropoutBetween<xpu>(p, g, ctx, l, res, xbuf);
  }

  Fill<xpu>(ctx, 1, res + g.Flag(), T(1));
  WriteOutput<xpu>(ctx, g, f.len, res + g.States(g.L - 1), out[0].dptr<T>(), req[0]);
  // hy, cy: the state after each direction's last step.
  for (int64_t l = 0; l < g.L; ++l)
    for (int64_t d = 0; d < g.D; ++d) {
      const DirView<T> v = MakeDirView<T>(g, l, d, w, res, hx, cx);
      const int64_t last = d == 0 ? g.T - 1 : 0;
      const int64_t s = (l * g.D + d) * g.N;
      StoreRows<xpu>(ctx, v.hs.At(last, g.N), g.DS(), g.N, g.S(), out[1].dptr<T>() + s * g.S(),
                     g.S(), req[1]);
      if (lstm)
        StoreRows<xpu>(ctx, v.extra + last * g.N * g.H, g.H, g.N, g.H, out[2].dptr<T>() + s * g.H,
                       g.H, req[2]);
    }
}

// ------------------------------------------------------ backward

template <typename xpu, typename T>
struct Backward : LoopPass<xpu, T> {
  using LoopPass<xpu, T>::p, LoopPass<xpu, T>::g, LoopPass<xpu, T>::ctx, LoopPass<xpu, T>::len,
      LoopPass<xpu, T>::Gemm;
  T* dgx = nullptr;  // (T, N, G*H)
  T* dgh = nullptr;  // GRU: (T, N, G*H); else dgx
  T* dh = nullptr;   // (N, S): the state's gradient
  T* dc = nullptr;   // (N, H)
  // With a projection: the gradient of r at every step (T, N, P), of h
  // before the projection (N, H), and zeros for the cell's own dh (N, H).
  T *dr_seq = nullptr, *dpre = nullptr, *zeros = nullptr;

  BackRows<T> RowsAt(const DirView<T>& v, int64_t t, StateView<T> hp, StateView<T> cp) const {
    BackRows<T> s;
    s.g = v.gates + t * g.N * g.GH();
    s.c_prev = cp.ptr;
    s.c = v.extra + t * g.N * g.H;
    s.h_prev = hp.ptr;
    s.ld_prev = hp.ld;
    s.dh = dh;
    s.dc = dc;
    s.dgx = dgx + t * g.N * g.GH();
    s.dgh = dgh + t * g.N * g.GH();
    s.len = len;
    s.t = t;
    s.mode = g.mode;
    return s;
  }

  // Walks the steps in reverse, leaving the gates' gradients in dgx/dgh and
  // the initial state's in dh/dc. dy: the gradient of H_l (ld D*S).
  void Steps(const DirView<T>& v, StateView<T> dy) const {
    if (v.pre) return StepsProjected(v, dy);
    const CellClip<AccType<T>> clip = MakeClip<AccType<T>>(p);
    const int64_t last = v.first_step + (g.T - 1) * v.step;
    for (int64_t s = 0; s < g.T; ++s) {
      const int64_t t = last - s * v.step;
      BackRows<T> rows =
          RowsAt(v, t, v.Prev(v.hs, v.h0, t, g.N), v.Prev({v.extra, g.H}, v.c0, t, g.N));
      rows.dy = dy.At(t, g.N);
      rows.ld_dy = dy.ld;
      LaunchRows<xpu, CellBackward>(ctx.run_ctx, g.N, g.H, g.G, rows, clip);
      Gemm(false, false, g.N, g.H, g.GH(), rows.dgh, g.GH(), v.U, g.H, dh, g.H, true);
    }
  }

  // The LSTM with a projection r = W_h2r h: per step, the gradient of r
  // (from the next step and the output) goes back through W_h2r to h, then
  // through the cell; the gates' part reaches the previous r through W_h2h.
  void StepsProjected(const DirView<T>& v, StateView<T> dy) const {
    const CellClip<AccType<T>> clip = MakeClip<AccType<T>>(p);
    const int64_t last = v.first_step + (g.T - 1) * v.step, P = g.P, H = g.H;
    Fill<xpu>(ctx, g.N * H, zeros, T(0));
    for (int64_t s = 0; s < g.T; ++s) {
      const int64_t t = last - s * v.step;
      T* drt = dr_seq + t * g.N * P;
      Launch<xpu, ProjectGradKernel>(ctx, g.N * P, P, len, t, drt, static_cast<const T*>(dh),
                                     static_cast<const T*>(dy.At(t, g.N)), dy.ld);
      Gemm(false, false, g.N, H, P, drt, P, v.R, H, dpre, H, false);
      BackRows<T> rows = RowsAt(v, t, v.h0, v.Prev({v.extra, H}, v.c0, t, g.N));
      rows.dy = dpre;
      rows.ld_dy = H;
      rows.dh = zeros;  // the cell's own h feeds nothing but the projection
      LaunchRows<xpu, CellBackward>(ctx.run_ctx, g.N, H, g.G, rows, clip);
      Gemm(false, false, g.N, P, g.GH(), rows.dgx, g.GH(), v.U, P, dh, P, false);
      if (len)
        Launch<xpu, ProjectCarryGradKernel>(ctx, g.N * P, P, len, t, static_cast<const T*>(drt),
                                            dh);
    }
  }

  // dW += dgx^T x, dU += dgh^T h_prev (the states shifted by one step, the
  // initial state at the first), db_i2h += sum dgx, db_h2h += sum dgh.
  void WeightGrads(const DirView<T>& v, const T* x, int64_t in, T* dw_base, int64_t l,
                   int64_t d) const {
    const int64_t GH = g.GH(), N = g.N, S = g.S();
    T* dW = dw_base + g.WeightI2H(l, d);
    T* dU = dw_base + g.WeightH2H(l, d);
    Gemm(true, false, GH, in, g.Rows(), dgx, GH, x, in, dW, in, true);
    if (g.T > 1) {
      const T* dgh_shift = v.step > 0 ? dgh + N * GH : dgh;
      const T* h_shift = v.step > 0 ? v.hs.ptr : v.hs.ptr + N * v.hs.ld;
      Gemm(true, false, GH, S, (g.T - 1) * N, dgh_shift, GH, h_shift, v.hs.ld, dU, S, true);
    }
    Gemm(true, false, GH, S, N, dgh + v.first_step * N * GH, GH, v.h0.ptr, S, dU, S, true);
    if (v.pre)  // dW_h2r += dr^T h (h is zero on the carried rows)
      Gemm(true, false, g.P, g.H, g.Rows(), dr_seq, g.P, v.pre, g.H, dw_base + g.WeightH2R(l, d),
           g.H, true);
    RnnSteps<xpu>::SumRows(ctx.run_ctx, static_cast<const T*>(dgx), g.Rows(), GH,
                           dw_base + g.BiasI2H(l, d), true);
    RnnSteps<xpu>::SumRows(ctx.run_ctx, static_cast<const T*>(dgh), g.Rows(), GH,
                           dw_base + g.BiasH2H(l, d), true);
  }
};

// The loop's backward: inputs dout, [dhy, [dcy]] (with state_outputs), the
// forward's inputs, its reserve (kept by the loop: the caller checks the
// flag); outputs ddata, dparameters, dstate, [dstate_cell].
template <typename xpu, typename T>
void LoopBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RNNParam& p = RnnParams(attrs);
  const bool lstm = p.mode == kLstm;
  const size_t n_og = p.state_outputs ? (lstm ? 3 : 2) : 1;
  const TBlob& data = in[n_og];
  const RnnGeom g(p, data.shape()[0], data.shape()[1], data.shape()[2]);
  const TBlob* lengths = p.use_sequence_length ? &in[n_og + (lstm ? 4 : 3)] : nullptr;
  const std::vector<int64_t> host_len = ReadLengths<xpu>(attrs, ctx.run_ctx, g, lengths);
  const T* dout = in[0].dptr<T>();
  const T* dhy = p.state_outputs ? in[1].dptr<T>() : nullptr;
  const T* dcy = p.state_outputs && lstm ? in[2].dptr<T>() : nullptr;
  const T* x = data.dptr<T>();
  const T* w = in[n_og + 1].dptr<T>();
  const T* hx = in[n_og + 2].dptr<T>();
  const T* cx = lstm ? in[n_og + 3].dptr<T>() : nullptr;
  T* res = const_cast<T*>(in.back().dptr<T>());
  TS_DCHECK(static_cast<int64_t>(in.back().Size()) == g.ReserveSize());

  // Scratch: the lengths, two layer-gradient buffers, the dropped-out input
  // of a layer, the gates' gradients, dh, dc and, with a projection, its
  // gradients.
  const int64_t seq = g.Rows() * g.DS();
  const int64_t n_len = LengthSlots<T>(host_len);
  const int64_t n_layer = g.L > 1 ? seq : 0, n_x = g.dropout && g.L > 1 ? seq : 0;
  const int64_t n_g = g.Rows() * g.GH(), n_gh = g.mode == kGru ? n_g : 0;
  const int64_t n_s = g.N * g.S(), n_c = g.N * g.H;
  const int64_t n_proj = g.P > 0 ? g.Rows() * g.P + 2 * g.N * g.H : 0;
  const int64_t total = n_len + 2 * n_layer + n_x + n_g + n_gh + n_s + n_c + n_proj;
  T* tmp = ctx.requested.at(0).get_space_typed<T>(static_cast<size_t>(total));
  T* buf[2] = {tmp + n_len, tmp + n_len + n_layer};
  T* xbuf = buf[1] + n_layer;
  Backward<xpu, T> b{{p, g, ctx, LengthsForKernels<xpu>(ctx, host_len, tmp)}, xbuf + n_x};
  b.dgh = g.mode == kGru ? b.dgx + n_g : b.dgx;
  b.dh = b.dgx + n_g + n_gh;
  b.dc = b.dh + n_s;
  if (g.P > 0) {
    b.dr_seq = b.dc + n_c;
    b.dpre = b.dr_seq + g.Rows() * g.P;
    b.zeros = b.dpre + g.N * g.H;
  }

  T* dw = out[1].dptr<T>();
  const bool want_w = req[1] != kNullOp;
  if (req[1] == kWriteTo || req[1] == kWriteInplace) Fill<xpu>(ctx, g.ParamSize(), dw, T(0));

  StateView<T> dy{const_cast<T*>(dout), g.DS()};
  for (int64_t l = g.L - 1; l >= 0; --l) {
    const int64_t in_l = g.LayerInput(l);
    // This layer's input, and where its gradient goes.
    const T* xl = LayerInputOf<xpu>(ctx, g, l, x, res, xbuf);
    T* dx = l > 0 ? buf[l % 2] : out[0].dptr<T>();
    const OpReqType rx = l > 0 ? kWriteTo : req[0];
    for (int64_t d = 0; d < g.D; ++d) {
      const DirView<T> v = MakeDirView<T>(g, l, d, w, res, hx, cx);
      const int64_t s = (l * g.D + d) * g.N;
      if (dhy)
        StoreRows<xpu>(ctx, dhy + s * g.S(), n_s, 1, n_s, b.dh, n_s, kWriteTo);
      else
        Fill<xpu>(ctx, n_s, b.dh, T(0));
      if (dcy)
        StoreRows<xpu>(ctx, dcy + s * g.H, n_c, 1, n_c, b.dc, n_c, kWriteTo);
      else
        Fill<xpu>(ctx, n_c, b.dc, T(0));
      b.Steps(v, {dy.ptr + d * g.S(), dy.ld});
      StoreRows<xpu>(ctx, static_cast<const T*>(b.dh), g.S(), g.N, g.S(),
                     out[2].dptr<T>() + s * g.S(), g.S(), req[2]);
      if (lstm)
        StoreRows<xpu>(ctx, static_cast<const T*>(b.dc), g.H, g.N, g.H, out[3].dptr<T>() + s * g.H,
                       g.H, req[3]);
      if (want_w) b.WeightGrads(v, xl, in_l, dw, l, d);
      if (rx != kNullOp)
        b.Gemm(false, false, g.Rows(), in_l, g.GH(), b.dgx, g.GH(), v.W, in_l, dx, in_l,
               d > 0 || rx == kAddTo);
    }
    if (l > 0) {
      ThroughDropout<xpu>(ctx, g, l, res, dx);
      dy = {dx, g.DS()};
    }
  }
}

}  // namespace rnn
}  // namespace tessera::op
