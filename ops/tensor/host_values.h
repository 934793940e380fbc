// Values crossing between the host and an op's kernels on either device: an
// input's values on the host, as doubles, for ops that check parameters or
// positions before their kernels run (sample_multinomial, the _sample_*
// samplers, ravel_multi_index), and host integers for the kernels to read.
// The GPU's specialisations are in host_copy_cuda.h (.cu files only).
#pragma once

#include <cstring>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/tblob.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"

namespace tessera::op {

template <typename xpu>
std::vector<double> HostValues(const RunContext& rctx, const TBlob& b);

template <>
inline std::vector<double> HostValues<cpu>(const RunContext&, const TBlob& b) {
  std::vector<double> v(static_cast<size_t>(b.Size()));
  SwitchDType(b.dtype(), [&](auto tag) {
    using V = typename decltype(tag)::type;
    const V* p = b.dptr<V>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(p[i]);
  });
  return v;
}

// `bytes` of host memory into `space` (memory of device xpu, such as the
// op's temp space), ordered before the op's later kernels; the host memory
// may be reused when the call returns.
template <typename xpu>
void CopyHostToSpace(const OpContext& ctx, const void* host, size_t bytes, void* space);

template <>
inline void CopyHostToSpace<cpu>(const OpContext&, const void* host, size_t bytes, void* space) {
  if (bytes) std::memcpy(space, host, bytes);
}

// Host values where device xpu's kernels can read them: the CPU's are the
// vector's own; the GPU's a copy in the op's temp space (ctx.requested[0],
// which the op must not use for anything else).
template <typename xpu, typename V>
const V* ArrayForKernels(const OpContext& ctx, const std::vector<V>& host) {
  if constexpr (xpu::kDevice == DeviceType::kCPU) {
    return host.data();
  } else {
    V* dev = ctx.requested.at(0).get_space_typed<V>(host.empty() ? 1 : host.size());
    CopyHostToSpace<xpu>(ctx, host.data(), host.size() * sizeof(V), dev);
    return dev;
  }
}

}  // namespace tessera::op
