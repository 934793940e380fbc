#include "engine/ndarray/ndarray.h"

#include <cstring>

#include "engine/base/array_bytes.h"
#include "engine/base/logging.h"
#include "engine/op/reshape_spec.h"
#include "engine/scheduler/object_pool.h"
#include "engine/storage/storage.h"

namespace tessera {

using engine::Engine;

NDArray::Chunk::Chunk(size_t bytes_, Context ctx_, bool delay_alloc) : ctx(ctx_), bytes(bytes_) {
  handle.ctx = ctx;
  if (!delay_alloc) CheckAndAlloc();
}

NDArray::Chunk::~Chunk() {
  const VarHandle v = var_if_made();
  // Never allocated (delay_alloc, or a context that cannot allocate), or an
  // alias of another chunk's memory: nothing to free.
  const bool owns_block = handle.dptr && !owner;
  if (!v) {
    // No variable, so no op was ever pushed on the chunk: free at once.
    if (!owns_block) return;
    try {
      storage::Storage::Get()->Free(handle);
    } catch (const std::exception& e) {
      TS_LOG(Error) << "NDArray: freeing its block failed: " << e.what();
    }
    return;
  }
  // Without a block the deletion must not need the device's lanes.
  if (!owns_block) {
    Engine::Get()->DeleteVariable(nullptr, Context::CPU(), v);
    return;
  }
  // The block goes back to the pool after every op pushed on it has run. The
  // deletion runs with `ctx`; capturing only the pointer and size keeps the
  // closure small enough to be stored without an allocation.
  Engine::Get()->DeleteVariable(
      [dptr = handle.dptr, size = handle.size](RunContext r) {
        storage::Storage::Get()->Free(storage::Handle{dptr, size, r.ctx});
      },
      ctx, v);
}

VarHandle NDArray::Chunk::var() {
  VarHandle v = var_.load(std::memory_order_acquire);
  if (v) return v;
  VarHandle made = Engine::Get()->NewVariable();
  if (var_.compare_exchange_strong(v, made, std::memory_order_acq_rel)) return made;
  Engine::Get()->DeleteVariable(nullptr, Context::CPU(), made);  // another thread made one first
  return v;
}

void NDArray::Chunk::CheckAndAlloc() {
  if (handle.dptr || bytes == 0) return;
  handle = storage::Storage::Get()->Alloc(bytes, ctx);
}

NDArray::NDArray(const Shape& shape, Context ctx, DType dtype, bool delay_alloc)
    : shape_(shape), dtype_(dtype) {
  TS_CHECK(shape.known()) << "NDArray: shape " << shape << " has an unknown (0) dimension";
  ptr_ = std::allocate_shared<Chunk>(engine::PoolAllocator<Chunk>(),
                                     ArrayBytes(shape, dtype, "NDArray"), ctx, delay_alloc);
}

NDArray NDArray::Alias() const {
  TS_CHECK(ptr_) << "alias: the array is empty (none)";
  ptr_->CheckAndAlloc();
  auto c = std::make_shared<Chunk>(0, ptr_->ctx, true);
  c->handle = ptr_->handle;
  c->bytes = ptr_->bytes;
  c->owner = ptr_->owner ? ptr_->owner : ptr_;
  NDArray a = Detach();
  a.ptr_ = std::move(c);
  return a;
}

NDArray NDArray::Reshape(const Shape& shape) const {
  TS_CHECK(!is_none()) << "reshape: the array is empty (none)";
  TS_CHECK(shape.known() && shape.Size() == Size())
      << "reshape: cannot view an array of shape " << shape_ << " (" << Size() << " elements) as "
      << shape;
  NDArray r = Detach();  // a view is not the recorded value
  r.shape_ = shape;
  return r;
}

NDArray NDArray::Reshape(const std::vector<int64_t>& spec, bool reverse) const {
  return Reshape(InferReshape(shape_, spec, reverse));
}

NDArray NDArray::Slice(int64_t begin, int64_t end) const {
  TS_CHECK(!is_none()) << "slice: the array is empty (none)";
  const int64_t n = shape_[0];
  TS_CHECK(0 <= begin && begin < end && end <= n)
      << "slice: range [" << begin << ", " << end << ") is invalid for the first axis of shape "
      << shape_ << " (need 0 <= begin < end <= " << n << ")";
  NDArray r = Detach();
  const int64_t row = shape_.ProdRange(1, shape_.ndim());
  r.byte_offset_ += static_cast<size_t>(begin * row) * DTypeSize(dtype_);
  r.shape_[0] = end - begin;
  return r;
}

NDArray NDArray::At(int64_t index) const {
  TS_CHECK(!is_none()) << "at: the array is empty (none)";
  TS_CHECK(0 <= index && index < shape_[0])
      << "index " << index << " is out of range for the first axis of shape " << shape_
      << " (valid: 0 to " << shape_[0] - 1 << ")";
  NDArray r = Slice(index, index + 1);
  if (shape_.ndim() > 1) r.shape_ = Shape(shape_.begin() + 1, shape_.end());
  return r;
}

NDArray NDArray::AsView(const Shape& shape, DType dtype) const {
  TS_CHECK(!is_none()) << "view: the array is empty (none)";
  TS_CHECK(shape.known()) << "view: shape " << shape << " has an unknown (0) dimension";
  const size_t bytes = ArrayBytes(shape, dtype, "view");
  TS_CHECK(byte_offset_ + bytes <= ptr_->bytes)
      << "view: " << shape << " " << DTypeName(dtype) << " (" << bytes << " bytes at offset "
      << byte_offset_ << ") does not fit in a block of " << ptr_->bytes << " bytes";
  NDArray r = Detach();
  r.shape_ = shape;
  r.dtype_ = dtype;
  return r;
}

void NDArray::WaitToRead() const {
  if (VarHandle v = ptr_ ? ptr_->var_if_made() : nullptr)
    Engine::Get()->WaitForVar(v, engine::WaitMode::kRead);
}

void NDArray::WaitToWrite() const {
  if (VarHandle v = ptr_ ? ptr_->var_if_made() : nullptr)
    Engine::Get()->WaitForVar(v, engine::WaitMode::kWrite);
}

NDArray NDArray::CopyTo(Context ctx) const {
  TS_CHECK(!is_none()) << "copyto: the array is empty (none)";
  NDArray r(shape_, ctx, dtype_);
  CopyFromTo(*this, r);
  return r;
}

std::vector<double> NDArray::ToVector() const {
  std::vector<double> out(static_cast<size_t>(Size()));
  SwitchDType(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> host(out.size());
    if constexpr (std::is_same_v<T, bool>) {
      std::unique_ptr<bool[]> b(new bool[out.size()]);
      SyncCopyToCPU(b.get(), out.size());
      for (size_t i = 0; i < out.size(); ++i) out[i] = b[i];
    } else {
      SyncCopyToCPU(host.data(), out.size());
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(host[i]);
    }
  });
  return out;
}

std::string NDArray::Footer() const {
  if (is_none()) return "[NDArray none]";
  return "[NDArray " + std::string(DTypeName(dtype_)) + " " + shape_.ToCompactString() + " @" +
         ctx().ToString() + "]";
}

}  // namespace tessera
