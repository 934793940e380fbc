// SVMOutput (MXNet's): parameters, the label check and the element kernels
// shared by the CPU (svm_output.cc) and GPU (svm_output.cu) registrations.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

struct SVMOutputParam : Params<SVMOutputParam> {
  float margin = 1.f, regularization_coefficient = 1.f;
  bool use_linear = false;
  static void Declare(ParamDecl<SVMOutputParam>& d) {
    d.field("margin", &SVMOutputParam::margin)
        .set_default(1.f)
        .describe("The margin of the hinge loss.");
    d.field("regularization_coefficient", &SVMOutputParam::regularization_coefficient)
        .set_default(1.f)
        .describe("Scale of the gradient.");
    d.field("use_linear", &SVMOutputParam::use_linear)
        .set_default(false)
        .describe("The L1 (linear) hinge loss instead of the squared (L2) one.");
  }
};

// data (..., K), label data's shape without the last axis.
inline bool SVMShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  TS_CHECK(d.ndim() >= 2) << OpLabel(attrs) << ": data has shape " << d
                          << "; it needs a class axis last and one or more axes before it";
  AssignShape(attrs, in, 1, Shape(d.begin(), d.end() - 1), "label");
  AssignShape(attrs, out, 0, d, "output");
  return true;
}

// Each row's class as int64; a label that is no whole class in [0, k) is an
// error naming its row.
template <typename T>
std::vector<int64_t> CheckedSvmLabels(const NodeAttrs& attrs, const T* label, int64_t rows,
                                      int64_t k) {
  std::vector<int64_t> y(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const double lv = static_cast<double>(label[r]);
    TS_CHECK(lv >= 0 && lv < double(k) && lv == double(int64_t(lv)))
        << OpLabel(attrs) << ": label[" << r << "] = " << lv << " is not a class in [0, " << k
        << ")";
    y[static_cast<size_t>(r)] = static_cast<int64_t>(lv);
  }
  return y;
}

// The checked labels where the kernels read them: the host vector itself
// on the CPU; on the GPU the labels are copied to the host, checked, and
// uploaded into temp space (svm_output.cu), so the op waits for its stream.
template <typename xpu>
struct SvmLabels {
  template <typename T>
  static const int64_t* Get(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& label,
                            int64_t rows, int64_t k, std::vector<int64_t>* keep);
};

template <>
template <typename T>
const int64_t* SvmLabels<cpu>::Get(const NodeAttrs& attrs, const OpContext&, const TBlob& label,
                                   int64_t rows, int64_t k, std::vector<int64_t>* keep) {
  *keep = CheckedSvmLabels(attrs, label.dptr<T>(), rows, k);
  return keep->data();
}

// With o the output, y the label's class and c the coefficient: L1 gives
// -c [margin > o_y] at y and c [margin > -o_j] elsewhere; L2 -2c (margin -
// o_y) and 2c (margin + o_j) where those are positive, else 0.
template <int req>
struct svm_grad {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* g, const T* o, const int64_t* y, int64_t k, double m,
                             double c, bool linear) {
    const double v = static_cast<double>(o[i]);
    double d;
    if (i % k == y[i / k])
      d = linear ? (m > v ? -c : 0) : (m > v ? -2 * c * (m - v) : 0);
    else
      d = linear ? (m > -v ? c : 0) : (m > -v ? 2 * c * (m + v) : 0);
    AssignReq<req>(g[i], d);
  }
};

template <int req>
struct svm_zero {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out) {
    AssignReq<req>(out[i], T(0));
  }
};

template <typename xpu>
void SVMForward(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp || in[0].dptr_ == out[0].dptr_) return;
  SwitchFloatDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<dense_copy_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                      in[0].dptr<T>());
    });
  });
}

// in: label, out; outputs: d data, d label (zero).
template <typename xpu>
void SVMBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SVMOutputParam>(attrs);
  const int64_t k = in[1].shape()[in[1].ndim() - 1], rows = in[1].Size() / k;
  ForFloatAndDouble(attrs, in[1].dtype(), "_backward_SVMOutput", [&](auto zero) {
    using T = decltype(zero);
    std::vector<int64_t> keep;
    const int64_t* y = SvmLabels<xpu>::template Get<T>(attrs, ctx, in[0], rows, k, &keep);
    if (req[0] != kNullOp)
      SwitchReq(req[0], [&](auto r) {
        Kernel<svm_grad<r.value>, xpu>::Launch(ctx.run_ctx, rows * k, out[0].dptr<T>(),
                                               in[1].dptr<T>(), y, k, double(p.margin),
                                               double(p.regularization_coefficient), p.use_linear);
      });
    if (req[1] != kNullOp)
      SwitchReq(req[1], [&](auto r) {
        Kernel<svm_zero<r.value>, xpu>::Launch(ctx.run_ctx, out[1].Size(), out[1].dptr<T>());
      });
  });
}

}  // namespace tessera::op
