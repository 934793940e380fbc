// CTCLoss on the CPU (the sequences shared among the op's threads, each
// with scratch of its own), the host checks of the labels, and the
// registration; the recursions are in ctc_loss-inl.h.
//
// Inputs: data (T, N, C) unnormalised activations, label (N, L) padded,
// [data_lengths (N,)], [label_lengths (N,)]. Outputs: loss (N,) and, hidden,
// the gradient of each loss with respect to data, computed with it, which
// the backward scales by the output gradient. The loss is not normalised by
// the label length (MXNet's rule; PyTorch's default 'mean' reduction divides
// by it).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/nn/ctc_loss-inl.h"

namespace tessera::op {

std::vector<int64_t> CtcReadInts(const TBlob& b, const char* what) {
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

CtcLabels CtcCheckLabels(const NodeAttrs& attrs, const std::vector<TBlob>& in, int64_t T_,
                         int64_t C, int64_t N) {
  const CTCLossParam& p = CtcParams(attrs);
  CtcLabels r;
  r.Lmax = in[1].shape()[1];
  const std::vector<int64_t> labels = CtcReadInts(in[1], "CTCLoss label");
  size_t next = 2;
  std::vector<int64_t> data_len(static_cast<size_t>(N), T_), label_len(static_cast<size_t>(N), -1);
  if (p.use_data_lengths) data_len = CtcReadInts(in[next++], "CTCLoss data_lengths");
  if (p.use_label_lengths) label_len = CtcReadInts(in[next], "CTCLoss label_lengths");
  const int64_t blank = p.blank_label == kBlankFirst ? 0 : C - 1;
  const int64_t pad = p.blank_label == kBlankFirst ? 0 : -1;
  r.blank = blank;
  r.labels.assign(static_cast<size_t>(N * r.Lmax), 0);
  r.label_len.resize(static_cast<size_t>(N));
  r.steps = data_len;
  for (int64_t n = 0; n < N; ++n) {
    const size_t un = static_cast<size_t>(n);
    TS_CHECK(data_len[un] >= 0 && data_len[un] <= T_)
        << OpLabel(attrs) << ": data_lengths[" << n << "] = " << data_len[un] << " is outside [0, "
        << T_ << "]";
    int64_t len = label_len[un];
    if (!p.use_label_lengths) {
      len = 0;
      while (len < r.Lmax && labels[static_cast<size_t>(n * r.Lmax + len)] != pad) ++len;
    }
    TS_CHECK(len >= 0 && len <= r.Lmax) << OpLabel(attrs) << ": label_lengths[" << n
                                        << "] = " << len << " is outside [0, " << r.Lmax << "]";
    for (int64_t i = 0; i < len; ++i) {
      const int64_t k = labels[static_cast<size_t>(n * r.Lmax + i)];
      TS_CHECK(k >= 0 && k < C && k != blank)
          << OpLabel(attrs) << ": label[" << n << ", " << i << "] = " << k << " is not a class of "
          << C << " other than the blank (" << blank << ")";
      r.labels[static_cast<size_t>(n * r.Lmax + i)] = k;
    }
    r.label_len[un] = len;
  }
  return r;
}

template <>
struct CtcKernels<cpu> {
  static CtcLabels CheckLabels(const NodeAttrs& attrs, const OpContext&,
                               const std::vector<TBlob>& in, int64_t T_, int64_t C, int64_t N) {
    return CtcCheckLabels(attrs, in, T_, C, N);
  }
  template <typename T>
  static void Run(const OpContext& ctx, const CtcLabels& lab, const TBlob& data,
                  const TBlob& loss_out, OpReqType req, const TBlob& grad_out) {
    const CtcBatch<T> b = MakeCtcBatch<T>(lab, data, loss_out, req, grad_out);
    std::fill(b.grad, b.grad + grad_out.Size(), T(0));
    const int threads =
        static_cast<int>(std::min<int64_t>(std::max(1, ctx.run_ctx.omp_threads), b.N));
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      std::vector<double> scratch;
#pragma omp for schedule(dynamic)
      for (int64_t n = 0; n < b.N; ++n) {
        const size_t un = static_cast<size_t>(n);
        const int64_t len = lab.steps[un], L = lab.label_len[un];
        scratch.resize(static_cast<size_t>(b.Scratch(len, L)));
        b.Solve(n, len, L, scratch.data());
      }
    }
  }
};

namespace {

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

std::vector<NodeEntry> CtcGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  std::vector<NodeEntry> r = MakeGradNode("_backward_CTCLoss", n, {ograds[0], NodeEntry{n, 1, 0}});
  for (size_t i = 1; i < n->inputs.size(); ++i)  // labels and lengths get none
    r.push_back(MakeNode("zeros_like", n->attrs.name + "_in" + std::to_string(i) + "_zerograd",
                         {n->inputs[i]}));
  return r;
}

// The GPU keeps every sequence's scratch and labels in temp space.
std::vector<ResourceRequest> CtcTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
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
    .set_attr<FResourceRequest>("FResourceRequest", CtcTempSpace)
    .set_attr<FCompute>(kFComputeCPU, CtcForward<cpu>)
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
    .set_attr<FCompute>(kFComputeCPU, CtcBackward<cpu>);

}  // namespace tessera::op
