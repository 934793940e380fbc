// diag (MXNet's): a 1-D array becomes a square matrix with it on diagonal
// k; an array of 2 or more axes gives its diagonal k in the plane of
// (axis1, axis2), those axes removed and the diagonal appended as the last
// axis. The gradient (_backward_diag) is the other direction: the diagonal
// of the output gradient for a 1-D input, the output gradient placed on the
// diagonal of zeros otherwise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/base/shape.h"
#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "engine/op/params.h"

namespace tessera::op {

struct DiagParam : Params<DiagParam> {
  int64_t k = 0;
  int axis1 = 0, axis2 = 1;
  static void Declare(ParamDecl<DiagParam>& d) {
    d.field("k", &DiagParam::k)
        .set_default(0)
        .describe("The diagonal: 0 the main one, k > 0 above it, k < 0 below.");
    d.field("axis1", &DiagParam::axis1)
        .set_default(0)
        .set_axis()
        .describe("The first axis of the plane the diagonal is taken in (2 or more axes).");
    d.field("axis2", &DiagParam::axis2)
        .set_default(1)
        .set_axis()
        .describe("The second axis of that plane.");
  }
};

// Where each element of an extracted diagonal lives in the input: the
// output's flat index o = (rest..., j) maps to sum(rest_r * rest_stride_r)
// + j * step + start.
struct DiagGeom {
  int nrest = 0;
  int64_t rest_dims[Shape::kMaxNdim] = {};
  int64_t rest_strides[Shape::kMaxNdim] = {};
  int64_t len = 0, step = 0, start = 0;

  TS_XINLINE int64_t Offset(int64_t o) const {
    const int64_t j = o % len;
    int64_t rest = o / len, off = start + j * step;
    for (int r = nrest - 1; r >= 0; --r) {
      off += (rest % rest_dims[r]) * rest_strides[r];
      rest /= rest_dims[r];
    }
    return off;
  }
};

// The geometry of diagonal k of `s` in the plane (a1, a2), a1 != a2: the
// elements [.., i on a1, .., i + k on a2, ..].
DiagGeom MakeDiagGeom(const Shape& s, int a1, int a2, int64_t k);
// Elements between neighbours along `axis` in a row-major array of shape s.
int64_t RowMajorStride(const Shape& s, int axis);
// diag's output shape for an input of shape `s`.
Shape DiagOutputShape(const NodeAttrs& attrs, const Shape& s);

template <int req>
struct diag_extract {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, T* out, const T* in, DiagGeom g) {
    AssignReq<req>(out[o], in[g.Offset(o)]);
  }
};

// One element of the output matrix of a 1-D input: x[min(r, c)] on diagonal k.
template <int req>
struct diag_make {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, int64_t m, int64_t k) {
    const int64_t r = i / m, c = i - r * m;
    AssignReq<req>(out[i], c - r == k ? in[k >= 0 ? r : c] : T(0));
  }
};

// The gradient of an extraction: every element of the input gradient is
// the output gradient's where it lies on the diagonal, else zero.
template <int req>
struct diag_place {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* og, DiagGeom g, int64_t a1_stride,
                             int64_t a1_dim, int64_t a2_stride, int64_t a2_dim, int64_t k) {
    const int64_t r = (i / a1_stride) % a1_dim, c = (i / a2_stride) % a2_dim;
    if (c - r != k) {
      AssignReq<req>(out[i], T(0));
      return;
    }
    // The element's rank among the diagonal's: its rest index, then j.
    const int64_t j = k >= 0 ? r : c;
    int64_t rest = 0;
    for (int d = 0; d < g.nrest; ++d)
      rest = rest * g.rest_dims[d] + (i / g.rest_strides[d]) % g.rest_dims[d];
    AssignReq<req>(out[i], og[rest * g.len + j]);
  }
};

template <typename xpu>
void DiagCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<DiagParam>(attrs);
  const Shape& s = in[0].shape();
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      if (s.ndim() == 1) {
        Kernel<diag_make<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                in[0].dptr<T>(), out[0].shape()[0], p.k);
      } else {
        const int a1 = NormalizeAxis(p.axis1, s.ndim(), "diag");
        const int a2 = NormalizeAxis(p.axis2, s.ndim(), "diag");
        Kernel<diag_extract<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                   in[0].dptr<T>(), MakeDiagGeom(s, a1, a2, p.k));
      }
    });
  });
}

// Inputs: the output gradient, then the forward input (for its shape).
template <typename xpu>
void DiagGradCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<DiagParam>(attrs);
  const Shape& s = out[0].shape();
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      if (s.ndim() == 1) {  // the diagonal of the (m, m) output gradient
        Kernel<diag_extract<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                   in[0].dptr<T>(),
                                                   MakeDiagGeom(in[0].shape(), 0, 1, p.k));
        return;
      }
      const int a1 = NormalizeAxis(p.axis1, s.ndim(), "diag");
      const int a2 = NormalizeAxis(p.axis2, s.ndim(), "diag");
      const DiagGeom g = MakeDiagGeom(s, a1, a2, p.k);
      const int64_t a1_stride = RowMajorStride(s, a1), a2_stride = RowMajorStride(s, a2);
      Kernel<diag_place<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                               in[0].dptr<T>(), g, a1_stride, s[a1], a2_stride,
                                               s[a2], p.k);
    });
  });
}

}  // namespace tessera::op
