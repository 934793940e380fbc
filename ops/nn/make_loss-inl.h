// MakeLoss's parameters, the identity forward BlockGrad and MakeLoss share,
// and MakeLoss's backward, for the CPU (make_loss.cc) and GPU (make_loss.cu)
// registrations.
#pragma once

#include <type_traits>
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

namespace makeloss {
enum Normalization { kNull, kBatch, kValid };
}  // namespace makeloss

struct MakeLossParam : Params<MakeLossParam> {
  float grad_scale = 1.f, valid_thresh = 0.f;
  int normalization = makeloss::kNull;
  static void Declare(ParamDecl<MakeLossParam>& d) {
    d.field("grad_scale", &MakeLossParam::grad_scale)
        .set_default(1.f)
        .describe("The gradient the backward gives every element (before normalization).");
    d.field("valid_thresh", &MakeLossParam::valid_thresh)
        .set_default(0.f)
        .describe(
            "With normalization='valid', only elements whose value is above this are "
            "counted.");
    d.field("normalization", &MakeLossParam::normalization)
        .set_default(makeloss::kNull)
        .add_enum("null", makeloss::kNull)
        .add_enum("batch", makeloss::kBatch)
        .add_enum("valid", makeloss::kValid)
        .describe(
            "'null': the gradient is grad_scale; 'batch': grad_scale / batch size (the first "
            "axis); 'valid': grad_scale / max(1, the number of elements above valid_thresh), "
            "for every element.");
  }
};

template <typename xpu>
void IdentityForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kWriteInplace || req[0] == kNullOp) return;
  if (req[0] == kWriteTo && in[0].dptr_ == out[0].dptr_) return;
  SwitchDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req[0], [&](auto r) {
          if constexpr (std::is_same_v<T, bool> && r.value == kAddTo) {
            TS_THROW << OpLabel(attrs) << ": cannot add into a bool array";
          } else {
            Kernel<dense_copy_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(),
                                                            out[0].dptr<T>(), in[0].dptr<T>());
          }
        });
      },
      attrs.op->name().c_str());
}

// grad = scale, divided by *count when given (normalization='valid').
template <int req>
struct make_loss_grad {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* grad, float scale, const int64_t* count) {
    AssignReq<req>(grad[i], static_cast<T>(count ? scale / static_cast<float>(*count) : scale));
  }
};

// MakeLossCount<xpu>::Run(ctx, y, n, thresh, count): *count = max(1, the
// number of the n elements of y above thresh), where y lives.
template <typename xpu>
struct MakeLossCount;

// Input: the forward output. Output: the data gradient, the same for every
// element: with 'valid', MXNet's make_loss-inl.h divides grad_scale by
// max(1, count above valid_thresh) and gives it to all of them.
template <typename xpu>
void MakeLossBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<MakeLossParam>(attrs);
  SwitchFloatDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t n = in[0].Size();
        float scale = p.grad_scale;
        int64_t* count = nullptr;
        if (p.normalization == makeloss::kBatch) {
          scale /= static_cast<float>(in[0].shape()[0]);
        } else if (p.normalization == makeloss::kValid) {
          count = ctx.requested.at(0).get_space_typed<int64_t>(1);
          MakeLossCount<xpu>::Run(ctx, in[0].dptr<T>(), n, p.valid_thresh, count);
        }
        SwitchReq(req[0], [&](auto r) {
          Kernel<make_loss_grad<r.value>, xpu>::Launch(ctx.run_ctx, n, out[0].dptr<T>(), scale,
                                                       static_cast<const int64_t*>(count));
        });
      },
      "_backward_MakeLoss");
}

}  // namespace tessera::op
