// Bounding boxes (MXNet's contrib.box_iou and contrib.box_nms): the box
// formats and overlaps, and box_iou's element kernel, shared by the CPU
// (box_ops.cc) and GPU (box_ops.cu) registrations. Boxes are 'corner'
// [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height].
#pragma once

#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum BoxFormat { kCorner, kCenter };

template <typename P, typename F>
inline void DeclareFormat(ParamDecl<P>& d, F P::*field, const char* name, const char* doc) {
  d.field(name, field)
      .add_enum("corner", kCorner)
      .add_enum("center", kCenter)
      .set_default(kCorner)
      .describe(doc);
}

// A box as corners, from `format`.
struct Corners {
  double x1, y1, x2, y2;
};

template <typename T>
TS_XINLINE Corners CornersOf(const T* b, int format) {
  if (format == kCorner) return {double(b[0]), double(b[1]), double(b[2]), double(b[3])};
  const double hw = double(b[2]) / 2, hh = double(b[3]) / 2;
  return {double(b[0]) - hw, double(b[1]) - hh, double(b[0]) + hw, double(b[1]) + hh};
}

TS_XINLINE double Area(const Corners& a) {
  const double w = a.x2 - a.x1, h = a.y2 - a.y1;
  return (w > 0 ? w : 0) * (h > 0 ? h : 0);
}

// Intersection over union; 0 when the boxes do not overlap.
TS_XINLINE double IoU(const Corners& a, const Corners& b) {
  const double w = (a.x2 < b.x2 ? a.x2 : b.x2) - (a.x1 > b.x1 ? a.x1 : b.x1);
  const double h = (a.y2 < b.y2 ? a.y2 : b.y2) - (a.y1 > b.y1 ? a.y1 : b.y1);
  if (w <= 0 || h <= 0) return 0;
  const double inter = w * h;
  return inter / (Area(a) + Area(b) - inter);
}

struct BoxIouParam : Params<BoxIouParam> {
  int format = kCorner;
  static void Declare(ParamDecl<BoxIouParam>& d) {
    DeclareFormat(d, &BoxIouParam::format, "format", "The boxes' format: corner or center.");
  }
};

// Output element o: the IoU of lhs box o / nr and rhs box o % nr.
struct BoxIouElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, const T* l, const T* r, int64_t nr, int format, T* y,
                             OpReqType req) {
    const double v = IoU(CornersOf(l + 4 * (o / nr), format), CornersOf(r + 4 * (o % nr), format));
    y[o] = T(req == kAddTo ? double(y[o]) + v : v);
  }
};

template <typename xpu>
void BoxIouCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int format = ParamsOf<BoxIouParam>(attrs).format;
  const int64_t nl = in[0].Size() / 4, nr = in[1].Size() / 4;
  ForFloatAndDouble(attrs, in[0].dtype(), "box_iou", [&](auto zero) {
    using T = decltype(zero);
    Kernel<BoxIouElem, xpu>::Launch(ctx.run_ctx, nl * nr, in[0].dptr<T>(), in[1].dptr<T>(), nr,
                                    format, out[0].dptr<T>(), req[0]);
  });
}

}  // namespace tessera::op
