// add_n (ElementWiseSum): the sum of any number of same-shape arrays. The
// gradient pass sums the gradients of an entry used several times with it.
#pragma once

#include <vector>

#include "ops/tensor/elemwise_common.h"

namespace tessera::op {

struct AddNParam : Params<AddNParam> {
  int num_args = 1;
  static void Declare(ParamDecl<AddNParam>& d) {
    d.field("num_args", &AddNParam::num_args).set_lower_bound(1).describe("Number of inputs.");
  }
};

namespace sum {
// out (req)= a + b, summed in the accumulation type.
template <int req>
struct add2 {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* a, const T* b) {
    AssignReq<req>(out[i], static_cast<AccType<T>>(a[i]) + static_cast<AccType<T>>(b[i]));
  }
};
template <int req>
struct copy1 {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* a) {
    AssignReq<req>(out[i], a[i]);
  }
};
}  // namespace sum

// Pairwise passes: out = in0 + in1, then out += in_k. With req add, every
// input is added in turn. Output 0 may be input 0 (in place).
template <typename xpu>
void AddNCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t n = out[0].Size();
  SwitchDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = out[0].dptr<T>();
        size_t k = 0;
        if (req[0] != kAddTo) {
          if (in.size() == 1) {
            if (in[0].dptr<T>() != o)
              Kernel<sum::copy1<kWriteTo>, xpu>::Launch(ctx.run_ctx, n, o, in[0].dptr<T>());
            k = 1;
          } else {
            Kernel<sum::add2<kWriteTo>, xpu>::Launch(ctx.run_ctx, n, o, in[0].dptr<T>(),
                                                     in[1].dptr<T>());
            k = 2;
          }
        }
        for (; k < in.size(); ++k)
          Kernel<sum::copy1<kAddTo>, xpu>::Launch(ctx.run_ctx, n, o, in[k].dptr<T>());
      },
      "add_n");
}

}  // namespace tessera::op
