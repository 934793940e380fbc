// CTCLoss's parameters and computation, shared by the CPU (ctc_loss.cc) and
// GPU (ctc_loss.cu) registrations: connectionist temporal classification
// (Graves et al., 2006) as MXNet's (after Baidu's warp-ctc), by the
// forward-backward recursions in log space, one sequence at a time
// (CtcSequence, a device function too: a thread per sequence on the GPU,
// an OpenMP loop over sequences on the CPU). Labels and lengths are checked
// on the host before any work (on the GPU after a copy: the op waits for
// its stream once).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum CtcBlank { kBlankFirst, kBlankLast };

struct CTCLossParam : Params<CTCLossParam> {
  bool use_data_lengths = false;
  bool use_label_lengths = false;
  int blank_label = kBlankFirst;
  static void Declare(ParamDecl<CTCLossParam>& d) {
    d.field("use_data_lengths", &CTCLossParam::use_data_lengths)
        .set_default(false)
        .describe("Whether an input data_lengths (batch,) gives each sequence's length.");
    d.field("use_label_lengths", &CTCLossParam::use_label_lengths)
        .set_default(false)
        .describe(
            "Whether an input label_lengths (batch,) gives each label's length; otherwise a "
            "label ends at its first padding value (0 with blank_label 'first', -1 with 'last').");
    d.field("blank_label", &CTCLossParam::blank_label)
        .set_default(kBlankFirst)
        .add_enum("first", kBlankFirst)
        .add_enum("last", kBlankLast)
        .describe(
            "'first': class 0 is the blank and labels are 1..C-1; 'last': class C-1 is the "
            "blank and labels are 0..C-2.");
  }
};

inline const CTCLossParam& CtcParams(const NodeAttrs& attrs) {
  return ParamsOf<CTCLossParam>(attrs);
}

TS_XINLINE double CtcLogAdd(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const double m = a > b ? a : b;
  return m + log1p(exp(-fabs(a - b)));
}

// Sequence n's problem: its activations (steps t < len, row stride ld, C
// classes), its label (L classes), and room for lp (len * C), alpha and
// beta (len * S each, S = 2 L + 1) and occ (C), in doubles.
template <typename T>
struct CtcProblem {
  const T* act;
  int64_t len, ld, C;
  const int64_t* label;
  int64_t L, blank;
  T* grad;
  double* scratch;
};

// The loss of one sequence, and the gradient of the loss with respect to
// its activations (steps t < len) written into grad. A label that no
// alignment fits gives an infinite loss and a zero gradient.
template <typename T>
TS_XINLINE double CtcSequence(const CtcProblem<T>& q) {
  const int64_t len = q.len, C = q.C, S = 2 * q.L + 1;
  double* lp = q.scratch;
  double* alpha = lp + len * C;
  double* beta = alpha + len * S;
  double* occ = beta + len * S;
  // log softmax per step.
  for (int64_t t = 0; t < len; ++t) {
    const T* a = q.act + t * q.ld;
    double m = -INFINITY;
    for (int64_t k = 0; k < C; ++k) m = double(a[k]) > m ? double(a[k]) : m;
    double z = 0;
    for (int64_t k = 0; k < C; ++k) z += exp(double(a[k]) - m);
    const double lz = m + log(z);
    for (int64_t k = 0; k < C; ++k) lp[t * C + k] = double(a[k]) - lz;
  }
  auto sym = [&](int64_t s) { return s % 2 == 0 ? q.blank : q.label[s / 2]; };
  // May s take its path from s - 2 (a label different from the one before)?
  auto skip = [&](int64_t s) { return s >= 2 && s % 2 == 1 && sym(s) != sym(s - 2); };
  for (int64_t i = 0; i < len * S; ++i) alpha[i] = beta[i] = -INFINITY;
  if (len > 0) {
    alpha[0] = lp[sym(0)];
    if (S > 1) alpha[1] = lp[sym(1)];
  }
  for (int64_t t = 1; t < len; ++t)
    for (int64_t s = 0; s < S; ++s) {
      double v = alpha[(t - 1) * S + s];
      if (s >= 1) v = CtcLogAdd(v, alpha[(t - 1) * S + s - 1]);
      if (skip(s)) v = CtcLogAdd(v, alpha[(t - 1) * S + s - 2]);
      alpha[t * S + s] = v == -INFINITY ? -INFINITY : v + lp[t * C + sym(s)];
    }
  if (len > 0) {
    beta[(len - 1) * S + S - 1] = lp[(len - 1) * C + sym(S - 1)];
    if (S > 1) beta[(len - 1) * S + S - 2] = lp[(len - 1) * C + sym(S - 2)];
  }
  for (int64_t t = len - 2; t >= 0; --t)
    for (int64_t s = S - 1; s >= 0; --s) {
      double v = beta[(t + 1) * S + s];
      if (s + 1 < S) v = CtcLogAdd(v, beta[(t + 1) * S + s + 1]);
      if (s + 2 < S && skip(s + 2)) v = CtcLogAdd(v, beta[(t + 1) * S + s + 2]);
      beta[t * S + s] = v == -INFINITY ? -INFINITY : v + lp[t * C + sym(s)];
    }
  double logp = -INFINITY;
  if (len > 0) {
    logp = alpha[(len - 1) * S + S - 1];
    if (S > 1) logp = CtcLogAdd(logp, alpha[(len - 1) * S + S - 2]);
  } else if (q.L == 0) {
    logp = 0;  // the empty label on an empty sequence: certain
  }
  if (logp == -INFINITY) {  // no alignment fits (label too long): loss inf, no gradient
    for (int64_t t = 0; t < len; ++t)
      for (int64_t k = 0; k < C; ++k) q.grad[t * q.ld + k] = T(0);
    return INFINITY;
  }
  // d(-log p)/d a_t(k) = y_t(k) - sum_{s: l'_s = k} alpha_t(s) beta_t(s) / (p y_t(k)).
  for (int64_t t = 0; t < len; ++t) {
    for (int64_t k = 0; k < C; ++k) occ[k] = -INFINITY;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t k = sym(s);
      occ[k] = CtcLogAdd(occ[k], alpha[t * S + s] + beta[t * S + s]);
    }
    for (int64_t k = 0; k < C; ++k) {
      const double y = exp(lp[t * C + k]);
      const double o = occ[k] == -INFINITY ? 0 : exp(occ[k] - lp[t * C + k] - logp);
      q.grad[t * q.ld + k] = T(y - o);
    }
  }
  return -logp;
}

// The checked labels of every sequence: row n's L_n classes at
// labels[n * Lmax], its length label_len[n] and its steps steps[n]; the
// blank's class.
struct CtcLabels {
  std::vector<int64_t> labels, label_len, steps;
  int64_t Lmax = 0, blank = 0;
};

// The batch of data (steps, N, C) that each device solves a sequence at a
// time, with its labels (row n at labels + n * Lmax) and the forward's
// outputs: the gradient, and the loss stored by req.
template <typename T>
struct CtcBatch {
  const T* act;
  int64_t N, C;
  const int64_t* labels;
  int64_t Lmax, blank;
  T* grad;
  T* loss;
  OpReqType req;
  // The doubles of scratch a sequence of len steps and L label classes
  // needs (CtcProblem).
  TS_XINLINE int64_t Scratch(int64_t len, int64_t L) const {
    return len * (C + 2 * (2 * L + 1)) + C;
  }
  // Sequence n, of len steps and L label classes.
  TS_XINLINE void Solve(int64_t n, int64_t len, int64_t L, double* scratch) const {
    const CtcProblem<T> q{act + n * C, len,   N * C,        C,      labels + n * Lmax,
                          L,           blank, grad + n * C, scratch};
    const double l = CtcSequence(q);
    if (req == kAddTo)
      loss[n] = static_cast<T>(static_cast<double>(loss[n]) + l);
    else if (req != kNullOp)
      loss[n] = static_cast<T>(l);
  }
};

// The batch of the forward's data, loss and gradient blobs, its labels on
// the host.
template <typename T>
CtcBatch<T> MakeCtcBatch(const CtcLabels& lab, const TBlob& data, const TBlob& loss_out,
                         OpReqType req, const TBlob& grad_out) {
  const Shape& d = data.shape();
  return {
      data.dptr<T>(),     d[1], d[2], lab.labels.data(), lab.Lmax, lab.blank, grad_out.dptr<T>(),
      loss_out.dptr<T>(), req};
}

// Reads an integer-valued input of any dtype held on the host.
std::vector<int64_t> CtcReadInts(const TBlob& host, const char* what);
// Reads and checks the labels and lengths (inputs 1...) on the host.
CtcLabels CtcCheckLabels(const NodeAttrs& attrs, const std::vector<TBlob>& host_in, int64_t steps,
                         int64_t classes, int64_t batch);

// The device half: the inputs' integers on the host; every sequence's loss
// and gradient.
template <typename xpu>
struct CtcKernels;

template <typename xpu>
void CtcForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const Shape& d = in[0].shape();
  const CtcLabels lab = CtcKernels<xpu>::CheckLabels(attrs, ctx, in, d[0], d[2], d[1]);
  ForFloatAndDouble(attrs, in[0].dtype(), "CTCLoss", [&](auto zero) {
    using T = decltype(zero);
    CtcKernels<xpu>::template Run<T>(ctx, lab, in[0], out[0], req[0], out[1]);
  });
}

// Element i of (T, N, C): the forward's gradient scaled by its sequence's
// output gradient.
struct CtcBackwardElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, int64_t N, int64_t C, const T* og, const T* g, T* dx,
                             OpReqType req) {
    const T v = g[i] * og[i / C % N];
    if (req == kAddTo)
      dx[i] += v;
    else if (req != kNullOp)
      dx[i] = v;
  }
};

// Inputs: ograd (N,), the forward's gradient (T, N, C); output: ddata.
template <typename xpu>
void CtcBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[1].dtype(), "_backward_CTCLoss", [&](auto zero) {
    using T = decltype(zero);
    const Shape& d = in[1].shape();
    Kernel<CtcBackwardElem, xpu>::Launch(ctx.run_ctx, in[1].Size(), d[1], d[2], in[0].dptr<T>(),
                                         in[1].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
}

}  // namespace tessera::op
