// BatchNorm's parameters and geometry, shared by the CPU kernels
// (batch_norm.cc) and the GPU's (batch_norm.cu).
#pragma once

#include <optional>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "engine/op/params.h"

namespace tessera::op {

struct BatchNormParam : Params<BatchNormParam> {
  double eps = 1e-3;
  float momentum = 0.9f;
  bool fix_gamma = true;
  bool use_global_stats = false;
  bool output_mean_var = false;
  int axis = 1;
  bool cudnn_off = false;
  std::optional<float> min_calib_range, max_calib_range;
  static void Declare(ParamDecl<BatchNormParam>& d) {
    d.field("eps", &BatchNormParam::eps)
        .set_default(1e-3)
        .set_lower_bound(0.0)
        .describe("Epsilon to prevent div 0.");
    d.field("momentum", &BatchNormParam::momentum)
        .set_default(0.9f)
        .describe("Momentum for the moving average.");
    d.field("fix_gamma", &BatchNormParam::fix_gamma)
        .set_default(true)
        .describe("Fix gamma while training (gamma = 1, zero gradient).");
    d.field("use_global_stats", &BatchNormParam::use_global_stats)
        .set_default(false)
        .describe("Whether to use the moving statistics instead of the batch's in training.");
    d.field("output_mean_var", &BatchNormParam::output_mean_var)
        .set_default(false)
        .describe("Output the mean and inverse std.");
    d.field("axis", &BatchNormParam::axis)
        .set_default(1)
        .set_axis()
        .describe("The channel axis of the data (MXNet's default 1: the second axis).");
    d.field("cudnn_off", &BatchNormParam::cudnn_off)
        .set_default(false)
        .describe("Do not select cuDNN operator, if available.");
    d.field("min_calib_range", &BatchNormParam::min_calib_range)
        .set_default(std::nullopt)
        .describe("Quantisation calibration minimum (accepted, unused).");
    d.field("max_calib_range", &BatchNormParam::max_calib_range)
        .set_default(std::nullopt)
        .describe("Quantisation calibration maximum (accepted, unused).");
  }
};

// data seen as (outer, channels, inner).
struct BnGeom {
  int64_t outer = 1, c = 0, inner = 1;
};

inline BnGeom MakeBnGeom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = ParamsOf<BatchNormParam>(attrs);
  TS_CHECK(data.ndim() >= 1) << OpLabel(attrs) << ": data must have at least 1 dimension";
  const int nd = data.ndim();
  TS_CHECK(p.axis >= -nd && p.axis < nd) << OpLabel(attrs) << ": parameter 'axis' is " << p.axis
                                         << ", out of range for data of shape " << data;
  const int ax = p.axis < 0 ? p.axis + nd : p.axis;
  BnGeom g;
  for (int i = 0; i < ax; ++i) g.outer *= data[i];
  g.c = data[ax];
  for (int i = ax + 1; i < nd; ++i) g.inner *= data[i];
  return g;
}

// The statistics are the batch's in training, unless use_global_stats;
// otherwise the moving ones.
inline bool UsesBatchStats(const BatchNormParam& p, const OpContext& ctx) {
  return ctx.is_train && !p.use_global_stats;
}

// The forward's blobs as T: inputs data, gamma, beta, moving_mean and
// moving_var (both updated in training); outputs out, mean and invstd.
template <typename T>
struct BnForwardBlobs {
  const T *x, *gamma, *beta;
  T *moving_mean, *moving_var, *y, *mean, *invstd;
  BnForwardBlobs(const std::vector<TBlob>& in, const std::vector<TBlob>& out)
      : x(in[0].dptr<T>()),
        gamma(in[1].dptr<T>()),
        beta(in[2].dptr<T>()),
        moving_mean(in[3].dptr<T>()),
        moving_var(in[4].dptr<T>()),
        y(out[0].dptr<T>()),
        mean(out[1].dptr<T>()),
        invstd(out[2].dptr<T>()) {}
};

// The backward's: inputs ograd, data, gamma and the forward's mean and
// invstd; outputs the gradients of data, gamma and beta.
template <typename T>
struct BnBackwardBlobs {
  const T *dy, *x, *gamma, *mean, *invstd;
  T *dx, *dgamma, *dbeta;
  BnBackwardBlobs(const std::vector<TBlob>& in, const std::vector<TBlob>& out)
      : dy(in[0].dptr<T>()),
        x(in[1].dptr<T>()),
        gamma(in[2].dptr<T>()),
        mean(in[3].dptr<T>()),
        invstd(in[4].dptr<T>()),
        dx(out[0].dptr<T>()),
        dgamma(out[1].dptr<T>()),
        dbeta(out[2].dptr<T>()) {}
};

// fn(tag, Blobs<T>(in, out)) for T, the dtype of in[0] (every blob's).
template <template <typename> class Blobs, typename Fn>
void WithBnBlobs(const std::vector<TBlob>& in, const std::vector<TBlob>& out, const char* who,
                 Fn&& fn) {
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        fn(tag, Blobs<T>(in, out));
      },
      who);
}

}  // namespace tessera::op
