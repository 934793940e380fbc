// MakeLoss's parameters and the identity forward BlockGrad and MakeLoss
// share, for the CPU (make_loss.cc) and GPU (make_loss.cu) registrations.
#pragma once

#include <type_traits>
#include <vector>

#include "ops/nn/nn_common.h"

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

template <int req>
struct copy_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in) {
    AssignReq<req>(out[i], in[i]);
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
            Kernel<copy_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                      in[0].dptr<T>());
          }
        });
      },
      attrs.op->name().c_str());
}

}  // namespace tessera::op
