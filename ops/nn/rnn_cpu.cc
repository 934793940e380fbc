// The fused RNN op on the CPU: a loop over the BLAS. Per layer and
// direction, one GEMM projects the whole input sequence onto the gates, then
// each time step adds the recurrent product (one GEMM of N rows) and applies
// the cell pointwise (rnn_cells.h). The backward walks the steps in reverse
// the same way and leaves the weight gradients to three GEMMs over the whole
// sequence. Layouts are in rnn-inl.h. Where oneDNN's primitive applies
// (rnn_dnnl.cc) the forward and backward hand it each layer instead; the
// reserve's last element says which path a forward took.
//
// Sequence lengths: a row at or past its length keeps its state unchanged
// and outputs zeros, so the last state is that of its last real step and
// the reverse direction starts at its last real step, as in MXNet.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/resource/random_stream.h"
#include "ops/nn/rnn-inl.h"
#include "ops/nn/rnn_cells.h"
#include "ops/tensor/gemm.h"

namespace tessera::op {
namespace {

// A state sequence or initial state: row n of step t at ptr + (t * N + n) * ld.
template <typename T>
struct StateView {
  T* ptr = nullptr;
  int64_t ld = 0;
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

// The state before step t: the initial state for the first step processed,
// else the state after the previous one.
template <typename T>
StateView<T> PrevState(const DirView<T>& v, StateView<T> seq, StateView<T> init, int64_t t,
                       int64_t N) {
  if (t == v.first_step) return init;
  return {seq.ptr + (t - v.step) * N * seq.ld, seq.ld};
}

template <typename T>
T* Row(StateView<T> s, int64_t t, int64_t N, int64_t n) {
  return s.ptr + (t * N + n) * s.ld;
}

std::vector<int64_t> ReadLengths(const NodeAttrs& attrs, const RnnGeom& g, const TBlob* lengths) {
  std::vector<int64_t> len(static_cast<size_t>(g.N), g.T);
  if (!lengths) return len;
  SwitchDType(
      lengths->dtype(),
      [&](auto tag) {
        using L = typename decltype(tag)::type;
        const L* p = lengths->dptr<L>();
        for (int64_t n = 0; n < g.N; ++n) {
          const double v = static_cast<double>(p[n]);
          TS_CHECK(v >= 0 && v <= static_cast<double>(g.T) && v == static_cast<int64_t>(v))
              << OpLabel(attrs) << ": sequence_length[" << n << "] = " << v
              << " is not a whole number in [0, " << g.T << "] (the sequence has " << g.T
              << " steps)";
          len[static_cast<size_t>(n)] = static_cast<int64_t>(v);
        }
      },
      "RNN sequence_length");
  return len;
}

// Threads for the pointwise part of a step, a loop over the batch rows:
// each row costs a few transcendental functions per unit, so the loop is
// shared from a few thousand units up.
int RowThreads(const RnnGeom& g, int threads) {
  return g.N > 1 && g.N * g.GH() >= 8192 ? std::max(1, threads) : 1;
}

template <typename T>
rnn::CellClip<T> MakeClip(const RNNParam& p) {
  rnn::CellClip<T> c;
  if (p.lstm_state_clip_min || p.lstm_state_clip_max) c.on = true;
  if (p.lstm_state_clip_min) c.lo = static_cast<T>(*p.lstm_state_clip_min);
  if (p.lstm_state_clip_max) c.hi = static_cast<T>(*p.lstm_state_clip_max);
  c.nan_to_lo = p.lstm_state_clip_nan;
  return c;
}

// rows x cols block, row stride ld, (+)= into dst with row stride ldd.
template <typename T>
void StoreRows(const T* src, int64_t ld, int64_t rows, int64_t cols, T* dst, int64_t ldd,
               OpReqType req) {
  if (req == kNullOp) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      dst[r * ldd + j] = req == kAddTo ? dst[r * ldd + j] + src[r * ld + j] : src[r * ld + j];
}

// --------------------------------------------------------------- forward

template <typename T>
struct Forward {
  const RNNParam& p;
  const RnnGeom& g;
  const OpContext& ctx;
  const std::vector<int64_t>& len;
  int threads;

  // gates = x W^T + b_i2h (+ b_h2h but for the GRU).
  void ProjectInput(const DirView<T>& v, const T* x, int64_t in) const {
    Gemm(false, true, g.Rows(), g.GH(), in, T(1), x, in, v.W, in, T(0), v.gates, g.GH(), threads);
    const bool with_h = g.mode != kGru;  // the GRU adds b_h2h to U h (Step)
    const int row_threads = RowThreads(g, threads);
#pragma omp parallel for num_threads(row_threads) schedule(static) if (row_threads > 1)
    for (int64_t r = 0; r < g.Rows(); ++r) {
      T* row = v.gates + r * g.GH();
      for (int64_t j = 0; j < g.GH(); ++j) row[j] += with_h ? v.bx[j] + v.bh[j] : v.bx[j];
    }
  }

  void Step(const DirView<T>& v, int64_t t, T* hu, const rnn::CellClip<T>& clip) const {
    const StateView<T> hp = PrevState(v, v.hs, v.h0, t, g.N);
    const StateView<T> cseq{v.extra, g.H};
    const StateView<T> cp = PrevState(v, cseq, v.c0, t, g.N);
    T* gt = v.gates + t * g.N * g.GH();
    const int64_t S = g.S();
    if (g.mode == kGru) {
      Gemm(false, true, g.N, g.GH(), S, T(1), hp.ptr, hp.ld, v.U, S, T(0), hu, g.GH(), threads);
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t j = 0; j < g.GH(); ++j) hu[n * g.GH() + j] += v.bh[j];
    } else {
      Gemm(false, true, g.N, g.GH(), S, T(1), hp.ptr, hp.ld, v.U, S, T(1), gt, g.GH(), threads);
    }
    const int row_threads = RowThreads(g, threads);
#pragma omp parallel for num_threads(row_threads) schedule(static) if (row_threads > 1)
    for (int64_t n = 0; n < g.N; ++n) {
      T* h = v.pre ? v.pre + (t * g.N + n) * g.H : Row(v.hs, t, g.N, n);
      const T* h_prev = hp.ptr + n * hp.ld;
      T* gn = gt + n * g.GH();
      if (t >= len[static_cast<size_t>(n)]) {  // past the row's end: carry the state
        std::copy(h_prev, h_prev + S, Row(v.hs, t, g.N, n));
        if (v.pre) std::fill(h, h + g.H, T(0));  // no part in the projection's gradient
        if (g.mode == kLstm)
          std::copy(cp.ptr + n * g.H, cp.ptr + (n + 1) * g.H, v.extra + (t * g.N + n) * g.H);
        continue;
      }
      switch (g.mode) {
        case kLstm: {
          T* c = v.extra + (t * g.N + n) * g.H;
          rnn::LstmForward(g.H, gn, cp.ptr + n * g.H, c, h);
          if (clip.on) rnn::ClipCells(g.H, gn, c, h, clip);
          break;
        }
        case kGru:
          rnn::GruForward(g.H, gn, hu + n * g.GH(), h_prev, v.extra + (t * g.N + n) * g.H, h);
          break;
        default:
          rnn::VanillaForward(g.H, g.mode == kRnnRelu, gn, h);
      }
    }
    if (v.pre) Project(v, t, hp);
  }

  // r = h W_h2r^T for the step; the rows past their length keep the state.
  void Project(const DirView<T>& v, int64_t t, StateView<T> hp) const {
    T* r = Row(v.hs, t, g.N, 0);
    Gemm(false, true, g.N, g.P, g.H, T(1), v.pre + t * g.N * g.H, g.H, v.R, g.H, T(0), r, v.hs.ld,
         threads);
    for (int64_t n = 0; n < g.N; ++n)
      if (t >= len[static_cast<size_t>(n)])
        std::copy(hp.ptr + n * hp.ld, hp.ptr + n * hp.ld + g.P, r + n * v.hs.ld);
  }

  void Direction(const DirView<T>& v, const T* x, int64_t in, T* hu) const {
    ProjectInput(v, x, in);
    const rnn::CellClip<T> clip = MakeClip<T>(p);
    for (int64_t s = 0; s < g.T; ++s) Step(v, v.first_step + s * v.step, hu, clip);
  }

  // The next layer's input: H_l times a fresh dropout mask in training; the
  // mask is all ones otherwise, so a backward after it stays correct.
  const T* DropoutBetween(int64_t l, T* res, T* xbuf) const {
    const T* hs = res + g.States(l);
    if (!g.HasMask(l)) return hs;
    T* mask = res + g.Mask(l);
    const int64_t n = g.Rows() * g.DS();
    if (!ctx.is_train) {
      std::fill(mask, mask + n, T(1));
      return hs;
    }
    const resource::RandomStream s = ctx.requested.at(0).get_random();
    const float keep = 1.f - p.p;
    const T scale = keep > 0 ? T(1) / static_cast<T>(keep) : T(0);
    const uint64_t base = static_cast<uint64_t>(g.Mask(l));
    for (int64_t i = 0; i < n; ++i) {
      const bool kept = resource::RandomUniformFloat(s, base + static_cast<uint64_t>(i)) < keep;
      mask[i] = kept ? scale : T(0);
      xbuf[i] = hs[i] * mask[i];
    }
    return xbuf;
  }
};

std::atomic<bool> g_force_loop{false};

// out: the top layer's states, zero past each row's length.
template <typename T>
void WriteOutput(const RnnGeom& g, const std::vector<int64_t>& len, const T* top, T* y,
                 OpReqType req) {
  if (req == kNullOp) return;
  for (int64_t t = 0; t < g.T; ++t)
    for (int64_t n = 0; n < g.N; ++n) {
      const bool live = t < len[static_cast<size_t>(n)];
      const int64_t o = (t * g.N + n) * g.DS();
      for (int64_t j = 0; j < g.DS(); ++j) {
        const T v = live ? top[o + j] : T(0);
        y[o + j] = req == kAddTo ? y[o + j] + v : v;
      }
    }
}

// Training on oneDNN, layer by layer, with the loop's dropout between
// layers; the reserve keeps each layer's workspace and final states.
void TrainForwardDnnl(const RNNParam& p, const RnnGeom& g, const OpContext& ctx,
                      const std::vector<int64_t>& len, const float* x, const float* w,
                      const float* hx, const float* cx, float* res,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const int64_t xbuf_n = g.dropout && g.L > 1 ? g.Rows() * g.DS() : 0;
  const size_t scratch_n = RnnDnnlScratchBytes(g, false) / sizeof(float) + 16;
  float* tmp = ctx.requested.at(1).get_space_typed<float>(static_cast<size_t>(xbuf_n) + scratch_n);
  float* xbuf = tmp;
  void* scratch = tmp + (xbuf_n + 15) / 16 * 16;
  const Forward<float> f{p, g, ctx, len, ctx.run_ctx.omp_threads};
  const float* layer_in = x;
  for (int64_t l = 0; l < g.L; ++l) {
    RnnDnnlTrainForward(g, l, ctx, scratch, layer_in, w, hx, cx, res);
    if (l + 1 < g.L) layer_in = f.DropoutBetween(l, res, xbuf);
  }
  res[g.Flag()] = 2.f;
  WriteOutput(g, len, res + g.States(g.L - 1), out[0].dptr<float>(), req[0]);
  const int64_t n = g.D * g.N * g.H;
  for (int64_t l = 0; l < g.L; ++l) {
    StoreRows(res + g.DnnlIter(l), n, 1, n, out[1].dptr<float>() + l * n, n, req[1]);
    if (g.mode == kLstm)
      StoreRows(res + g.DnnlIterC(l), n, 1, n, out[2].dptr<float>() + l * n, n, req[2]);
  }
}

template <typename T>
void ForwardTyped(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RNNParam& p = RnnParams(attrs);
  const RnnGeom g(p, in[0].shape()[0], in[0].shape()[1], in[0].shape()[2]);
  const bool lstm = g.mode == kLstm;
  const TBlob* lengths = p.use_sequence_length ? &in[lstm ? 4 : 3] : nullptr;
  const std::vector<int64_t> len = ReadLengths(attrs, g, lengths);
  const T* x = in[0].dptr<T>();
  const T* w = in[1].dptr<T>();
  const T* hx = in[2].dptr<T>();
  const T* cx = lstm ? in[3].dptr<T>() : nullptr;
  T* res = out.back().dptr<T>();
  TS_DCHECK(static_cast<int64_t>(out.back().Size()) == g.ReserveSize());

  if constexpr (std::is_same_v<T, float>) {
    if (!ctx.is_train && !g_force_loop.load() && RnnDnnlInferenceApplies(p, DType::kFloat32)) {
      RnnDnnlInference(g, ctx, x, w, hx, cx, res, out[1].dptr<float>(), req[1],
                       lstm ? out[2].dptr<float>() : nullptr, lstm ? req[2] : kNullOp);
      res[g.Flag()] = T(0);  // no gates kept: no backward from this forward
      WriteOutput(g, len, res + g.States(g.L - 1), out[0].dptr<T>(), req[0]);
      return;
    }
    if (ctx.is_train && !g_force_loop.load() && RnnDnnlTrainingApplies(p)) {
      TrainForwardDnnl(p, g, ctx, len, x, w, hx, cx, res, req, out);
      return;
    }
  }
  const int64_t xbuf_n = g.dropout && g.L > 1 && ctx.is_train ? g.Rows() * g.DS() : 0;
  const int64_t hu_n = g.mode == kGru ? g.N * g.GH() : 0;
  T* tmp = ctx.requested.at(1).get_space_typed<T>(
      static_cast<size_t>(std::max<int64_t>(1, xbuf_n + hu_n)));
  T* xbuf = tmp;
  T* hu = tmp + xbuf_n;

  const Forward<T> f{p, g, ctx, len, ctx.run_ctx.omp_threads};
  const T* layer_in = x;
  for (int64_t l = 0; l < g.L; ++l) {
    for (int64_t d = 0; d < g.D; ++d)
      f.Direction(MakeDirView<T>(g, l, d, w, res, hx, cx), layer_in, g.LayerInput(l), hu);
    if (l + 1 < g.L) layer_in = f.DropoutBetween(l, res, xbuf);
  }

  res[g.Flag()] = T(1);
  WriteOutput(g, len, res + g.States(g.L - 1), out[0].dptr<T>(), req[0]);
  // hy, cy: the state after each direction's last step.
  for (int64_t l = 0; l < g.L; ++l)
    for (int64_t d = 0; d < g.D; ++d) {
      const DirView<T> v = MakeDirView<T>(g, l, d, w, res, hx, cx);
      const int64_t last = d == 0 ? g.T - 1 : 0;
      const int64_t s = (l * g.D + d) * g.N;
      StoreRows(Row(v.hs, last, g.N, 0), g.DS(), g.N, g.S(), out[1].dptr<T>() + s * g.S(), g.S(),
                req[1]);
      if (lstm)
        StoreRows(v.extra + last * g.N * g.H, g.H, g.N, g.H, out[2].dptr<T>() + s * g.H, g.H,
                  req[2]);
    }
}

// --------------------------------------------------------------- backward

template <typename T>
struct Backward {
  const RNNParam& p;
  const RnnGeom& g;
  const std::vector<int64_t>& len;
  int threads;
  T* dgx;  // (T, N, G*H)
  T* dgh;  // GRU: (T, N, G*H); else dgx
  T* dh;   // (N, S): the state's gradient
  T* dc;   // (N, H)
  // With a projection: the gradient of r at every step (T, N, P), of h
  // before the projection (N, H), and zeros for the cell's own dh (N, H).
  T *dr_seq = nullptr, *dpre = nullptr, *zeros = nullptr;

  // Walks the steps in reverse, leaving the gates' gradients in dgx/dgh and
  // the initial state's in dh/dc. dy: the gradient of H_l (ld D*S).
  void Steps(const DirView<T>& v, StateView<T> dy) const {
    if (v.pre) return StepsProjected(v, dy);
    const rnn::CellClip<T> clip = MakeClip<T>(p);
    const StateView<T> cseq{v.extra, g.H};
    const int64_t last = v.first_step + (g.T - 1) * v.step;
    for (int64_t s = 0; s < g.T; ++s) {
      const int64_t t = last - s * v.step;
      const StateView<T> hp = PrevState(v, v.hs, v.h0, t, g.N);
      const StateView<T> cp = PrevState(v, cseq, v.c0, t, g.N);
      T* dgx_t = dgx + t * g.N * g.GH();
      T* dgh_t = dgh + t * g.N * g.GH();
      const int row_threads = RowThreads(g, threads);
#pragma omp parallel for num_threads(row_threads) schedule(static) if (row_threads > 1)
      for (int64_t n = 0; n < g.N; ++n) {
        T* gx = dgx_t + n * g.GH();
        T* gh = dgh_t + n * g.GH();
        if (t >= len[static_cast<size_t>(n)]) {  // carried state: gradient passes through
          std::fill(gx, gx + g.GH(), T(0));
          if (gh != gx) std::fill(gh, gh + g.GH(), T(0));
          continue;
        }
        const T* gn = v.gates + (t * g.N + n) * g.GH();
        const T* dyn = Row(dy, t, g.N, n);
        T* dhn = dh + n * g.H;
        switch (g.mode) {
          case kLstm:
            if (clip.on)
              rnn::LstmBackward<true>(g.H, gn, cp.ptr + n * g.H, v.extra + (t * g.N + n) * g.H, dyn,
                                      dhn, dc + n * g.H, gx, clip);
            else
              rnn::LstmBackward<false>(g.H, gn, cp.ptr + n * g.H, v.extra + (t * g.N + n) * g.H,
                                       dyn, dhn, dc + n * g.H, gx, clip);
            break;
          case kGru:
            rnn::GruBackward(g.H, gn, v.extra + (t * g.N + n) * g.H, hp.ptr + n * hp.ld, dyn, dhn,
                             gx, gh);
            break;
          default:
            rnn::VanillaBackward(g.H, g.mode == kRnnRelu, gn, dyn, dhn, gx);
        }
      }
      Gemm(false, false, g.N, g.H, g.GH(), T(1), dgh_t, g.GH(), v.U, g.H, T(1), dh, g.H, threads);
    }
  }

  // The LSTM with a projection r = W_h2r h: per step, the gradient of r
  // (from the next step and the output) goes back through W_h2r to h, then
  // through the cell; the gates' part reaches the previous r through W_h2h.
  void StepsProjected(const DirView<T>& v, StateView<T> dy) const {
    const rnn::CellClip<T> clip = MakeClip<T>(p);
    const StateView<T> cseq{v.extra, g.H};
    const int64_t last = v.first_step + (g.T - 1) * v.step, P = g.P, H = g.H;
    std::fill(zeros, zeros + g.N * H, T(0));
    for (int64_t s = 0; s < g.T; ++s) {
      const int64_t t = last - s * v.step;
      const StateView<T> cp = PrevState(v, cseq, v.c0, t, g.N);
      T* dgx_t = dgx + t * g.N * g.GH();
      T* drt = dr_seq + t * g.N * P;
      for (int64_t n = 0; n < g.N; ++n) {
        const bool live = t < len[static_cast<size_t>(n)];
        const T* dyn = Row(dy, t, g.N, n);
        for (int64_t j = 0; j < P; ++j) drt[n * P + j] = dh[n * P + j] + (live ? dyn[j] : T(0));
      }
      Gemm(false, false, g.N, H, P, T(1), drt, P, v.R, H, T(0), dpre, H, threads);
      const int row_threads = RowThreads(g, threads);
#pragma omp parallel for num_threads(row_threads) schedule(static) if (row_threads > 1)
      for (int64_t n = 0; n < g.N; ++n) {
        T* gx = dgx_t + n * g.GH();
        if (t >= len[static_cast<size_t>(n)]) {
          std::fill(gx, gx + g.GH(), T(0));
          continue;
        }
        const T* gn = v.gates + (t * g.N + n) * g.GH();
        const T* c = v.extra + (t * g.N + n) * H;
        if (clip.on)
          rnn::LstmBackward<true>(H, gn, cp.ptr + n * H, c, dpre + n * H, zeros + n * H, dc + n * H,
                                  gx, clip);
        else
          rnn::LstmBackward<false>(H, gn, cp.ptr + n * H, c, dpre + n * H, zeros + n * H,
                                   dc + n * H, gx, clip);
      }
      Gemm(false, false, g.N, P, g.GH(), T(1), dgx_t, g.GH(), v.U, P, T(0), dh, P, threads);
      for (int64_t n = 0; n < g.N; ++n)  // carried rows pass their gradient on
        if (t >= len[static_cast<size_t>(n)]) std::copy(drt + n * P, drt + (n + 1) * P, dh + n * P);
    }
  }

  // dW += dgx^T x, dU += dgh^T h_prev (the states shifted by one step, the
  // initial state at the first), db_i2h += sum dgx, db_h2h += sum dgh.
  void WeightGrads(const DirView<T>& v, const T* x, int64_t in, T* dw_base, int64_t l,
                   int64_t d) const {
    const int64_t GH = g.GH(), N = g.N, S = g.S();
    T* dW = dw_base + g.WeightI2H(l, d);
    T* dU = dw_base + g.WeightH2H(l, d);
    Gemm(true, false, GH, in, g.Rows(), T(1), dgx, GH, x, in, T(1), dW, in, threads);
    if (g.T > 1) {
      const T* dgh_shift = v.step > 0 ? dgh + N * GH : dgh;
      const T* h_shift = v.step > 0 ? v.hs.ptr : v.hs.ptr + N * v.hs.ld;
      Gemm(true, false, GH, S, (g.T - 1) * N, T(1), dgh_shift, GH, h_shift, v.hs.ld, T(1), dU, S,
           threads);
    }
    Gemm(true, false, GH, S, N, T(1), dgh + v.first_step * N * GH, GH, v.h0.ptr, S, T(1), dU, S,
         threads);
    if (v.pre)  // dW_h2r += dr^T h (h is zero on the carried rows)
      Gemm(true, false, g.P, g.H, g.Rows(), T(1), dr_seq, g.P, v.pre, g.H, T(1),
           dw_base + g.WeightH2R(l, d), g.H, threads);
    RunContext rctx;
    rctx.omp_threads = threads;
    SumRows(rctx, dgx, g.Rows(), GH, dw_base + g.BiasI2H(l, d), true);
    SumRows(rctx, dgh, g.Rows(), GH, dw_base + g.BiasH2H(l, d), true);
  }
};

// Layer l's input as its forward read it: the data, or the layer below's
// outputs times their dropout mask (recomputed into xbuf).
template <typename T>
const T* LayerInputOf(const RnnGeom& g, int64_t l, const T* x, const T* res, T* xbuf) {
  if (l == 0) return x;
  const T* below = res + g.States(l - 1);
  if (!g.HasMask(l - 1)) return below;
  const T* mask = res + g.Mask(l - 1);
  for (int64_t i = 0; i < g.Rows() * g.DS(); ++i) xbuf[i] = below[i] * mask[i];
  return xbuf;
}

// The gradient of layer l's input, made the gradient of the outputs below
// it: times the dropout mask between them.
template <typename T>
void ThroughDropout(const RnnGeom& g, int64_t l, const T* res, T* dx) {
  if (!g.HasMask(l - 1)) return;
  const T* mask = res + g.Mask(l - 1);
  for (int64_t i = 0; i < g.Rows() * g.DS(); ++i) dx[i] *= mask[i];
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
  const int64_t dnnl_n = static_cast<int64_t>(RnnDnnlScratchBytes(g, true) / sizeof(float)) + 16;
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
    const float* xl = LayerInputOf(g, l, x, res, xbuf);
    float* dx = l > 0 ? buf[l % 2] : (n_dx0 ? dx0 : out[0].dptr<float>());
    RnnDnnlTrainBackward(g, l, ctx, scratch, xl, w, hx, cx, res, dy, dhy, dcy, dx, dhx, dcx, dw,
                         req[1] != kAddTo);
    StoreRows(dhx, n, 1, n, out[2].dptr<float>() + l * n, n, req[2]);
    if (lstm) StoreRows(dcx, n, 1, n, out[3].dptr<float>() + l * n, n, req[3]);
    if (l > 0) {
      ThroughDropout(g, l, res, dx);
      dy = dx;
    } else if (n_dx0) {
      StoreRows(dx0, g.Rows() * g.I, 1, g.Rows() * g.I, out[0].dptr<float>(), 0, req[0]);
    }
  }
}

template <typename T>
void BackwardTyped(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RNNParam& p = RnnParams(attrs);
  const bool lstm = p.mode == kLstm;
  const size_t n_og = p.state_outputs ? (lstm ? 3 : 2) : 1;
  const TBlob& data = in[n_og];
  const RnnGeom g(p, data.shape()[0], data.shape()[1], data.shape()[2]);
  const TBlob* lengths = p.use_sequence_length ? &in[n_og + (lstm ? 4 : 3)] : nullptr;
  const std::vector<int64_t> len = ReadLengths(attrs, g, lengths);
  const T* dout = in[0].dptr<T>();
  const T* dhy = p.state_outputs ? in[1].dptr<T>() : nullptr;
  const T* dcy = p.state_outputs && lstm ? in[2].dptr<T>() : nullptr;
  const T* x = data.dptr<T>();
  const T* w = in[n_og + 1].dptr<T>();
  const T* hx = in[n_og + 2].dptr<T>();
  const T* cx = lstm ? in[n_og + 3].dptr<T>() : nullptr;
  T* res = const_cast<T*>(in.back().dptr<T>());
  TS_CHECK(res[g.Flag()] != T(0))
      << OpLabel(attrs)
      << ": backward after a forward in inference mode, which keeps nothing for it: run the "
         "forward in training (under mx.autograd.record, or forward{is_train = true})";
  if constexpr (std::is_same_v<T, float>) {
    if (res[g.Flag()] == 2.f) return TrainBackwardDnnl(p, g, ctx, in, req, out);
  }

  // Scratch: two layer-gradient buffers, the gates' gradients, dh, dc, the
  // dropped-out input of a layer and, with a projection, its gradients.
  const int64_t seq = g.Rows() * g.DS();
  const int64_t n_layer = g.L > 1 ? seq : 0, n_x = g.dropout && g.L > 1 ? seq : 0;
  const int64_t n_g = g.Rows() * g.GH(), n_gh = g.mode == kGru ? n_g : 0;
  const int64_t n_s = g.N * g.S(), n_c = g.N * g.H;
  const int64_t n_proj = g.P > 0 ? g.Rows() * g.P + 2 * g.N * g.H : 0;
  const int64_t total = 2 * n_layer + n_x + n_g + n_gh + n_s + n_c + n_proj;
  T* tmp = ctx.requested.at(0).get_space_typed<T>(static_cast<size_t>(total));
  T* buf[2] = {tmp, tmp + n_layer};
  T* xbuf = tmp + 2 * n_layer;
  Backward<T> b{p, g, len, ctx.run_ctx.omp_threads, xbuf + n_x, nullptr, nullptr, nullptr};
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
  if (req[1] == kWriteTo || req[1] == kWriteInplace) std::fill(dw, dw + g.ParamSize(), T(0));

  StateView<T> dy{const_cast<T*>(dout), g.DS()};
  for (int64_t l = g.L - 1; l >= 0; --l) {
    const int64_t in_l = g.LayerInput(l);
    // This layer's input, and where its gradient goes.
    const T* xl = LayerInputOf<T>(g, l, x, res, xbuf);
    T* dx = l > 0 ? buf[l % 2] : out[0].dptr<T>();
    const OpReqType rx = l > 0 ? kWriteTo : req[0];
    for (int64_t d = 0; d < g.D; ++d) {
      const DirView<T> v = MakeDirView<T>(g, l, d, w, res, hx, cx);
      const int64_t s = (l * g.D + d) * g.N;
      if (dhy)
        std::copy(dhy + s * g.S(), dhy + s * g.S() + n_s, b.dh);
      else
        std::fill(b.dh, b.dh + n_s, T(0));
      if (dcy)
        std::copy(dcy + s * g.H, dcy + s * g.H + n_c, b.dc);
      else
        std::fill(b.dc, b.dc + n_c, T(0));
      b.Steps(v, {dy.ptr + d * g.S(), dy.ld});
      StoreRows(b.dh, g.S(), g.N, g.S(), out[2].dptr<T>() + s * g.S(), g.S(), req[2]);
      if (lstm) StoreRows(b.dc, g.H, g.N, g.H, out[3].dptr<T>() + s * g.H, g.H, req[3]);
      if (want_w) b.WeightGrads(v, xl, in_l, dw, l, d);
      if (rx != kNullOp) {
        const T beta = d > 0 || rx == kAddTo ? T(1) : T(0);
        Gemm(false, false, g.Rows(), in_l, g.GH(), T(1), b.dgx, g.GH(), v.W, in_l, beta, dx, in_l,
             b.threads);
      }
    }
    if (l > 0) {
      ThroughDropout(g, l, res, dx);
      dy = {dx, g.DS()};
    }
  }
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
  ForFloatAndDouble(attrs, in[0].dtype(), "RNN",
                    [&](auto zero) { ForwardTyped<decltype(zero)>(attrs, ctx, in, req, out); });
}

void RnnBackwardCpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_RNN",
                    [&](auto zero) { BackwardTyped<decltype(zero)>(attrs, ctx, in, req, out); });
}

}  // namespace tessera::op
