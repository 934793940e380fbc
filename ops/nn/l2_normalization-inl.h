// L2Normalization (MXNet's): parameters, geometry, shapes and the
// computation over L2Kernels<xpu>, shared by the CPU (l2_normalization.cc)
// and GPU (l2_normalization.cu) registrations. The data is seen as
// (outer, red, inner): the norm of (o, i) sums the squares over red.
#pragma once

#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum L2Mode { kL2Instance, kL2Channel, kL2Spatial };

struct L2NormalizationParam : Params<L2NormalizationParam> {
  float eps = 1e-10f;
  int mode = kL2Instance;
  static void Declare(ParamDecl<L2NormalizationParam>& d) {
    d.field("eps", &L2NormalizationParam::eps)
        .set_default(1e-10f)
        .describe("Added to the sum of squares inside the square root.");
    d.field("mode", &L2NormalizationParam::mode)
        .add_enum("instance", kL2Instance)
        .add_enum("channel", kL2Channel)
        .add_enum("spatial", kL2Spatial)
        .set_default(kL2Instance)
        .describe(
            "instance: over all axes but the first; channel: over axis 1 at each position; "
            "spatial: over the axes after 1, for each channel.");
  }
};

struct L2Geom {
  int64_t outer = 1, red = 1, inner = 1;
  TS_XINLINE int64_t rows() const { return outer * inner; }
  // Element r of row k (k = o * inner + i).
  TS_XINLINE int64_t index(int64_t k, int64_t r) const {
    return (k / inner * red + r) * inner + k % inner;
  }
};

inline L2Geom L2GeomOf(const NodeAttrs& attrs, const Shape& s) {
  const int mode = ParamsOf<L2NormalizationParam>(attrs).mode;
  TS_CHECK(s.ndim() >= (mode == kL2Instance ? 2 : 3))
      << OpLabel(attrs) << ": data has shape " << s << "; mode "
      << (mode == kL2Instance ? "instance needs 2" : "channel and spatial need 3")
      << " or more axes";
  if (mode == kL2Instance) return {s[0], s.ProdRange(1, s.ndim()), 1};
  if (mode == kL2Channel) return {s[0], s[1], s.ProdRange(2, s.ndim())};
  return {s[0] * s[1], s.ProdRange(2, s.ndim()), 1};
}

// The device half: the norms and y = x / norm; dx = (dy - y sum(dy y)) / norm.
template <typename xpu>
struct L2Kernels;

// in: data; out: y = x / norm, norm = sqrt(sum x^2 + eps) (hidden).
template <typename xpu>
void L2Forward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
               const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const L2Geom g = L2GeomOf(attrs, in[0].shape());
  const double eps = ParamsOf<L2NormalizationParam>(attrs).eps;
  ForFloatAndDouble(attrs, in[0].dtype(), "L2Normalization", [&](auto zero) {
    using T = decltype(zero);
    L2Kernels<xpu>::template Forward<T>(ctx, g, in[0].dptr<T>(), eps, out[0].dptr<T>(), req[0],
                                        out[1].dptr<T>(), req[1]);
  });
}

// in: dy, y, norm; out: dx.
template <typename xpu>
void L2Backward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const L2Geom g = L2GeomOf(attrs, in[1].shape());
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_L2Normalization", [&](auto zero) {
    using T = decltype(zero);
    L2Kernels<xpu>::template Backward<T>(ctx, g, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(),
                                         out[0].dptr<T>(), req[0]);
  });
}

}  // namespace tessera::op
