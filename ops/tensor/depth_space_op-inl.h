// depth_to_space and space_to_depth (MXNet's, NCHW): blocks of b x b pixels
// moved between the channel axis and the two spatial axes, each the other's
// inverse (and so each other's gradient).
//   depth_to_space: out[n, c, h*b + i, w*b + j] = in[n, (i*b + j) * C/b^2 + c, h, w]
//   space_to_depth: out[n, (i*b + j) * C + c, h, w] = in[n, c, h*b + i, w*b + j]
#pragma once

#include <cstdint>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "engine/op/params.h"

namespace tessera::op {

struct BlockSizeParam : Params<BlockSizeParam> {
  int64_t block_size = 1;
  static void Declare(ParamDecl<BlockSizeParam>& d) {
    d.field("block_size", &BlockSizeParam::block_size)
        .set_range(1, int64_t{1} << 20)
        .describe("The side of the square blocks moved between channels and pixels.");
  }
};

// Gathers the output of depth_to_space (kToSpace) or space_to_depth from
// the input; (C, H, W) are the output's.
template <int req, bool kToSpace>
struct depth_space_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, T* out, const T* in, int64_t C, int64_t H, int64_t W,
                             int64_t b) {
    const int64_t w = o % W, h = (o / W) % H, c = (o / (W * H)) % C, n = o / (W * H * C);
    int64_t src;
    if (kToSpace) {  // input (C b^2, H/b, W/b)
      const int64_t i = h % b, j = w % b, Hi = H / b, Wi = W / b;
      src = ((n * C * b * b + (i * b + j) * C + c) * Hi + h / b) * Wi + w / b;
    } else {  // input (C/b^2, H b, W b)
      const int64_t Ci = C / (b * b), k = c / Ci, ci = c % Ci, i = k / b, j = k % b;
      src = ((n * Ci + ci) * H * b + h * b + i) * W * b + w * b + j;
    }
    AssignReq<req>(out[o], in[src]);
  }
};

template <typename xpu, bool kToSpace>
void DepthSpaceCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const int64_t b = ParamsOf<BlockSizeParam>(attrs).block_size;
  const Shape& s = out[0].shape();
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<depth_space_kernel<r.value, kToSpace>, xpu>::Launch(
          ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), s[1], s[2], s[3], b);
    });
  });
}

}  // namespace tessera::op
