// CTCLoss: connectionist temporal classification (Graves et al., 2006), as
// MXNet's (which follows Baidu's warp-ctc): the negative log likelihood of
// each label sequence under the per-step softmax of the activations, summed
// over every alignment, by the forward-backward recursions in log space.
// The loss is not normalised by the label length (MXNet's rule; PyTorch's
// default 'mean' reduction divides by it).
//
// Inputs: data (T, N, C) unnormalised activations, label (N, L) padded,
// [data_lengths (N,)], [label_lengths (N,)]. Outputs: loss (N,) and, hidden,
// the gradient of each loss with respect to data, computed with it, which
// the backward scales by the output gradient.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

namespace {

const CTCLossParam& CtcParams(const NodeAttrs& attrs) {
  return ParamsOf<CTCLossParam>(attrs);
}

uint32_t CtcNumInputs(const NodeAttrs& attrs) {
  const auto& p = CtcParams(attrs);
  return 2 + (p.use_data_lengths ? 1 : 0) + (p.use_label_lengths ? 1 : 0);
}

std::vector<std::string> CtcInputNames(const NodeAttrs& attrs) {
  std::vector<std::string> names{"data", "label"};
  if (CtcParams(attrs).use_data_lengths) names.push_back("data_lengths");
  if (CtcParams(attrs).use_label_lengths) names.push_back("label_lengths");
  return names;
}

bool CtcShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == CtcNumInputs(attrs)) << OpLabel(attrs) << ": expects "
                                              << CtcNumInputs(attrs) << " inputs (" <<
      [&] {
        std::string s;
        for (const std::string& n : CtcInputNames(attrs)) s += (s.empty() ? "" : ", ") + n;
        return s;
      }() << "), got " << in->size();
  const Shape& d = (*in)[0];
  if (d.ndim() == 0) return false;
  TS_CHECK(d.ndim() == 3) << OpLabel(attrs)
                          << ": data must be (sequence, batch, classes), got shape " << d;
  const Shape& l = (*in)[1];
  if (l.ndim() > 0) {
    TS_CHECK(l.ndim() == 2 && (l[0] == 0 || d[1] == 0 || l[0] == d[1]))
        << OpLabel(attrs) << ": label must be (batch, label length) with batch " << d[1]
        << " as data " << d << ", got shape " << l;
  }
  size_t next = 2;
  if (CtcParams(attrs).use_data_lengths)
    AssignNamed(attrs, in, next++, Shape{d[1]}, "data_lengths", "(batch,)");
  if (CtcParams(attrs).use_label_lengths)
    AssignNamed(attrs, in, next, Shape{d[1]}, "label_lengths", "(batch,)");
  AssignShape(attrs, out, 0, Shape{d[1]}, "output");
  AssignShape(attrs, out, 1, d, "output");
  return d.known() && AllKnown(*in);
}

bool CtcType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> data{(*in)[0]};
  const bool ok = SameTypeAll(attrs, &data, out);
  CheckFloatTypes(attrs, data, *out);
  (*in)[0] = data[0];
  for (size_t i = 1; i < in->size(); ++i)
    if ((*in)[i] == DType::kUnknown) (*in)[i] = data[0];
  return ok && AllKnown(*in);
}

// Reads an integer-valued input of any dtype.
std::vector<int64_t> ReadInts(const TBlob& b, const char* what) {
  std::vector<int64_t> v(static_cast<size_t>(b.Size()));
  SwitchDType(
      b.dtype(),
      [&](auto tag) {
        using L = typename decltype(tag)::type;
        const L* p = b.dptr<L>();
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = static_cast<int64_t>(std::llround(static_cast<double>(p[i])));
      },
      what);
  return v;
}

double LogAdd(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

// One sequence: its loss, and the gradient of the loss with respect to its
// activations (steps t < len) written into grad (T rows of C, ld).
template <typename T>
double CtcOne(const T* act, int64_t len, int64_t ld, int64_t C, const std::vector<int64_t>& label,
              int64_t blank, T* grad) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const int64_t L = static_cast<int64_t>(label.size()), S = 2 * L + 1;
  // log softmax per step.
  std::vector<double> lp(static_cast<size_t>(len * C));
  for (int64_t t = 0; t < len; ++t) {
    const T* a = act + t * ld;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < C; ++k) m = std::max(m, static_cast<double>(a[k]));
    double z = 0;
    for (int64_t k = 0; k < C; ++k) z += std::exp(static_cast<double>(a[k]) - m);
    const double lz = m + std::log(z);
    for (int64_t k = 0; k < C; ++k) lp[t * C + k] = static_cast<double>(a[k]) - lz;
  }
  auto sym = [&](int64_t s) { return s % 2 == 0 ? blank : label[static_cast<size_t>(s / 2)]; };
  // May s take its path from s - 2 (a label different from the one before)?
  auto skip = [&](int64_t s) { return s >= 2 && s % 2 == 1 && sym(s) != sym(s - 2); };
  std::vector<double> alpha(static_cast<size_t>(len * S), kNegInf), beta(alpha);
  if (len > 0) {
    alpha[0] = lp[sym(0)];
    if (S > 1) alpha[1] = lp[sym(1)];
  }
  for (int64_t t = 1; t < len; ++t)
    for (int64_t s = 0; s < S; ++s) {
      double v = alpha[(t - 1) * S + s];
      if (s >= 1) v = LogAdd(v, alpha[(t - 1) * S + s - 1]);
      if (skip(s)) v = LogAdd(v, alpha[(t - 1) * S + s - 2]);
      alpha[t * S + s] = v == kNegInf ? kNegInf : v + lp[t * C + sym(s)];
    }
  if (len > 0) {
    beta[(len - 1) * S + S - 1] = lp[(len - 1) * C + sym(S - 1)];
    if (S > 1) beta[(len - 1) * S + S - 2] = lp[(len - 1) * C + sym(S - 2)];
  }
  for (int64_t t = len - 2; t >= 0; --t)
    for (int64_t s = S - 1; s >= 0; --s) {
      double v = beta[(t + 1) * S + s];
      if (s + 1 < S) v = LogAdd(v, beta[(t + 1) * S + s + 1]);
      if (s + 2 < S && skip(s + 2)) v = LogAdd(v, beta[(t + 1) * S + s + 2]);
      beta[t * S + s] = v == kNegInf ? kNegInf : v + lp[t * C + sym(s)];
    }
  double logp = kNegInf;
  if (len > 0) {
    logp = alpha[(len - 1) * S + S - 1];
    if (S > 1) logp = LogAdd(logp, alpha[(len - 1) * S + S - 2]);
  } else if (L == 0) {
    logp = 0;  // the empty label on an empty sequence: certain
  }
  if (logp == kNegInf) {  // no alignment fits (label too long): loss inf, no gradient
    for (int64_t t = 0; t < len; ++t) std::fill(grad + t * ld, grad + t * ld + C, T(0));
    return std::numeric_limits<double>::infinity();
  }
  // d(-log p)/d a_t(k) = y_t(k) - sum_{s: l'_s = k} alpha_t(s) beta_t(s) / (p y_t(k)).
  std::vector<double> occ(static_cast<size_t>(C));
  for (int64_t t = 0; t < len; ++t) {
    std::fill(occ.begin(), occ.end(), kNegInf);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t k = sym(s);
      occ[k] = LogAdd(occ[k], alpha[t * S + s] + beta[t * S + s]);
    }
    for (int64_t k = 0; k < C; ++k) {
      const double y = std::exp(lp[t * C + k]);
      const double o = occ[k] == kNegInf ? 0 : std::exp(occ[k] - lp[t * C + k] - logp);
      grad[t * ld + k] = static_cast<T>(y - o);
    }
  }
  return -logp;
}

template <typename T>
void CtcForwardTyped(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const CTCLossParam& p = CtcParams(attrs);
  const Shape& d = in[0].shape();
  const int64_t T_ = d[0], N = d[1], C = d[2];
  const int64_t Lmax = in[1].shape()[1];
  const std::vector<int64_t> labels = ReadInts(in[1], "CTCLoss label");
  size_t next = 2;
  std::vector<int64_t> data_len(static_cast<size_t>(N), T_), label_len(static_cast<size_t>(N), -1);
  if (p.use_data_lengths) data_len = ReadInts(in[next++], "CTCLoss data_lengths");
  if (p.use_label_lengths) label_len = ReadInts(in[next], "CTCLoss label_lengths");
  const int64_t blank = p.blank_label == kBlankFirst ? 0 : C - 1;
  const int64_t pad = p.blank_label == kBlankFirst ? 0 : -1;
  // Every row's label, checked before any work.
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    const size_t un = static_cast<size_t>(n);
    TS_CHECK(data_len[un] >= 0 && data_len[un] <= T_)
        << OpLabel(attrs) << ": data_lengths[" << n << "] = " << data_len[un] << " is outside [0, "
        << T_ << "]";
    int64_t len = label_len[un];
    if (!p.use_label_lengths) {
      len = 0;
      while (len < Lmax && labels[static_cast<size_t>(n * Lmax + len)] != pad) ++len;
    }
    TS_CHECK(len >= 0 && len <= Lmax) << OpLabel(attrs) << ": label_lengths[" << n << "] = " << len
                                      << " is outside [0, " << Lmax << "]";
    for (int64_t i = 0; i < len; ++i) {
      const int64_t k = labels[static_cast<size_t>(n * Lmax + i)];
      TS_CHECK(k >= 0 && k < C && k != blank)
          << OpLabel(attrs) << ": label[" << n << ", " << i << "] = " << k << " is not a class of "
          << C << " other than the blank (" << blank << ")";
      rows[un].push_back(k);
    }
  }
  T* grad = out[1].dptr<T>();
  T* loss = out[0].dptr<T>();
  std::fill(grad, grad + out[1].Size(), T(0));
  const T* act = in[0].dptr<T>();
  const int threads = static_cast<int>(std::min<int64_t>(std::max(1, ctx.run_ctx.omp_threads), N));
#pragma omp parallel for num_threads(threads) schedule(dynamic) if (threads > 1)
  for (int64_t n = 0; n < N; ++n) {
    const size_t un = static_cast<size_t>(n);
    const double l = CtcOne(act + n * C, data_len[un], N * C, C, rows[un], blank, grad + n * C);
    if (req[0] == kAddTo)
      loss[n] = static_cast<T>(static_cast<double>(loss[n]) + l);
    else if (req[0] != kNullOp)
      loss[n] = static_cast<T>(l);
  }
}

void CtcForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  ForFloatAndDouble(attrs, in[0].dtype(), "CTCLoss",
                    [&](auto zero) { CtcForwardTyped<decltype(zero)>(attrs, ctx, in, req, out); });
}

// Inputs: ograd (N,), the forward's gradient (T, N, C); output: ddata.
void CtcBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  ForFloatAndDouble(attrs, in[1].dtype(), "_backward_CTCLoss", [&](auto zero) {
    using T = decltype(zero);
    const Shape& d = in[1].shape();
    const int64_t N = d[1], C = d[2], rows = d[0] * N;
    const T* og = in[0].dptr<T>();
    const T* g = in[1].dptr<T>();
    T* dx = out[0].dptr<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T s = og[r % N];
      for (int64_t k = 0; k < C; ++k) {
        const T v = g[r * C + k] * s;
        if (req[0] == kAddTo)
          dx[r * C + k] += v;
        else if (req[0] != kNullOp)
          dx[r * C + k] = v;
      }
    }
  });
}

std::vector<NodeEntry> CtcGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  std::vector<NodeEntry> r = MakeGradNode("_backward_CTCLoss", n, {ograds[0], NodeEntry{n, 1, 0}});
  for (size_t i = 1; i < n->inputs.size(); ++i)  // labels and lengths get none
    r.push_back(MakeNode("zeros_like", n->attrs.name + "_in" + std::to_string(i) + "_zerograd",
                         {n->inputs[i]}));
  return r;
}

}  // namespace

TS_REGISTER_OP(CTCLoss)
    .describe(R"(Connectionist temporal classification loss, as MXNet's (after warp-ctc):
per sequence, -log of the probability of its label summed over every
alignment of the label to the steps, the per-step distribution being the
softmax of the activations over the classes. data (sequence, batch,
classes); label (batch, max label length), padded with 0 (blank_label
'first', where class 0 is the blank) or -1 ('last', the last class is the
blank), or cut by label_lengths. Returns (batch,); not divided by the label
length. A label that no alignment fits (too long for its sequence) gives
an infinite loss and a zero gradient.)")
    .set_num_inputs(CtcNumInputs)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<CTCLossParam>)
    .add_alias("ctc_loss")
    .add_alias("_contrib_CTCLoss")
    .add_alias("_contrib_ctc_loss")
    .add_argument("data", "NDArray", "Activations before the softmax, (sequence, batch, classes).")
    .add_argument("label", "NDArray", "Labels, (batch, max label length), padded.")
    .add_argument("data_lengths", "NDArray", "With use_data_lengths: each sequence's length.")
    .add_argument("label_lengths", "NDArray", "With use_label_lengths: each label's length.")
    .add_arguments(CTCLossParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", CtcInputNames)
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "grad"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", CtcShape)
    .set_attr<FInferType>("FInferType", CtcType)
    .set_attr<FCompute>(kFComputeCPU, CtcForward)
    .set_attr<FGradient>("FGradient", CtcGrad);

TS_REGISTER_OP(_backward_CTCLoss)
    .describe("Gradient of CTCLoss: the forward's gradient scaled per sequence by ograd.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<CTCLossParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             // The kernel reads grad as (T, N, C) and ograd as (N,).
                             const Shape& g = (*in)[1];
                             if (g.ndim() > 0) {
                               TS_CHECK(g.ndim() == 3)
                                   << OpLabel(attrs) << ": the forward's gradient must be "
                                   << "(sequence, batch, classes), got " << g;
                               if (g.known()) AssignShape(attrs, in, 0, Shape{g[1]}, "ograd");
                             }
                             AssignShape(attrs, out, 0, g, "output");
                             return g.known() && (*in)[0].known();
                           })
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs&, std::vector<DType>* in, std::vector<DType>* out) {
                            if ((*out)[0] == DType::kUnknown) (*out)[0] = (*in)[1];
                            return (*in)[1] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, CtcBackward);

}  // namespace tessera::op
