// FullyConnected's parameters, geometry and computation, shared by the CPU
// (fully_connected.cc) and GPU (fully_connected.cu) registrations: the
// computation is written once over FcSteps<xpu>, the device's GEMM and bias
// loops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"

namespace tessera::op {

struct FullyConnectedParam : Params<FullyConnectedParam> {
  int num_hidden = 0;
  bool no_bias = false;
  bool flatten = true;
  static void Declare(ParamDecl<FullyConnectedParam>& d) {
    d.field("num_hidden", &FullyConnectedParam::num_hidden)
        .set_lower_bound(1)
        .describe("Number of hidden units (the output's last dimension).");
    d.field("no_bias", &FullyConnectedParam::no_bias)
        .set_default(false)
        .describe("Whether to leave out the bias term (no bias input).");
    d.field("flatten", &FullyConnectedParam::flatten)
        .set_default(true)
        .describe(
            "Whether to collapse all axes of the input but the first: (N, d1, ..., dk) is taken "
            "as (N, d1*...*dk). Otherwise the op applies to the last axis only.");
  }
};

inline const FullyConnectedParam& FcParams(const NodeAttrs& attrs) {
  return ParamsOf<FullyConnectedParam>(attrs);
}

// The GEMM view of the input: rows (batch) x features.
struct FcGeom {
  int64_t rows = 0, features = 0, hidden = 0;
};

inline FcGeom MakeFcGeom(const FullyConnectedParam& p, const Shape& data) {
  FcGeom g;
  g.hidden = p.num_hidden;
  if (p.flatten) {
    g.rows = data[0];
    g.features = data.ProdRange(1, data.ndim());
  } else {
    g.rows = data.ProdRange(0, data.ndim() - 1);
    g.features = data[data.ndim() - 1];
  }
  return g;
}

// FcSteps<xpu>: the device's GemmSteps (nn_common.h: Gemm, C = op(A) op(B),
// or C += when accumulate, row-major; SumRows, out (+)= the column sums of a
// rows x n matrix) and AddBias (each of `rows` rows of out += bias), each
// templated on the element type.
template <typename xpu>
struct FcSteps;

template <typename xpu>
void FcForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
               const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = FcParams(attrs);
  const FcGeom g = MakeFcGeom(p, in[0].shape());
  SwitchFloatDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* y = out[0].dptr<T>();
        // y (rows x hidden) = data (rows x features) * weight^T.
        FcSteps<xpu>::Gemm(ctx.run_ctx, false, true, g.rows, g.hidden, g.features, in[0].dptr<T>(),
                           g.features, in[1].dptr<T>(), g.features, y, g.hidden, req[0] == kAddTo);
        if (!p.no_bias) FcSteps<xpu>::AddBias(ctx.run_ctx, y, in[2].dptr<T>(), g.rows, g.hidden);
      },
      "FullyConnected");
}

// Inputs: ograd, data, weight. Outputs: data, weight[, bias] gradients.
template <typename xpu>
void FcBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = FcParams(attrs);
  const FcGeom g = MakeFcGeom(p, in[1].shape());
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* dy = in[0].dptr<T>();
        if (req[0] != kNullOp)  // ddata (rows x features) = dy (rows x hidden) * weight.
          FcSteps<xpu>::Gemm(ctx.run_ctx, false, false, g.rows, g.features, g.hidden, dy, g.hidden,
                             in[2].dptr<T>(), g.features, out[0].dptr<T>(), g.features,
                             req[0] == kAddTo);
        if (req[1] != kNullOp)  // dweight (hidden x features) = dy^T * data.
          FcSteps<xpu>::Gemm(ctx.run_ctx, true, false, g.hidden, g.features, g.rows, dy, g.hidden,
                             in[1].dptr<T>(), g.features, out[1].dptr<T>(), g.features,
                             req[1] == kAddTo);
        if (!p.no_bias && req[2] != kNullOp)
          FcSteps<xpu>::SumRows(ctx.run_ctx, dy, g.rows, g.hidden, out[2].dptr<T>(),
                                req[2] == kAddTo);
      },
      "_backward_FullyConnected");
}

}  // namespace tessera::op
