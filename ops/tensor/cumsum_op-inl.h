// cumsum (MXNet's _np_cumsum): its parameters and the running-sum kernel,
// shared by the CPU (cumsum_op.cc) and GPU (cumsum_op.cu) registrations.
#pragma once

#include <optional>
#include <type_traits>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "engine/op/params.h"
#include "ops/tensor/cast_op-inl.h"

namespace tessera::op {

struct CumsumParam : Params<CumsumParam> {
  std::optional<int> axis;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<CumsumParam>& d) {
    d.field("axis", &CumsumParam::axis)
        .set_default(std::nullopt)
        .set_axis()
        .describe("The axis to sum along. None (the default): the flattened array, a 1-D result.");
    d.field("dtype", &CumsumParam::dtype)
        .set_default(std::nullopt)
        .describe("The result's dtype. None: the input's (bool gives int64), as NumPy.");
  }
};

// The input seen as (pre, n, post) with the sums running along n.
struct RunGeometry {
  int64_t pre = 1, n = 1, post = 1;
};

inline RunGeometry GeometryOf(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<CumsumParam>(attrs);
  RunGeometry g;
  if (!p.axis) {
    g.n = s.Size();
    return g;
  }
  const int ax = NormalizeAxis(*p.axis, s.ndim(), OpLabel(attrs).c_str());
  g.pre = s.ProdRange(0, ax);
  g.n = s[ax];
  g.post = s.ProdRange(ax + 1, s.ndim());
  return g;
}

// An input element in the output's type: a float into an integer type as
// Cast does (NumPy's wrap, the same on both devices).
template <typename TO, typename TI>
TS_XINLINE TO ToSumType(TI v) {
  if constexpr (std::is_integral_v<TO> && std::is_floating_point_v<AccType<TI>>)
    return FloatToInt<TO>(static_cast<AccType<TI>>(v));
  else
    return static_cast<TO>(v);
}

// Line l = p * post + q: y[p, i, q] = sum of x[p, j, q] for j <= i (or
// j >= i when `reverse`), summed in the output's type as NumPy does. One
// line per call: on the GPU, neighbouring threads take neighbouring q.
template <bool reverse, bool add>
struct cumsum_line {
  template <typename TI, typename TO>
  TS_XINLINE static void Map(int64_t l, const TI* x, TO* y, int64_t n, int64_t post) {
    const int64_t p = l / post, q = l % post;
    TO acc = TO(0);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = reverse ? n - 1 - k : k;
      const int64_t at = (p * n + i) * post + q;
      acc = static_cast<TO>(acc + ToSumType<TO>(x[at]));
      y[at] = add ? static_cast<TO>(y[at] + acc) : acc;
    }
  }
};

// Forward: x (input 0) -> y; backward: dy (input 0) -> dx, shaped as the
// forward input (input 1), the sums taken from the end.
template <typename xpu, bool kBackward>
void CumsumCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const RunGeometry g = GeometryOf(attrs, kBackward ? in[1].shape() : in[0].shape());
  const bool add = req[0] == kAddTo;
  SwitchDType(
      in[0].dtype(),
      [&](auto ti) {
        using TI = typename decltype(ti)::type;
        SwitchNumericDType(
            out[0].dtype(),
            [&](auto to) {
              using TO = typename decltype(to)::type;
              auto launch = [&](auto op) {
                Kernel<decltype(op), xpu>::Launch(ctx.run_ctx, g.pre * g.post, in[0].dptr<TI>(),
                                                  out[0].dptr<TO>(), g.n, g.post);
              };
              if (add)
                launch(cumsum_line<kBackward, true>{});
              else
                launch(cumsum_line<kBackward, false>{});
            },
            "cumsum");
      },
      "cumsum");
}

}  // namespace tessera::op
