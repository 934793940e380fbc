#include <cuda_runtime.h>

#include "engine/base/context.h"
#include "engine/base/host_sync_cuda.h"

namespace tessera {

void CudaCopyBytes(void* dst, Context dst_ctx, const void* src, Context src_ctx, size_t bytes,
                   void* stream) {
  // Unified addressing tells the driver which end is where.
  auto s = static_cast<cudaStream_t>(stream);
  TS_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  // Between GPUs the copy completes as a compute op does, on an event behind
  // it that orders its readers and the frees of both arrays (the engine's
  // fences): no wait here, so a training step that copies its batch into
  // the executor's arrays keeps the GPU's queue full. An end in host memory
  // is waited for: the host reads it next, or may reuse it once the op ran.
  if (dst_ctx.is_gpu() && src_ctx.is_gpu()) return;
  WaitForStreamOnHost(s, "copy to or from host memory");
}

}  // namespace tessera
