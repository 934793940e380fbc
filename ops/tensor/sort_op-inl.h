// sort, argsort and topk: stable sorts of every row along an axis (or of the
// flattened array). Indices are 0-based positions stored as numbers in the
// index dtype. The gradient of the sorted values scatters the output
// gradient back to the positions the values came from.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "ops/tensor/indexing_op-inl.h"

namespace tessera::op {

enum TopKReturn { kTopKValue = 0, kTopKIndices = 1, kTopKMask = 2, kTopKBoth = 3 };

struct SortParam : Params<SortParam> {
  std::optional<int> axis = -1;
  bool is_ascend = true;
  static void Declare(ParamDecl<SortParam>& d) {
    d.field("axis", &SortParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to sort along; None sorts the flattened array.");
    d.field("is_ascend", &SortParam::is_ascend)
        .set_default(true)
        .describe("Ascending order (else descending); equal elements keep their order.");
  }
};

struct ArgsortParam : Params<ArgsortParam> {
  std::optional<int> axis = -1;
  bool is_ascend = true;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<ArgsortParam>& d) {
    d.field("axis", &ArgsortParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to sort along; None sorts the flattened array.");
    d.field("is_ascend", &ArgsortParam::is_ascend)
        .set_default(true)
        .describe("Ascending order (else descending); equal elements keep their order.");
    d.field("dtype", &ArgsortParam::dtype)
        .set_default(DType::kFloat32)
        .describe("Element type of the indices.");
  }
};

struct TopKParam : Params<TopKParam> {
  std::optional<int> axis = -1;
  int k = 1;
  int ret_typ = kTopKIndices;
  bool is_ascend = false;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<TopKParam>& d) {
    d.field("axis", &TopKParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to search along; None searches the flattened array.");
    d.field("k", &TopKParam::k)
        .set_default(1)
        .describe("How many elements to return; k < 1 returns them all (a full sort).");
    d.field("ret_typ", &TopKParam::ret_typ)
        .add_enum("value", kTopKValue)
        .add_enum("indices", kTopKIndices)
        .add_enum("mask", kTopKMask)
        .add_enum("both", kTopKBoth)
        .set_default(kTopKIndices)
        .describe(
            "'value': the k elements; 'indices': their positions; 'mask': an array like the "
            "input with 1 at those positions; 'both': values and indices.");
    d.field("is_ascend", &TopKParam::is_ascend)
        .set_default(false)
        .describe("Return the smallest elements (else the largest).");
    d.field("dtype", &TopKParam::dtype)
        .set_default(DType::kFloat32)
        .describe("Element type of the indices.");
  }
};

// Gradient of sorted values: the axis is all it needs (k is the gradient's size).
struct SortBackwardParam : Params<SortBackwardParam> {
  std::optional<int> axis = -1;
  static void Declare(ParamDecl<SortBackwardParam>& d) {
    d.field("axis", &SortBackwardParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis that was sorted; None: the flattened array.");
  }
};

// What one call of the three ops asks for.
struct SortSpec {
  std::optional<int> axis;
  int k = 0;  // < 1: all
  int ret = kTopKValue;
  bool ascend = true;
  bool hidden_indices = false;  // value output followed by int64 indices the gradient uses
  DType index_dtype = DType::kInt64;
};
SortSpec SortSpecOf(const NodeAttrs& attrs);

// The rows of one call: the data as (pre, n, post) around the axis (one
// flat row when the axis is None), k of each row's n elements kept.
struct SortRows {
  int64_t pre = 1, n = 1, post = 1, k = 1;
  TS_XINLINE int64_t rows() const { return pre * post; }
  // The data's element e of `row`, and the output's position r of it.
  TS_XINLINE int64_t At(int64_t row, int64_t e) const {
    return (row / post * n + e) * post + row % post;
  }
  TS_XINLINE int64_t OutAt(int64_t row, int64_t r) const {
    return (row / post * k + r) * post + row % post;
  }
};
SortRows SortRowsOf(const NodeAttrs& attrs, const SortSpec& s, const Shape& data);

// The outputs of one call by role; null where the call has none.
template <typename T, typename I>
struct SortOutputs {
  T* values = nullptr;
  T* mask = nullptr;  // like the data, 1 at the kept positions
  I* indices = nullptr;
  int64_t* hidden = nullptr;  // the positions the gradient reads
  OpReqType value_req = kNullOp, index_req = kNullOp;

  // Position r of `row` holds the row's element `from` (of data `src`).
  TS_XINLINE void Emit(const SortRows& g, const T* src, int64_t row, int64_t r,
                       int64_t from) const {
    if (mask) {
      AssignByReq(value_req, mask[g.At(row, from)], T(1));
      return;
    }
    const int64_t o = g.OutAt(row, r);
    if (values) AssignByReq(value_req, values[o], src[g.At(row, from)]);
    if (hidden) hidden[o] = from;
    if (indices) AssignByReq(index_req, indices[o], static_cast<I>(static_cast<AccType<I>>(from)));
  }

 private:
  template <typename V>
  TS_XINLINE static void AssignByReq(OpReqType req, V& dst, V v) {
    if (req == kAddTo)
      AssignReq<kAddTo>(dst, v);
    else if (req != kNullOp)
      dst = v;
  }
};

template <typename T, typename I>
SortOutputs<T, I> SortOutputsOf(const SortSpec& s, const std::vector<OpReqType>& req,
                                const std::vector<TBlob>& out) {
  SortOutputs<T, I> o;
  if (s.ret == kTopKIndices) {
    o.indices = out[0].dptr<I>();
    o.index_req = req[0];
  } else if (s.ret == kTopKMask) {
    o.mask = out[0].dptr<T>();
    o.value_req = req[0];
  } else {
    o.values = out[0].dptr<T>();
    o.value_req = req[0];
    if (s.hidden_indices) {
      if (req[1] != kNullOp) o.hidden = out[1].dptr<int64_t>();
    } else {
      o.indices = out[1].dptr<I>();
      o.index_req = req[1];
    }
  }
  return o;
}

// Calls fn(TypeTag<T>{}, TypeTag<I>{}) for the data's dtype T and the
// call's index dtype I.
template <typename F>
void SwitchSortTypes(const NodeAttrs& attrs, DType data, const SortSpec& s, F&& fn) {
  const char* name = attrs.op->name().c_str();
  SwitchNumericDType(
      data,
      [&](auto tag) {
        SwitchNumericDType(
            s.index_dtype, [&](auto itag) { fn(tag, itag); }, name);
      },
      name);
}

// The order every sort of these ops follows: NaN sorts as the largest
// value (so the order is a strict weak ordering for every input).
template <typename V>
TS_XINLINE bool LessNanLast(V a, V b) {
  const bool a_nan = a != a, b_nan = b != b;  // false for integers
  if (b_nan) return !a_nan;
  if (a_nan) return false;
  return a < b;
}

// The gradient of the kept values of one row: its k output gradients added
// at the positions they came from (distinct within a row, so rows may run
// in parallel).
struct SortBackwardRow {
  template <typename T, typename I>
  TS_XINLINE static void Map(int64_t row, SortRows g, const T* og, const I* idx, T* grad) {
    for (int64_t r = 0; r < g.k; ++r) {
      const int64_t o = g.OutAt(row, r);
      const int64_t from = MapIndex<kIndexClip>(IndexValue(idx[o]), g.n);
      AssignReq<kAddTo>(grad[g.At(row, from)], og[o]);
    }
  }
};

// _backward_sort on xpu: inputs (gradient of the kept values, their
// positions, the data); a row per thread.
template <typename xpu>
void SortBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  SortRows g = SortRowsOf(attrs, SortSpec{ParamsOf<SortBackwardParam>(attrs).axis}, out[0].shape());
  g.k = in[0].Size() / std::max<int64_t>(1, g.rows());
  if (req[0] != kAddTo) ZeroBlob<xpu>(ctx.run_ctx, out[0]);
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchDType(in[1].dtype(), [&](auto itag) {
          using I = typename decltype(itag)::type;
          Kernel<SortBackwardRow, xpu>::Launch(ctx.run_ctx, g.rows(), g, in[0].dptr<T>(),
                                               in[1].dptr<I>(), out[0].dptr<T>());
        });
      },
      "_backward_sort");
}

}  // namespace tessera::op
