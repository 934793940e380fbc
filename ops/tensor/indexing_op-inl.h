// take, pick and gather_nd: read elements at positions stored in an index
// array (numbers, 0-based as in MXNet, of any numeric dtype; fractional
// values truncate). Their gradients add the output gradient back at those
// positions; the indices get a zero gradient.
#pragma once

#include <optional>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

enum IndexMode { kIndexClip = 0, kIndexWrap = 1, kIndexRaise = 2 };

struct TakeParam : Params<TakeParam> {
  int axis = 0;
  int mode = kIndexClip;
  static void Declare(ParamDecl<TakeParam>& d) {
    d.field("axis", &TakeParam::axis).set_default(0).set_axis().describe("The axis to index.");
    d.field("mode", &TakeParam::mode)
        .add_enum("clip", kIndexClip)
        .add_enum("wrap", kIndexWrap)
        .add_enum("raise", kIndexRaise)
        .set_default(kIndexClip)
        .describe(
            "Out-of-range indices: 'clip' to the nearest end, 'wrap' around, 'raise' an error "
            "(negative indices then count from the end).");
  }
};

struct PickParam : Params<PickParam> {
  std::optional<int> axis = -1;
  bool keepdims = false;
  int mode = kIndexClip;
  static void Declare(ParamDecl<PickParam>& d) {
    d.field("axis", &PickParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to pick along; None picks from the flattened input.");
    d.field("keepdims", &PickParam::keepdims)
        .set_default(false)
        .describe("Keep the picked axis with size 1.");
    d.field("mode", &PickParam::mode)
        .add_enum("clip", kIndexClip)
        .add_enum("wrap", kIndexWrap)
        .set_default(kIndexClip)
        .describe("Out-of-range indices: 'clip' to the nearest end or 'wrap' around.");
  }
};

// An index element as an integer (floats truncate toward zero).
template <typename I>
TS_XINLINE int64_t IndexValue(I v) {
  return static_cast<int64_t>(static_cast<AccType<I>>(v));
}

// Maps an index into [0, n) by the mode (raise: already checked, negatives wrap).
template <int mode>
TS_XINLINE int64_t MapIndex(int64_t i, int64_t n) {
  if constexpr (mode == kIndexClip) {
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
  } else {
    const int64_t r = i % n;
    return r < 0 ? r + n : r;
  }
}

// The index values on the host (for mode 'raise'); the GPU version copies
// and waits for the stream (defined in indexing_op.cu).
template <typename xpu>
std::vector<int64_t> IndicesToHost(const RunContext& rctx, const TBlob& idx);
template <>
inline std::vector<int64_t> IndicesToHost<cpu>(const RunContext&, const TBlob& idx) {
  std::vector<int64_t> v(static_cast<size_t>(idx.Size()));
  SwitchDType(idx.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* p = idx.dptr<I>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = IndexValue(p[i]);
  });
  return v;
}
template <>
std::vector<int64_t> IndicesToHost<gpu>(const RunContext& rctx, const TBlob& idx);

// Raises the error of mode 'raise' for the first index outside [-n, n).
void CheckIndicesInRange(const char* op, const std::vector<int64_t>& idx, int64_t n, int axis,
                         const Shape& data);

// The input seen as (pre, n, post) around `axis`.
struct AxisSplit {
  int64_t pre = 1, n = 1, post = 1;
};
inline AxisSplit SplitAt(const Shape& s, int axis) {
  AxisSplit a;
  a.pre = s.ProdRange(0, axis);
  a.n = s[axis];
  a.post = s.ProdRange(axis + 1, s.ndim());
  return a;
}

// out (pre, m, post) from data (pre, n, post) at indices (m).
template <int req, int mode>
struct take_kernel {
  template <typename T, typename I>
  TS_XINLINE static void Map(int64_t i, T* out, const T* data, const I* idx, int64_t m,
                             AxisSplit a) {
    const int64_t j = i % a.post, r = i / a.post;
    const int64_t k = r % m, p = r / m;
    const int64_t row = MapIndex<mode>(IndexValue(idx[k]), a.n);
    AssignReq<req>(out[i], data[(p * a.n + row) * a.post + j]);
  }
};

int TakeAxis(const NodeAttrs& attrs, int ndim);
// take's indices (on the host) as rows of `data` along its axis: checked in
// mode 'raise', clipped or wrapped otherwise. For the backward's scatter.
std::vector<int64_t> TakenRows(const NodeAttrs& attrs, std::vector<int64_t> idx, const Shape& data);

template <typename xpu>
void TakeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<TakeParam>(attrs);
  const int axis = TakeAxis(attrs, in[0].ndim());
  const AxisSplit a = SplitAt(in[0].shape(), axis);
  if (p.mode == kIndexRaise)
    CheckIndicesInRange("take", IndicesToHost<xpu>(ctx.run_ctx, in[1]), a.n, axis, in[0].shape());
  const int64_t m = in[1].Size();
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchDType(in[1].dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      SwitchReq(req[0], [&](auto r) {
        if (p.mode == kIndexClip)
          Kernel<take_kernel<r.value, kIndexClip>, xpu>::Launch(
              ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<I>(), m, a);
        else
          Kernel<take_kernel<r.value, kIndexWrap>, xpu>::Launch(
              ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<I>(), m, a);
      });
    });
  });
}

// The element of data (pre, n, post) that element i of pick's output
// (pre, post) reads, at index (pre, post); its gradient goes back there.
template <int mode, typename I>
TS_XINLINE int64_t PickedElement(int64_t i, const I* idx, AxisSplit a) {
  const int64_t j = i % a.post, p = i / a.post;
  const int64_t row = MapIndex<mode>(IndexValue(idx[i]), a.n);
  return (p * a.n + row) * a.post + j;
}

// out (pre, post) from data (pre, n, post) at index (pre, post).
template <int req, int mode>
struct pick_kernel {
  template <typename T, typename I>
  TS_XINLINE static void Map(int64_t i, T* out, const T* data, const I* idx, AxisSplit a) {
    AssignReq<req>(out[i], data[PickedElement<mode>(i, idx, a)]);
  }
};

// grad (pre, n, post) (req)= ograd (pre, post) at index (pre, post); the
// positions are distinct, so no two elements collide.
template <int req, int mode>
struct pick_backward_kernel {
  template <typename T, typename I>
  TS_XINLINE static void Map(int64_t i, T* grad, const T* ograd, const I* idx, AxisSplit a) {
    AssignReq<req>(grad[PickedElement<mode>(i, idx, a)], ograd[i]);
  }
};

// pick's axis (or -1 for None: the flattened input).
int PickAxis(const NodeAttrs& attrs, int ndim);
inline AxisSplit PickSplit(const NodeAttrs& attrs, const Shape& data) {
  const int axis = PickAxis(attrs, data.ndim());
  if (axis < 0) return AxisSplit{1, data.Size(), 1};
  return SplitAt(data, axis);
}

template <typename xpu>
void PickCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int mode = ParamsOf<PickParam>(attrs).mode;
  const AxisSplit a = PickSplit(attrs, in[0].shape());
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchDType(in[1].dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      SwitchReq(req[0], [&](auto r) {
        if (mode == kIndexClip)
          Kernel<pick_kernel<r.value, kIndexClip>, xpu>::Launch(
              ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<I>(), a);
        else
          Kernel<pick_kernel<r.value, kIndexWrap>, xpu>::Launch(
              ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<I>(), a);
      });
    });
  });
}

// Inputs: output gradient, data (for its shape), index.
template <typename xpu>
void PickBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int mode = ParamsOf<PickParam>(attrs).mode;
  const AxisSplit a = PickSplit(attrs, out[0].shape());
  if (req[0] != kAddTo) ZeroBlob<xpu>(ctx.run_ctx, out[0]);
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchDType(in[2].dtype(), [&](auto itag) {
          using I = typename decltype(itag)::type;
          const int64_t n = in[0].Size();
          auto launch = [&](auto mode_tag) {
            Kernel<pick_backward_kernel<kAddTo, decltype(mode_tag)::value>, xpu>::Launch(
                ctx.run_ctx, n, out[0].dptr<T>(), in[0].dptr<T>(), in[2].dptr<I>(), a);
          };
          if (mode == kIndexClip)
            launch(std::integral_constant<int, kIndexClip>{});
          else
            launch(std::integral_constant<int, kIndexWrap>{});
        });
      },
      "_backward_pick");
}

// gather_nd: data (X0..Xn-1), indices (M, Y...) -> (Y..., X_M..Xn-1).
struct GatherNdPlan {
  int64_t slice = 1;             // elements copied per index tuple
  std::vector<int64_t> offsets;  // element offset into data of each tuple
};

template <typename xpu>
GatherNdPlan PlanGatherNd(const char* op, const Shape& data, const TBlob& indices,
                          const RunContext& rctx) {
  const std::vector<int64_t> idx = IndicesToHost<xpu>(rctx, indices);
  const int m = static_cast<int>(indices.shape()[0]);
  const int64_t count = indices.Size() / m;
  const std::vector<int64_t> strides = ContiguousStrides(data);
  GatherNdPlan plan;
  plan.slice = data.ProdRange(m, data.ndim());
  plan.offsets.assign(static_cast<size_t>(count), 0);
  for (int k = 0; k < m; ++k) {
    const int64_t n = data[k];
    for (int64_t y = 0; y < count; ++y) {
      int64_t v = idx[static_cast<size_t>(k * count + y)];
      TS_CHECK(v >= -n && v < n) << op << ": index " << v << " is out of range for axis " << k
                                 << " of data " << data << " (valid: " << -n << " to " << n - 1
                                 << ")";
      if (v < 0) v += n;
      plan.offsets[static_cast<size_t>(y)] += v * strides[static_cast<size_t>(k)];
    }
  }
  return plan;
}

}  // namespace tessera::op
