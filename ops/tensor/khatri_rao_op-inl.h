// khatri_rao's kernel, shared by the CPU (khatri_rao_op.cc) and GPU
// (khatri_rao_op.cu) registrations: a thread per output element, the inputs
// read through a table of their addresses and row counts (any number of
// inputs; on the GPU the table sits in temp space).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"
#include "ops/tensor/host_values.h"

namespace tessera::op {

// Element (r, k): the product of the inputs' entries in column k at the
// digits of r in mixed radix (the first matrix's row most significant),
// taken from the last input to the first, in AccType. Input j's address is
// table[2 j], its rows table[2 j + 1].
struct KhatriRaoElement {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const int64_t* table, int64_t inputs, int64_t cols,
                             OpReqType req) {
    const int64_t k = i % cols;
    int64_t rest = i / cols;
    AccType<T> v = 1;
    for (int64_t j = inputs; j-- > 0;) {
      const T* x = reinterpret_cast<const T*>(static_cast<uintptr_t>(table[2 * j]));
      const int64_t m = table[2 * j + 1];
      v *= static_cast<AccType<T>>(x[(rest % m) * cols + k]);
      rest /= m;
    }
    if (req == kAddTo)
      AssignReq<kAddTo>(y[i], v);
    else
      y[i] = static_cast<T>(v);
  }
};

template <typename xpu>
void KhatriRaoCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  std::vector<int64_t> table;
  for (const TBlob& b : in) {
    table.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(b.dptr_)));
    table.push_back(b.shape()[0]);
  }
  const int64_t* dev_table = ArrayForKernels<xpu>(ctx, table);
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<KhatriRaoElement, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                              dev_table, int64_t(in.size()), out[0].shape()[1],
                                              req[0]);
      },
      "khatri_rao");
}

}  // namespace tessera::op
