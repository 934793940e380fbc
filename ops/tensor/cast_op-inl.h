// Cast (astype) and zeros_like / ones_like: elementwise ops whose output
// dtype is a parameter or whose inputs are read only for their shape.
#pragma once

#include <cstdint>
#include <type_traits>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"

namespace tessera::op {

struct CastParam : Params<CastParam> {
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<CastParam>& d) {
    d.field("dtype", &CastParam::dtype).describe("Output element type.");
  }
};

// A float to an integer type, the same on every device, as NumPy on x86-64
// does: truncated toward zero into int64 (NaN and values beyond int64's range
// give its minimum, as the processor's conversion does), then wrapped to the
// type's width, so -1.5 becomes 255 as uint8. A plain static_cast is
// undefined there, and the CPU and the GPU round it differently.
template <typename Dst, typename A>
TS_XINLINE Dst FloatToInt(A v) {
  const bool in_range = v >= A(-9223372036854775808.0) && v < A(9223372036854775808.0);
  const int64_t w = in_range ? static_cast<int64_t>(v) : INT64_MIN;
  return static_cast<Dst>(w);
}

template <int req>
struct cast_kernel {
  template <typename Dst, typename Src>
  TS_XINLINE static void Map(int64_t i, Dst* out, const Src* in) {
    // Through the wider of the two arithmetic types so bool and halves convert exactly.
    if constexpr (std::is_same_v<Dst, bool>) {
      AssignReq<req>(out[i], static_cast<AccType<Src>>(in[i]) != AccType<Src>(0));
    } else if constexpr (std::is_integral_v<Dst> && std::is_floating_point_v<AccType<Src>>) {
      AssignReq<req>(out[i], FloatToInt<Dst>(static_cast<AccType<Src>>(in[i])));
    } else {
      AssignReq<req>(out[i], static_cast<Dst>(static_cast<AccType<Src>>(in[i])));
    }
  }
};

template <typename xpu>
void CastCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchDType(out[0].dtype(), [&](auto dst_tag) {
    using Dst = typename decltype(dst_tag)::type;
    SwitchDType(in[0].dtype(), [&](auto src_tag) {
      using Src = typename decltype(src_tag)::type;
      SwitchReq(req[0], [&](auto r) {
        Kernel<cast_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<Dst>(),
                                                  in[0].dptr<Src>());
      });
    });
  });
}

template <int req>
struct fill_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T value) {
    AssignReq<req>(out[i], value);
  }
};

template <typename xpu, int kValue>
void FillLikeCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>&,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<fill_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                static_cast<T>(kValue));
    });
  });
}

}  // namespace tessera::op
