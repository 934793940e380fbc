// contrib.index_copy (MXNet's): the rows of old_tensor that index_vector
// names replaced by new_tensor's rows. The indices are checked on the host
// (on the GPU after a copy: the op waits for its stream once), where each
// output row's source is worked out (-1: old_tensor's row, else the last new
// row naming it); the kernels gather by it, a thread per element, shared by
// the CPU (index_copy_op.cc) and GPU (index_copy_op.cu) registrations.
#pragma once

#include <vector>

#include "engine/op/kernel_launch.h"
#include "ops/tensor/indexing_op-inl.h"

namespace tessera::op {

// Host integers in the op's temp space on xpu.
template <typename xpu>
const int64_t* IntsToDevice(const OpContext& ctx, const std::vector<int64_t>& host);
template <>
inline const int64_t* IntsToDevice<cpu>(const OpContext& ctx, const std::vector<int64_t>& host) {
  int64_t* p = ctx.requested.at(0).get_space_typed<int64_t>(host.empty() ? 1 : host.size());
  std::copy(host.begin(), host.end(), p);
  return p;
}
template <>
const int64_t* IntsToDevice<gpu>(const OpContext& ctx, const std::vector<int64_t>& host);

// The checked rows and, after them, each output row's source: rows (K) then
// source (n) in one block.
template <typename xpu>
const int64_t* IndexCopyPlan(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& idx,
                             int64_t n) {
  std::vector<int64_t> plan = IndicesToHost<xpu>(ctx.run_ctx, idx);
  const size_t k = plan.size();
  for (size_t i = 0; i < k; ++i)
    TS_CHECK(plan[i] >= 0 && plan[i] < n)
        << OpLabel(attrs) << ": index_vector[" << i << "] = " << plan[i]
        << " is not a row of old_tensor (0 to " << n - 1 << ")";
  plan.resize(k + size_t(n), -1);
  for (size_t i = 0; i < k; ++i) plan[k + size_t(plan[i])] = int64_t(i);
  return IntsToDevice<xpu>(ctx, plan);
}

struct IndexCopyElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, const int64_t* source, int64_t row, const T* old,
                             const T* neu, T* y, OpReqType req) {
    const int64_t s = source[e / row];
    const T v = s < 0 ? old[e] : neu[s * row + e % row];
    y[e] = req == kAddTo ? static_cast<T>(y[e] + v) : v;
  }
};

// d old_tensor: the output gradient, zero on the replaced rows.
struct IndexCopyOldGrad {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, const int64_t* source, int64_t row, const T* g, T* d,
                             OpReqType req) {
    const T v = source[e / row] < 0 ? g[e] : T(0);
    d[e] = req == kAddTo ? static_cast<T>(d[e] + v) : v;
  }
};

// d new_tensor: row i is the output gradient's row index_vector[i].
struct IndexCopyNewGrad {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, const int64_t* rows, int64_t row, const T* g, T* d,
                             OpReqType req) {
    const T v = g[rows[e / row] * row + e % row];
    d[e] = req == kAddTo ? static_cast<T>(d[e] + v) : v;
  }
};

template <typename xpu>
void IndexCopyCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t n = in[0].shape()[0], row = in[0].Size() / n;
  const int64_t* plan = IndexCopyPlan<xpu>(attrs, ctx, in[1], n);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Kernel<IndexCopyElem, xpu>::Launch(ctx.run_ctx, out[0].Size(), plan + in[1].Size(), row,
                                       in[0].dptr<T>(), in[2].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
}

// in: dOut, index_vector; out: d old_tensor, d index_vector (zero), d new_tensor.
template <typename xpu>
void IndexCopyBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const int64_t n = in[0].shape()[0], row = in[0].Size() / n;
  const int64_t* plan = IndexCopyPlan<xpu>(attrs, ctx, in[1], n);
  SwitchNumericDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (req[0] != kNullOp)
          Kernel<IndexCopyOldGrad, xpu>::Launch(ctx.run_ctx, out[0].Size(), plan + in[1].Size(),
                                                row, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
        if (req[2] != kNullOp)
          Kernel<IndexCopyNewGrad, xpu>::Launch(ctx.run_ctx, out[2].Size(), plan, row,
                                                in[0].dptr<T>(), out[2].dptr<T>(), req[2]);
      },
      "_backward_index_copy");
  if (req[1] == kWriteTo || req[1] == kWriteInplace) ZeroBlob<xpu>(ctx.run_ctx, out[1]);
}

}  // namespace tessera::op
