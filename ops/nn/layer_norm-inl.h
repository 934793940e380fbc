// LayerNorm, InstanceNorm and GroupNorm: parameters, geometry and the
// computation over norm::Kernels<xpu>, shared by the CPU (layer_norm.cc)
// and GPU (layer_norm.cu) registrations.
#pragma once

#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/norm_groups-inl.h"

namespace tessera::op {

struct LayerNormParam : Params<LayerNormParam> {
  int axis = -1;
  float eps = 1e-5f;
  bool output_mean_var = false;
  static void Declare(ParamDecl<LayerNormParam>& d) {
    d.field("axis", &LayerNormParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to normalise over (negative: from the end).");
    d.field("eps", &LayerNormParam::eps)
        .set_default(1e-5f)
        .set_lower_bound(0.f)
        .describe("Added to the variance, for numerical stability.");
    d.field("output_mean_var", &LayerNormParam::output_mean_var)
        .set_default(false)
        .describe("Also output the mean and the standard deviation.");
  }
};

struct InstanceNormParam : Params<InstanceNormParam> {
  float eps = 1e-3f;
  static void Declare(ParamDecl<InstanceNormParam>& d) {
    d.field("eps", &InstanceNormParam::eps)
        .set_default(1e-3f)
        .set_lower_bound(0.f)
        .describe("Added to the variance, for numerical stability.");
  }
};

struct GroupNormParam : Params<GroupNormParam> {
  int num_groups = 1;
  float eps = 1e-5f;
  bool output_mean_var = false;
  static void Declare(ParamDecl<GroupNormParam>& d) {
    d.field("num_groups", &GroupNormParam::num_groups)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Total number of groups.");
    d.field("eps", &GroupNormParam::eps)
        .set_default(1e-5f)
        .set_lower_bound(0.f)
        .describe("Added to the variance, for numerical stability.");
    d.field("output_mean_var", &GroupNormParam::output_mean_var)
        .set_default(false)
        .describe("Also output the mean and the standard deviation of each group.");
  }
};

// LayerNorm's geometry on `s`; the axis normalised (errors name the op).
inline norm::Geom LayerGeom(const NodeAttrs& attrs, const Shape& s, int* axis_out = nullptr) {
  const int axis = NormalizeAxis(ParamsOf<LayerNormParam>(attrs).axis, s.ndim(), "LayerNorm");
  norm::Geom g;
  g.outer = s.ProdRange(0, axis);
  g.n = s[axis];
  g.inner = s.ProdRange(axis + 1, s.ndim());
  if (axis_out) *axis_out = axis;
  return g;
}

inline norm::Geom InstanceGeom(const NodeAttrs& attrs, const Shape& s) {
  TS_CHECK(s.ndim() >= 3) << OpLabel(attrs) << ": data must be (batch, channel, spatial...), got "
                          << s;
  norm::Geom g;
  g.outer = s[0] * s[1];
  g.n = s.ProdRange(2, s.ndim());
  g.per_group = true;
  g.channels = s[1];
  g.span = g.n;
  return g;
}

inline norm::Geom GroupGeom(const NodeAttrs& attrs, const Shape& s) {
  TS_CHECK(s.ndim() >= 3) << OpLabel(attrs) << ": data must be (batch, channel, spatial...), got "
                          << s;
  const int64_t groups = ParamsOf<GroupNormParam>(attrs).num_groups;
  TS_CHECK(s[1] % groups == 0) << OpLabel(attrs) << ": the " << s[1] << " channels of data " << s
                               << " do not split into num_groups = " << groups << " groups";
  norm::Geom g;
  g.outer = s[0] * groups;
  g.span = s.ProdRange(2, s.ndim());
  g.n = s[1] / groups * g.span;
  g.per_group = true;
  g.channels = groups;
  return g;
}

template <typename xpu>
void GroupNormForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const norm::Geom g = GroupGeom(attrs, in[0].shape());
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        norm::Kernels<xpu>::template Forward<T>(
            ctx, g, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(),
            ParamsOf<GroupNormParam>(attrs).eps, out[0].dptr<T>(), req[0],
            req[1] != kNullOp ? out[1].dptr<T>() : nullptr,
            req[2] != kNullOp ? out[2].dptr<T>() : nullptr);
      },
      "GroupNorm");
}

template <typename xpu>
void GroupNormBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const norm::Geom g = GroupGeom(attrs, in[1].shape());
  SwitchFloatDType(
      in[1].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        norm::Kernels<xpu>::template Backward<T>(
            ctx, g, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(),
            ParamsOf<GroupNormParam>(attrs).eps, out[0].dptr<T>(), req[0], out[1].dptr<T>(), req[1],
            out[2].dptr<T>(), req[2], in[2].Size());
      },
      "_backward_GroupNorm");
}

template <typename xpu, bool kLayer>
void NormForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const norm::Geom g =
      kLayer ? LayerGeom(attrs, in[0].shape()) : InstanceGeom(attrs, in[0].shape());
  const double eps =
      kLayer ? ParamsOf<LayerNormParam>(attrs).eps : ParamsOf<InstanceNormParam>(attrs).eps;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* mean = kLayer && req[1] != kNullOp ? out[1].dptr<T>() : nullptr;
        T* stdev = kLayer && req[2] != kNullOp ? out[2].dptr<T>() : nullptr;
        norm::Kernels<xpu>::template Forward<T>(ctx, g, in[0].dptr<T>(), in[1].dptr<T>(),
                                                in[2].dptr<T>(), eps, out[0].dptr<T>(), req[0],
                                                mean, stdev);
      },
      kLayer ? "LayerNorm" : "InstanceNorm");
}

// Backward: (out_grad, data, gamma) -> (data_grad, gamma_grad, beta_grad).
template <typename xpu, bool kLayer>
void NormBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const norm::Geom g =
      kLayer ? LayerGeom(attrs, in[1].shape()) : InstanceGeom(attrs, in[1].shape());
  const double eps =
      kLayer ? ParamsOf<LayerNormParam>(attrs).eps : ParamsOf<InstanceNormParam>(attrs).eps;
  SwitchFloatDType(
      in[1].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        norm::Kernels<xpu>::template Backward<T>(
            ctx, g, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(), eps, out[0].dptr<T>(),
            req[0], out[1].dptr<T>(), req[1], out[2].dptr<T>(), req[2], in[2].Size());
      },
      kLayer ? "_backward_LayerNorm" : "_backward_InstanceNorm");
}

}  // namespace tessera::op
