// Crop (MXNet's legacy Crop): its parameters, window and copy kernels,
// shared by the CPU (crop.cc) and GPU (crop.cu) registrations.
#pragma once

#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

struct CropParam : Params<CropParam> {
  int num_args = 1;
  Shape offset = Shape{0, 0}, h_w = Shape{0, 0};
  bool center_crop = false;
  static void Declare(ParamDecl<CropParam>& d) {
    d.field("num_args", &CropParam::num_args)
        .set_range(1, 2)
        .describe("1: crop to h_w; 2: crop to the second input's height and width.");
    d.field("offset", &CropParam::offset)
        .set_default(Shape{0, 0})
        .describe("The window's top-left corner (y, x), unless center_crop.");
    d.field("h_w", &CropParam::h_w)
        .set_default(Shape{0, 0})
        .describe("The window's size (h, w), with num_args = 1.");
    d.field("center_crop", &CropParam::center_crop)
        .set_default(false)
        .describe("Centre the window (the offset is ignored).");
  }
};

// The window: its size and top-left corner in the (H, W) plane.
struct CropWindow {
  int64_t h = 0, w = 0, y = 0, x = 0;
};

inline CropWindow WindowOf(const NodeAttrs& attrs, const Shape& data, const Shape* like) {
  const auto& p = ParamsOf<CropParam>(attrs);
  TS_CHECK(data.ndim() == 4) << OpLabel(attrs) << ": data has shape " << data
                             << "; it must be NCHW (4 axes)";
  TS_CHECK(p.offset.ndim() == 2 && p.h_w.ndim() == 2)
      << OpLabel(attrs) << ": offset " << p.offset << " and h_w " << p.h_w
      << " must have 2 values (y, x) and (h, w)";
  CropWindow c;
  if (p.num_args == 2) {
    TS_CHECK(like->ndim() == 4) << OpLabel(attrs) << ": crop_like has shape " << *like
                                << "; it must have 4 axes (its last two are the size)";
    c.h = (*like)[2];
    c.w = (*like)[3];
  } else {
    c.h = p.h_w[0];
    c.w = p.h_w[1];
  }
  const int64_t H = data[2], W = data[3];
  TS_CHECK(c.h >= 1 && c.w >= 1 && c.h <= H && c.w <= W)
      << OpLabel(attrs) << ": the window " << c.h << "x" << c.w << " does not fit in the " << H
      << "x" << W << " images of " << data;
  c.y = p.center_crop ? (H - c.h) / 2 : p.offset[0];
  c.x = p.center_crop ? (W - c.w) / 2 : p.offset[1];
  TS_CHECK(c.y >= 0 && c.x >= 0 && c.y + c.h <= H && c.x + c.w <= W)
      << OpLabel(attrs) << ": offset " << p.offset << " puts the " << c.h << "x" << c.w
      << " window outside the " << H << "x" << W << " images";
  return c;
}

// The window of (N, C, H, W) images as the kernels see it.
struct CropGeom {
  int64_t H, W, h, w, y, x;
};

// Forward: output element o of (planes, h, w) from the window of the input.
template <int req>
struct crop_forward {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, T* out, const T* in, CropGeom g) {
    const int64_t j = o % g.w, r = (o / g.w) % g.h, p = o / (g.w * g.h);
    AssignReq<req>(out[o], in[(p * g.H + g.y + r) * g.W + g.x + j]);
  }
};

// Backward: every element of the input's gradient: the output gradient in
// the window, zero outside it (a gather, so no two threads write one place).
template <int req>
struct crop_backward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* grad, const T* ograd, CropGeom g) {
    const int64_t col = i % g.W, row = (i / g.W) % g.H, p = i / (g.W * g.H);
    const int64_t r = row - g.y, j = col - g.x;
    const bool inside = r >= 0 && r < g.h && j >= 0 && j < g.w;
    AssignReq<req>(grad[i], inside ? ograd[(p * g.h + r) * g.w + j] : T(0));
  }
};

template <int req>
struct crop_zero {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out) {
    AssignReq<req>(out[i], T(0));
  }
};

inline CropGeom GeomOf(const CropWindow& c, const Shape& data) {
  return CropGeom{data[2], data[3], c.h, c.w, c.y, c.x};
}

template <typename xpu>
void CropForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape like = in.size() == 2 ? in[1].shape() : Shape();
  const CropWindow c = WindowOf(attrs, in[0].shape(), in.size() == 2 ? &like : nullptr);
  ForFloatAndDouble(attrs, in[0].dtype(), "Crop", [&](auto zero) {
    using T = decltype(zero);
    SwitchReq(req[0], [&](auto r) {
      Kernel<crop_forward<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                 in[0].dptr<T>(), GeomOf(c, in[0].shape()));
    });
  });
}

// in: ograd, data[, crop_like]; out: d data[, d crop_like (zeros)].
template <typename xpu>
void CropBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const Shape like = in.size() == 3 ? in[2].shape() : Shape();
  const CropWindow c = WindowOf(attrs, in[1].shape(), in.size() == 3 ? &like : nullptr);
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_Crop", [&](auto zero) {
    using T = decltype(zero);
    if (req[0] != kNullOp)
      SwitchReq(req[0], [&](auto r) {
        Kernel<crop_backward<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                    in[0].dptr<T>(), GeomOf(c, in[1].shape()));
      });
    if (out.size() == 2 && req[1] != kNullOp)
      SwitchReq(req[1], [&](auto r) {
        Kernel<crop_zero<r.value>, xpu>::Launch(ctx.run_ctx, out[1].Size(), out[1].dptr<T>());
      });
  });
}

}  // namespace tessera::op
