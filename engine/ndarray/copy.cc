// Copies between arrays and between host memory and arrays. Host-to-host
// copies run on the CPU copy lane; anything touching a GPU runs on that GPU's
// copy lane through the CUDA hooks of copy_cuda.cc.
#include <cstring>

#include "engine/ndarray/ndarray.h"

namespace tessera {

using engine::Engine;
using engine::FnProperty;

#ifdef TESSERA_WITH_CUDA
// copy_cuda.cc: an async copy on `stream`, then, where an end is in host
// memory, a wait for it (between GPUs the op completes on an event).
void CudaCopyBytes(void* dst, Context dst_ctx, const void* src, Context src_ctx, size_t bytes,
                   void* stream);
#endif

namespace {

void CopyBytes(void* dst, Context dst_ctx, const void* src, Context src_ctx, size_t bytes,
               const RunContext& rctx) {
  if (bytes == 0) return;
  if (dst_ctx.is_cpu() && src_ctx.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
#ifdef TESSERA_WITH_CUDA
  CudaCopyBytes(dst, dst_ctx, src, src_ctx, bytes, rctx.stream);
#else
  (void)rctx;
  TS_THROW << "copy from " << src_ctx.ToString() << " to " << dst_ctx.ToString()
           << ": this build has no CUDA";
#endif
}

// Where a copy runs: the GPU end's copy lane, or the CPU copy lane.
void CopyPlacement(Context from, Context to, Context* run_ctx, FnProperty* prop) {
  if (to.is_gpu()) {
    *run_ctx = to;
    *prop = from.is_gpu() ? FnProperty::kNormal : FnProperty::kCopyToGPU;
  } else if (from.is_gpu()) {
    *run_ctx = from;
    *prop = FnProperty::kCopyFromGPU;
  } else {
    *run_ctx = Context::CPU();
    *prop = FnProperty::kNormal;
  }
}

}  // namespace

void CopyFromTo(const NDArray& from, const NDArray& to, int priority) {
  TS_CHECK(!from.is_none() && !to.is_none()) << "copyto: an array is empty (none)";
  TS_CHECK(from.shape() == to.shape())
      << "copyto: source shape " << from.shape() << " differs from destination " << to.shape();
  TS_CHECK(from.dtype() == to.dtype())
      << "copyto: source dtype " << DTypeName(from.dtype()) << " differs from destination "
      << DTypeName(to.dtype()) << " (use astype)";
  Context run_ctx;
  FnProperty prop;
  CopyPlacement(from.ctx(), to.ctx(), &run_ctx, &prop);
  const TBlob src = from.data(), dst = to.data();
  // A copy into part of an array updates it: the rest must not be stale.
  const VarHandle reads[] = {from.var(), to.var()};
  Engine::Get()->PushSync(
      [src, dst, keep = from.chunk(), keep2 = to.chunk()](RunContext rctx) {
        CopyBytes(dst.dptr_, dst.ctx_, src.dptr_, src.ctx_, src.bytes(), rctx);
      },
      run_ctx, engine::VarList(reads, to.CoversChunk() ? 1 : 2), {to.var()}, prop, priority,
      "copyto");
}

void NDArray::SyncCopyFromCPU(const void* data, size_t count) const {
  TS_CHECK(!is_none()) << "SyncCopyFromCPU: the array is empty (none)";
  TS_CHECK(count == static_cast<size_t>(Size()))
      << "SyncCopyFromCPU: " << count << " elements given for an array of shape " << shape_ << " ("
      << Size() << " elements)";
  const TBlob dst = this->data();
  Context run_ctx;
  FnProperty prop;
  CopyPlacement(Context::CPU(), dst.ctx_, &run_ctx, &prop);
  const VarHandle self = var();
  Engine::Get()->PushSync(
      [dst, data, keep = ptr_](RunContext rctx) {
        CopyBytes(dst.dptr_, dst.ctx_, data, Context::CPU(), dst.bytes(), rctx);
      },
      run_ctx, engine::VarList(&self, CoversChunk() ? 0 : 1), {self}, prop, 0, "SyncCopyFromCPU");
  // `data` must stay valid until the copy ran: wait for it here.
  WaitToWrite();
}

void NDArray::SyncCopyToCPU(void* data, size_t count) const {
  TS_CHECK(!is_none()) << "SyncCopyToCPU: the array is empty (none)";
  TS_CHECK(count == static_cast<size_t>(Size()))
      << "SyncCopyToCPU: room for " << count << " elements given for an array of shape " << shape_
      << " (" << Size() << " elements)";
  if (ctx().is_cpu()) {
    WaitToRead();
    const TBlob src = this->data();
    std::memcpy(data, src.dptr_, src.bytes());
    return;
  }
  const TBlob src = this->data();
  Context run_ctx;
  FnProperty prop;
  CopyPlacement(src.ctx_, Context::CPU(), &run_ctx, &prop);
  // A private variable marks the copy's completion without blocking writers
  // of this array on the wait.
  VarHandle done = Engine::Get()->NewVariable();
  Engine::Get()->PushSync(
      [src, data, keep = ptr_](RunContext rctx) {
        CopyBytes(data, Context::CPU(), src.dptr_, src.ctx_, src.bytes(), rctx);
      },
      run_ctx, {var()}, {done}, prop, 0, "SyncCopyToCPU");
  try {
    Engine::Get()->WaitForVar(done);
  } catch (...) {
    Engine::Get()->DeleteVariable(nullptr, Context::CPU(), done);
    throw;
  }
  Engine::Get()->DeleteVariable(nullptr, Context::CPU(), done);
}

}  // namespace tessera
