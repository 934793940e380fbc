// Moving the few values an op checks on the host: a device array copied to
// the host (on the op's stream, which the call then waits for), and host
// integers copied into the op's temp space for its kernels. For the ops that
// validate indices, labels or boxes before they run (take, gather_nd,
// CTCLoss, the ROI ops, the samplers, index_copy). Include from .cu
// files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "engine/base/host_sync_cuda.h"
#include "engine/base/tblob.h"
#include "engine/op/op_attr_types.h"
#include "ops/tensor/host_values.h"

namespace tessera::op {

// `b`'s bytes in `*raw`, and a host TBlob over them.
inline TBlob CopyToHost(const RunContext& rctx, const TBlob& b, std::vector<unsigned char>* raw) {
  raw->resize(b.bytes());
  cudaStream_t stream = rctx.get_stream<cudaStream_t>();
  TS_CUDA_CALL(cudaMemcpyAsync(raw->data(), b.dptr_, raw->size(), cudaMemcpyDeviceToHost, stream));
  WaitForStreamOnHost(stream, "op values to the host");
  return TBlob(raw->data(), b.shape(), b.dtype(), Context::CPU());
}

// `host` in the op's temp space (ctx.requested[0]) on the device.
inline int64_t* CopyToTemp(const OpContext& ctx, const std::vector<int64_t>& host) {
  int64_t* dev = ctx.requested.at(0).get_space_typed<int64_t>(host.empty() ? 1 : host.size());
  // From pageable memory the copy is staged before cudaMemcpyAsync returns.
  TS_CUDA_CALL(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(int64_t),
                               cudaMemcpyHostToDevice, ctx.run_ctx.get_stream<cudaStream_t>()));
  return dev;
}

// HostValues (host_values.h) of a device array.
template <>
inline std::vector<double> HostValues<gpu>(const RunContext& rctx, const TBlob& b) {
  std::vector<unsigned char> raw;
  return HostValues<cpu>(rctx, CopyToHost(rctx, b, &raw));
}

template <>
inline void CopyHostToSpace<gpu>(const OpContext& ctx, const void* host, size_t bytes,
                                 void* space) {
  // From pageable memory the copy is staged before cudaMemcpyAsync returns.
  if (bytes)
    TS_CUDA_CALL(cudaMemcpyAsync(space, host, bytes, cudaMemcpyHostToDevice,
                                 ctx.run_ctx.get_stream<cudaStream_t>()));
}

}  // namespace tessera::op
