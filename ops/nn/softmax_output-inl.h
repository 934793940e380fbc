// SoftmaxOutput (alias Softmax): softmax forward, and as backward the
// gradient of the cross-entropy loss, (softmax - one_hot(label)) * scale,
// ignoring the head gradient unless out_grad is set. MXNet's parameters and
// semantics (src/operator/softmax_output-inl.h, mshadow's SoftmaxGrad).
#pragma once

#include <cmath>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "ops/tensor/softmax_op-inl.h"

namespace tessera::op {

namespace softmaxout {
enum Normalization { kNull = 0, kBatch = 1, kValid = 2 };
}  // namespace softmaxout

struct SoftmaxOutputParam : Params<SoftmaxOutputParam> {
  float grad_scale = 1.f;
  float ignore_label = -1.f;
  bool multi_output = false;
  bool use_ignore = false;
  bool preserve_shape = false;
  int normalization = softmaxout::kNull;
  bool out_grad = false;
  float smooth_alpha = 0.f;
  static void Declare(ParamDecl<SoftmaxOutputParam>& d) {
    d.field("grad_scale", &SoftmaxOutputParam::grad_scale)
        .set_default(1.f)
        .describe("Scales the gradient by a float factor.");
    d.field("ignore_label", &SoftmaxOutputParam::ignore_label)
        .set_default(-1.f)
        .describe(
            "The instances whose `labels` == `ignore_label` will be ignored during backward, "
            "if `use_ignore` is set to ``true``).");
    d.field("multi_output", &SoftmaxOutputParam::multi_output)
        .set_default(false)
        .describe(
            "If set to ``true``, the softmax function will be computed along axis ``1``. This "
            "is applied when the shape of input array differs from the shape of label array.");
    d.field("use_ignore", &SoftmaxOutputParam::use_ignore)
        .set_default(false)
        .describe(
            "If set to ``true``, the `ignore_label` value will not contribute to the backward "
            "gradient.");
    d.field("preserve_shape", &SoftmaxOutputParam::preserve_shape)
        .set_default(false)
        .describe(
            "If set to ``true``, the softmax function will be computed along the last axis "
            "(``-1``).");
    d.field("normalization", &SoftmaxOutputParam::normalization)
        .set_default(softmaxout::kNull)
        .add_enum("null", softmaxout::kNull)
        .add_enum("batch", softmaxout::kBatch)
        .add_enum("valid", softmaxout::kValid)
        .describe("Normalizes the gradient.");
    d.field("out_grad", &SoftmaxOutputParam::out_grad)
        .set_default(false)
        .describe("Multiplies gradient with output gradient element-wise.");
    d.field("smooth_alpha", &SoftmaxOutputParam::smooth_alpha)
        .set_default(0.f)
        .set_range(0.f, 1.f)
        .describe(
            "Constant for computing a label smoothed version of cross-entropy for the "
            "backwards pass.  This constant gets subtracted from the one-hot encoding of the "
            "gold label and distributed uniformly to all other labels.");
  }
};

// How the forward sees the data: multi_output (n, k, rest) along axis 1;
// preserve_shape (rest, last) along the last axis; otherwise (n, rest).
inline SoftmaxGeom SoftmaxOutputGeom(const Shape& s, const SoftmaxOutputParam& p) {
  SoftmaxGeom g;
  const int64_t size = s.Size();
  if (size == 0) return {0, 1, 1};
  if (p.multi_output) {
    g.outer = s[0];
    g.len = s.ndim() > 1 ? s[1] : 1;
    g.inner = size / g.outer / g.len;
  } else if (p.preserve_shape) {
    g.len = s[s.ndim() - 1];
    g.outer = size / g.len;
  } else {
    g.outer = s[0];
    g.len = size / g.outer;
  }
  return g;
}

template <typename xpu>
void SoftmaxOutputForward(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<SoftmaxOutputParam>(attrs);
  const SoftmaxGeom g = SoftmaxOutputGeom(in[0].shape(), p);
  if (in[0].shape().Size() == 0) return;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        RunSoftmax<false>(xpu{}, ctx, g, in[0].dptr<T>(), out[0].dptr<T>(), 1.0, req[0]);
      },
      "SoftmaxOutput");
}

// Backward inputs: label, out[, ograd when out_grad]. Outputs: the data
// gradient and the label gradient (zeros).
template <typename T>
void SoftmaxOutputBackwardCpu(const RunContext& rctx, const SoftmaxOutputParam& p,
                              const TBlob& label_b, const TBlob& out_b, const TBlob* ograd_b,
                              const TBlob& grad_b, OpReqType req) {
  using A = AccType<T>;
  const T* label = label_b.dptr<T>();
  const T* out = out_b.dptr<T>();
  const T* og = ograd_b ? ograd_b->dptr<T>() : nullptr;
  T* grad = grad_b.dptr<T>();
  const int64_t size = out_b.shape().Size();
  if (size == 0) return;
  auto store = [&](int64_t i, A v) {
    if (og) v *= static_cast<A>(og[i]);
    SoftmaxStore(grad[i], v, req);
  };
  const int ignore = static_cast<int>(p.ignore_label);

  if (label_b.shape() == out_b.shape()) {
    // Probabilities as labels.
    for (int64_t i = 0; i < size; ++i)
      store(i, (static_cast<A>(out[i]) - static_cast<A>(label[i])) * static_cast<A>(p.grad_scale));
    return;
  }
  const SoftmaxGeom g = SoftmaxOutputGeom(out_b.shape(), p);
  if (p.multi_output) {
    // out (n, k, inner), label (n, inner).
    const int64_t n_labels = g.outer * g.inner;
    int64_t valid = n_labels;
    if (p.normalization == softmaxout::kBatch) {
      valid = g.outer;
    } else if (p.normalization == softmaxout::kValid) {
      for (int64_t j = 0; j < n_labels; ++j)
        if (static_cast<int>(static_cast<A>(label[j])) == ignore) --valid;
      if (valid == 0) valid = 1;
    } else {
      valid = 1;
    }
    const double scale = double(p.grad_scale) /
                         double(p.normalization == softmaxout::kValid ? 1 : g.inner) /
                         double(valid);
    for (int64_t m = 0; m < g.outer; ++m)
      for (int64_t y = 0; y < g.inner; ++y) {
        const int k = static_cast<int>(static_cast<A>(label[m * g.inner + y]));
        const bool skip = p.use_ignore && k == ignore;
        for (int64_t x = 0; x < g.len; ++x) {
          const int64_t i = (m * g.len + x) * g.inner + y;
          A v = skip ? A(0) : static_cast<A>(out[i]) - (x == k ? A(1) : A(0));
          store(i, v * static_cast<A>(scale));
        }
      }
    return;
  }
  // out (rows, k), one label per row.
  const int64_t rows = g.outer, k_len = g.len;
  const int64_t n_labels = label_b.shape().Size();
  int64_t valid = n_labels;
  if (p.normalization == softmaxout::kBatch) {
    valid = n_labels;
  } else if (p.normalization == softmaxout::kValid) {
    for (int64_t j = 0; j < n_labels; ++j)
      if (static_cast<int>(static_cast<A>(label[j])) == ignore) --valid;
    if (valid == 0) valid = 1;
  } else {
    valid = 1;
  }
  const A scale = static_cast<A>(double(p.grad_scale) / double(valid));
  const A alpha = static_cast<A>(p.smooth_alpha);
  const A smooth = k_len > 1 ? static_cast<A>(p.smooth_alpha / float(k_len - 1)) : A(0);
  [[maybe_unused]] const int threads = CpuThreads(rctx, size);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t r = 0; r < rows; ++r) {
    const int k = r < n_labels ? static_cast<int>(static_cast<A>(label[r])) : -1;
    const bool skip = p.use_ignore && k == ignore;
    for (int64_t x = 0; x < k_len; ++x) {
      const int64_t i = r * k_len + x;
      A v;
      if (skip)
        v = A(0);
      else if (x == k)
        v = static_cast<A>(out[i]) - A(1) + alpha;
      else
        v = static_cast<A>(out[i]) - smooth;
      store(i, v * scale);
    }
  }
}

// Writes zeros according to req (the gradient of an input that gets none).
template <typename T>
void FillZeroReq(const TBlob& b, OpReqType req) {
  if (req == kNullOp || req == kAddTo) return;
  T* p = b.dptr<T>();
  const int64_t n = b.shape().Size();
  for (int64_t i = 0; i < n; ++i) p[i] = T(0);
}

}  // namespace tessera::op
