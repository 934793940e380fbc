// SwapAxis (swapaxes): interchanges two axes, written against the reference's
// class-style Operator / OperatorProperty interface. Its gradient is the same
// swap applied to out_grad, so the backward reads out_grad only.
// Shared by the CPU (.cc) and GPU (.cu) files.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/legacy_op/operator_property.h"
#include "engine/op/kernel_launch.h"

namespace tessera::op {

struct SwapAxisParam : Params<SwapAxisParam> {
  int dim1 = 0, dim2 = 0;
  static void Declare(ParamDecl<SwapAxisParam>& d) {
    d.field("dim1", &SwapAxisParam::dim1)
        .set_default(0)
        .set_axis()
        .describe("The first axis to swap (negative: from the end).");
    d.field("dim2", &SwapAxisParam::dim2)
        .set_default(0)
        .set_axis()
        .describe("The second axis to swap (negative: from the end).");
  }
};

// `in` seen as (a, d1, b, d2, c) is written to `out` as (a, d2, b, d1, c);
// i indexes the output.
template <int req>
struct swapaxis_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, int64_t d1, int64_t b, int64_t d2,
                             int64_t c) {
    int64_t rest = i;
    const int64_t ic = rest % c;
    rest /= c;
    const int64_t i1 = rest % d1;
    rest /= d1;
    const int64_t ib = rest % b;
    rest /= b;
    const int64_t i2 = rest % d2;
    const int64_t ia = rest / d2;
    AssignReq<req>(out[i], in[(((ia * d1 + i1) * b + ib) * d2 + i2) * c + ic]);
  }
};

// `axis` (the parameter `name`) normalised for shape s, or an error naming
// the parameter and the shape.
inline int SwapAxisIndex(int axis, const char* name, const Shape& s) {
  TS_CHECK(axis >= -s.ndim() && axis < s.ndim())
      << "SwapAxis: " << name << " = " << axis << " is out of range for shape " << s
      << " (valid: " << -s.ndim() << " to " << s.ndim() - 1 << ")";
  return axis < 0 ? axis + s.ndim() : axis;
}

// The shape with axes dim1 and dim2 interchanged.
inline Shape SwapAxes(const Shape& s, int dim1, int dim2) {
  const int a1 = SwapAxisIndex(dim1, "dim1", s);
  const int a2 = SwapAxisIndex(dim2, "dim2", s);
  Shape out = s;
  out[a1] = s[a2];
  out[a2] = s[a1];
  return out;
}

// out (req)= `in` with axes dim1 and dim2 interchanged.
template <typename xpu>
void SwapAxisApply(const OpContext& ctx, const TBlob& in, OpReqType req, const TBlob& out, int dim1,
                   int dim2) {
  const Shape& s = in.shape();
  int lo = SwapAxisIndex(dim1, "dim1", s);
  int hi = SwapAxisIndex(dim2, "dim2", s);
  if (lo > hi) std::swap(lo, hi);
  const int64_t d1 = s[lo];
  const int64_t d2 = lo == hi ? 1 : s[hi];  // one axis "swapped" with itself: a copy
  const int64_t b = lo == hi ? 1 : s.ProdRange(lo + 1, hi);
  const int64_t c = s.ProdRange(hi + 1, s.ndim());
  SwitchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req, [&](auto r) {
      Kernel<swapaxis_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out.Size(), out.dptr<T>(),
                                                    in.dptr<T>(), d1, b, d2, c);
    });
  });
}

template <typename xpu>
class SwapAxisOp : public Operator {
 public:
  explicit SwapAxisOp(const SwapAxisParam& param) : param_(param) {}

  void Forward(const OpContext& ctx, const std::vector<TBlob>& in_data,
               const std::vector<OpReqType>& req, const std::vector<TBlob>& out_data,
               const std::vector<TBlob>&) override {
    SwapAxisApply<xpu>(ctx, in_data[0], req[0], out_data[0], param_.dim1, param_.dim2);
  }

  // Swapping the same axes of out_grad gives in_grad.
  void Backward(const OpContext& ctx, const std::vector<TBlob>& out_grad, const std::vector<TBlob>&,
                const std::vector<TBlob>&, const std::vector<OpReqType>& req,
                const std::vector<TBlob>& in_grad, const std::vector<TBlob>&) override {
    SwapAxisApply<xpu>(ctx, out_grad[0], req[0], in_grad[0], param_.dim1, param_.dim2);
  }

 private:
  SwapAxisParam param_;
};

// Defined in swapaxis_op.cu (CUDA builds only).
Operator* CreateSwapAxisOpGpu(const SwapAxisParam& param);

class SwapAxisProp : public OperatorProperty {
 public:
  void Init(const std::vector<std::pair<std::string, std::string>>& kwargs) override {
    param_.Init(ParamDict(kwargs.begin(), kwargs.end()), "SwapAxis");
  }
  std::map<std::string, std::string> GetParams() const override {
    const ParamDict d = param_.GetDict();
    return {d.begin(), d.end()};
  }
  std::string TypeString() const override { return "SwapAxis"; }
  OperatorProperty* Copy() const override { return new SwapAxisProp(*this); }

  // Mutual: the output is the swapped input and the input the swapped output.
  bool InferShape(std::vector<Shape>* in_shape, std::vector<Shape>* out_shape,
                  std::vector<Shape>* aux_shape) const override;

  std::vector<int> DeclareBackwardDependency(const std::vector<int>& out_grad,
                                             const std::vector<int>&,
                                             const std::vector<int>&) const override {
    return {out_grad[0]};
  }

  Operator* CreateOperator(Context ctx) const override;

  const SwapAxisParam& param() const { return param_; }

 private:
  SwapAxisParam param_;
};

}  // namespace tessera::op
