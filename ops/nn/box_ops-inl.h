// Bounding boxes (MXNet's contrib.box_iou and contrib.box_nms): the box
// formats and overlaps, box_iou's element kernel and box_nms's per-image
// kernels, shared by the CPU (box_ops.cc) and GPU (box_ops.cu)
// registrations. Boxes are 'corner' [xmin, ymin, xmax, ymax] or 'center'
// [x, y, width, height].
#pragma once

#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/merge_sort-inl.h"
#include "ops/tensor/shape_strided-inl.h"

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

// ---------------------------------------------------------------------------
// box_nms: outputs the kept boxes, best score first, the other rows -1, and
// (hidden) each output row's index in the input (-1 for none).

struct BoxNmsParam : Params<BoxNmsParam> {
  float overlap_thresh = 0.5f, valid_thresh = 0;
  int topk = -1, coord_start = 2, score_index = 1, id_index = -1, background_id = -1;
  bool force_suppress = false;
  int in_format = kCorner, out_format = kCorner;
  static void Declare(ParamDecl<BoxNmsParam>& d) {
    d.field("overlap_thresh", &BoxNmsParam::overlap_thresh)
        .set_default(0.5f)
        .describe("A box overlapping (IoU) a better one by more than this is suppressed.");
    d.field("valid_thresh", &BoxNmsParam::valid_thresh)
        .set_default(0.f)
        .describe("Only boxes scoring above this take part.");
    d.field("topk", &BoxNmsParam::topk)
        .set_default(-1)
        .describe("Only the topk best-scoring boxes take part; -1: all.");
    d.field("coord_start", &BoxNmsParam::coord_start)
        .set_default(2)
        .describe("Position of the 4 coordinates in a box's row.");
    d.field("score_index", &BoxNmsParam::score_index)
        .set_default(1)
        .describe("Position of the score in a box's row.");
    d.field("id_index", &BoxNmsParam::id_index)
        .set_default(-1)
        .describe("Position of the class id in a box's row; -1: none.");
    d.field("background_id", &BoxNmsParam::background_id)
        .set_default(-1)
        .describe("With id_index: boxes of this class are dropped first.");
    d.field("force_suppress", &BoxNmsParam::force_suppress)
        .set_default(false)
        .describe("Suppress across classes (else only within a class, with id_index).");
    DeclareFormat(d, &BoxNmsParam::in_format, "in_format", "The input boxes' format.");
    DeclareFormat(d, &BoxNmsParam::out_format, "out_format", "The output boxes' format.");
  }
};

// What the kernels read of BoxNmsParam.
struct NmsArgs {
  double overlap_thresh, valid_thresh;
  int64_t topk, coord_start, score_index, id_index;
  double background_id;
  bool force_suppress;
  int in_format, out_format;
};

inline NmsArgs NmsArgsOf(const BoxNmsParam& p) {
  return {p.overlap_thresh, p.valid_thresh,          p.topk,           p.coord_start, p.score_index,
          p.id_index,       double(p.background_id), p.force_suppress, p.in_format,   p.out_format};
}

// Box a before box b: a higher score.
template <typename T>
struct ScoreAbove {
  const T* x;
  int64_t k, score;
  TS_XINLINE bool operator()(int64_t a, int64_t b) const {
    return x[a * k + score] > x[b * k + score];
  }
};

// The coordinates of a box in format `to`: a linear map of format `from`'s.
template <typename T>
TS_XINLINE void ConvertBox(const T* in, T* out, int from, int to) {
  if (from == to) {
    for (int j = 0; j < 4; ++j) out[j] = in[j];
  } else if (to == kCenter) {  // corners -> centre and size
    out[0] = T((double(in[0]) + double(in[2])) / 2);
    out[1] = T((double(in[1]) + double(in[3])) / 2);
    out[2] = T(double(in[2]) - double(in[0]));
    out[3] = T(double(in[3]) - double(in[1]));
  } else {
    out[0] = T(double(in[0]) - double(in[2]) / 2);
    out[1] = T(double(in[1]) - double(in[3]) / 2);
    out[2] = T(double(in[0]) + double(in[2]) / 2);
    out[3] = T(double(in[1]) + double(in[3]) / 2);
  }
}

// The gradient through ConvertBox: the transpose of its map.
template <typename T>
TS_XINLINE void ConvertBoxGrad(const T* g, T* dx, int from, int to) {
  if (from == to) {
    for (int j = 0; j < 4; ++j) dx[j] = g[j];
  } else if (to == kCenter) {
    dx[0] = T(double(g[0]) / 2 - double(g[2]));
    dx[1] = T(double(g[1]) / 2 - double(g[3]));
    dx[2] = T(double(g[0]) / 2 + double(g[2]));
    dx[3] = T(double(g[1]) / 2 + double(g[3]));
  } else {
    dx[0] = T(double(g[0]) + double(g[2]));
    dx[1] = T(double(g[1]) + double(g[3]));
    dx[2] = T((double(g[2]) - double(g[0])) / 2);
    dx[3] = T((double(g[3]) - double(g[1])) / 2);
  }
}

// Image b's suppression, one thread's work (MXNet's filter, sort, topk and
// greedy suppression), in 3 n integers of scratch: the candidates best
// first, the sort's scratch, then which candidates are suppressed. Writes
// the image's rows (kept boxes best first, coordinates in out_format, then
// rows of -1) and record (each row's input index, or -1).
struct NmsImage {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, NmsArgs p, const T* x, int64_t n, int64_t k, T* y,
                             OpReqType ry, T* rec, OpReqType rr, int64_t* scratch) {
    const T* xb = x + b * n * k;
    int64_t* order = scratch + b * 3 * n;
    int64_t* tmp = order + n;
    int64_t* gone = tmp + n;
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* row = xb + i * k;
      if (!(double(row[p.score_index]) > p.valid_thresh)) continue;
      if (p.id_index >= 0 && double(row[p.id_index]) == p.background_id) continue;
      order[m++] = i;
    }
    StableSortIndices(order, tmp, m, ScoreAbove<T>{xb, k, p.score_index});
    if (p.topk >= 0 && m > p.topk) m = p.topk;
    for (int64_t a = 0; a < m; ++a) gone[a] = 0;
    int64_t kept = 0;  // the kept boxes overwrite order's front
    for (int64_t a = 0; a < m; ++a) {
      if (gone[a]) continue;
      const int64_t ia = order[a];
      order[kept++] = ia;
      const T* ra = xb + ia * k;
      const Corners ca = CornersOf(ra + p.coord_start, p.in_format);
      for (int64_t c = a + 1; c < m; ++c) {
        if (gone[c]) continue;
        const T* rc = xb + order[c] * k;
        if (p.id_index >= 0 && !p.force_suppress && ra[p.id_index] != rc[p.id_index]) continue;
        if (IoU(ca, CornersOf(rc + p.coord_start, p.in_format)) > p.overlap_thresh) gone[c] = 1;
      }
    }
    for (int64_t o = 0; o < n; ++o) {
      T* dst = y + (b * n + o) * k;
      if (o >= kept) {
        for (int64_t j = 0; j < k; ++j) AssignReqAt(dst[j], T(-1), ry);
        AssignReqAt(rec[b * n + o], T(-1), rr);
        continue;
      }
      const T* src = xb + order[o] * k;
      T box[4];
      ConvertBox(src + p.coord_start, box, p.in_format, p.out_format);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t c = j - p.coord_start;
        AssignReqAt(dst[j], c >= 0 && c < 4 ? box[c] : src[j], ry);
      }
      AssignReqAt(rec[b * n + o], T(order[o]), rr);
    }
  }
};

// Output row (b, o) of a kept box: its gradient back at its input row
// (through the format conversion). Rows of one image are distinct, so no
// two threads write one row; the caller zeroes dx first unless adding.
struct NmsRowGrad {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, NmsArgs p, const T* g, const T* rec, int64_t n, int64_t k,
                             T* dx, OpReqType req) {
    const double r = double(rec[i]);
    if (r < 0 || r >= double(n)) return;
    const int64_t b = i / n;
    const T* go = g + i * k;
    T box[4];
    ConvertBoxGrad(go + p.coord_start, box, p.in_format, p.out_format);
    T* d = dx + (b * n + int64_t(r)) * k;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t c = j - p.coord_start;
      const T v = c >= 0 && c < 4 ? box[c] : go[j];
      d[j] = req == kAddTo ? T(d[j] + v) : v;
    }
  }
};

template <typename xpu>
void BoxNmsForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const NmsArgs p = NmsArgsOf(ParamsOf<BoxNmsParam>(attrs));
  const Shape& s = in[0].shape();
  const int64_t k = s.back(), n = s[s.ndim() - 2], batch = s.Size() / (n * k);
  int64_t* scratch = ctx.requested.at(0).get_space_typed<int64_t>(size_t(3 * n * batch + 1));
  ForFloatAndDouble(attrs, in[0].dtype(), "box_nms", [&](auto zero) {
    using T = decltype(zero);
    Kernel<NmsImage, xpu>::Launch(ctx.run_ctx, batch, p, in[0].dptr<T>(), n, k, out[0].dptr<T>(),
                                  req[0], out[1].dptr<T>(), req[1], scratch);
  });
}

// in: dOut, dRecord, out, record; d data: each kept box's output gradient
// back at its input row, zero elsewhere.
template <typename xpu>
void BoxNmsBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const NmsArgs p = NmsArgsOf(ParamsOf<BoxNmsParam>(attrs));
  const Shape& s = in[0].shape();
  const int64_t k = s.back(), n = s[s.ndim() - 2];
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_contrib_box_nms", [&](auto zero) {
    using T = decltype(zero);
    if (req[0] != kAddTo) ZeroBlob<xpu>(ctx.run_ctx, out[0]);
    Kernel<NmsRowGrad, xpu>::Launch(ctx.run_ctx, s.Size() / k, p, in[0].dptr<T>(), in[3].dptr<T>(),
                                    n, k, out[0].dptr<T>(), req[0]);
  });
}

}  // namespace tessera::op
