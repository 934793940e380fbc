// where(condition, x, y): x where condition is nonzero, else y; and one_hot,
// which expands index numbers into indicator rows.
#pragma once

#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/indexing_op-inl.h"

namespace tessera::op {

// The condition element for output element i: the same position, or the row
// (i / row) when the condition is a vector over the first axis.
template <typename C>
TS_XINLINE bool ConditionAt(const C* cond, int64_t i, int64_t row) {
  return static_cast<AccType<C>>(cond[row > 0 ? i / row : i]) != AccType<C>(0);
}

template <int req>
struct where_kernel {
  template <typename T, typename C>
  TS_XINLINE static void Map(int64_t i, T* out, const C* cond, const T* x, const T* y,
                             int64_t row) {
    AssignReq<req>(out[i], ConditionAt(cond, i, row) ? x[i] : y[i]);
  }
};

template <int req_x, int req_y>
struct where_backward_kernel {
  template <typename T, typename C>
  TS_XINLINE static void Map(int64_t i, T* gx, T* gy, const T* og, const C* cond, int64_t row) {
    const bool c = ConditionAt(cond, i, row);
    AssignReq<req_x>(gx[i], c ? og[i] : T(0));
    AssignReq<req_y>(gy[i], c ? T(0) : og[i]);
  }
};

// 0 when the condition has the data's shape, else elements per first-axis row.
inline int64_t ConditionRow(const TBlob& cond, const TBlob& data) {
  return cond.Size() == data.Size() ? 0 : data.Size() / cond.Size();
}

template <typename xpu>
void WhereCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t row = ConditionRow(in[0], in[1]);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchDType(in[0].dtype(), [&](auto ctag) {
      using C = typename decltype(ctag)::type;
      SwitchReq(req[0], [&](auto r) {
        Kernel<where_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                   in[0].dptr<C>(), in[1].dptr<T>(),
                                                   in[2].dptr<T>(), row);
      });
    });
  });
}

// SwitchReq that also instantiates kNullOp (for kernels with two outputs,
// one of which may be unwanted).
template <typename F>
void SwitchReqOrNull(OpReqType req, F&& fn) {
  if (req == kNullOp)
    fn(std::integral_constant<int, kNullOp>{});
  else
    SwitchReq(req, fn);
}

// Inputs: output gradient, condition; outputs: gradients of x and y.
template <typename xpu>
void WhereBackwardCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp && req[1] == kNullOp) return;
  const int64_t row = ConditionRow(in[1], in[0]);
  SwitchNumericDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchDType(in[1].dtype(), [&](auto ctag) {
          using C = typename decltype(ctag)::type;
          SwitchReqOrNull(req[0], [&](auto rx) {
            SwitchReqOrNull(req[1], [&](auto ry) {
              Kernel<where_backward_kernel<rx.value, ry.value>, xpu>::Launch(
                  ctx.run_ctx, in[0].Size(), out[0].dptr<T>(), out[1].dptr<T>(), in[0].dptr<T>(),
                  in[1].dptr<C>(), row);
            });
          });
        });
      },
      "_backward_where");
}

struct OneHotParam : Params<OneHotParam> {
  int depth = 1;
  double on_value = 1, off_value = 0;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<OneHotParam>& d) {
    d.field("depth", &OneHotParam::depth)
        .set_lower_bound(1)
        .describe("Length of the one-hot axis (the number of classes).");
    d.field("on_value", &OneHotParam::on_value)
        .set_default(1.0)
        .describe("Value at the index position.");
    d.field("off_value", &OneHotParam::off_value)
        .set_default(0.0)
        .describe("Value everywhere else.");
    d.field("dtype", &OneHotParam::dtype)
        .set_default(DType::kFloat32)
        .describe("Element type of the output.");
  }
};

template <int req>
struct one_hot_kernel {
  template <typename T, typename I>
  TS_XINLINE static void Map(int64_t i, T* out, const I* idx, int64_t depth, T on, T off) {
    const int64_t k = i % depth;
    AssignReq<req>(out[i], IndexValue(idx[i / depth]) == k ? on : off);
  }
};

template <typename xpu>
void OneHotCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<OneHotParam>(attrs);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T on = static_cast<T>(static_cast<AccType<T>>(p.on_value));
    const T off = static_cast<T>(static_cast<AccType<T>>(p.off_value));
    SwitchDType(in[0].dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      SwitchReq(req[0], [&](auto r) {
        Kernel<one_hot_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                     in[0].dptr<I>(), int64_t(p.depth), on, off);
      });
    });
  });
}

}  // namespace tessera::op
