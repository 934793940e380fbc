// _rnn_param_concat's kernels, for either device (rnn_param_concat.cc,
// rnn_param_concat.cu): the inputs flattened and copied back to back into
// the output, and the output's gradient cut back into the inputs' pieces.
#pragma once

#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/tblob.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"

namespace tessera::op {

// out[i] (op)= in[i], by a request known at run time.
struct CopyPieceKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, OpReqType req) {
    AssignReqAt(out[i], in[i], req);
  }
};

template <typename xpu>
void ParamConcatForward(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = out[0].dptr<T>();
    for (const TBlob& b : in) {
      const int64_t n = b.Size();
      if (n > 0) Kernel<CopyPieceKernel, xpu>::Launch(ctx.run_ctx, n, y, b.dptr<T>(), req[0]);
      y += n;
    }
  });
}

// Inputs: ograd, the forward's inputs; outputs: one gradient per forward
// input, its piece of ograd.
template <typename xpu>
void ParamConcatBackward(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = in[0].dptr<T>();
    for (size_t k = 0; k < out.size(); ++k) {
      const int64_t n = out[k].Size();
      if (req[k] != kNullOp && n > 0)
        Kernel<CopyPieceKernel, xpu>::Launch(ctx.run_ctx, n, out[k].dptr<T>(), g, req[k]);
      g += n;
    }
  });
}

}  // namespace tessera::op
