// TBlob: what a kernel sees of an array: a typed pointer, a shape and the
// device it lives on. It owns nothing; the NDArray or executor that made it
// keeps the memory alive while the kernel runs. Data is dense, row-major,
// unless the executor marked the blob channel-blocked (MemLayout).
#pragma once

#include <cstddef>

#include "engine/base/context.h"
#include "engine/base/dtype.h"
#include "engine/base/shape.h"

namespace tessera {

// How an op writes an output (MXNet's OpReqType).
enum OpReqType : uint8_t {
  kNullOp,        // do not write
  kWriteTo,       // overwrite; the output does not alias an input
  kWriteInplace,  // overwrite; the output is the same memory as an input
  kAddTo,         // accumulate: out += result
};
const char* OpReqName(OpReqType req);

// How a blob's elements are ordered. kNChw16c is oneDNN's blocked layout of
// a 4-D (N, C, H, W) float32 array whose C is a multiple of 16: index
// ((n * C/16 + c/16) * H * W + h * W + w) * 16 + c % 16. The same bytes as
// the plain array, in another order. Only the graph executor hands a kernel
// such a blob, between ops that declared they read or write it
// (FLayoutClasses); everything else sees kRowMajor.
enum class MemLayout : uint8_t { kRowMajor, kNChw16c };

struct TBlob {
  void* dptr_ = nullptr;
  Shape shape_;
  DType type_flag_ = DType::kFloat32;
  Context ctx_;
  MemLayout layout_ = MemLayout::kRowMajor;

  TBlob() = default;
  TBlob(void* dptr, const Shape& shape, DType dtype, Context ctx = Context::CPU())
      : dptr_(dptr), shape_(shape), type_flag_(dtype), ctx_(ctx) {}

  const Shape& shape() const { return shape_; }
  DType dtype() const { return type_flag_; }
  Context ctx() const { return ctx_; }
  int ndim() const { return shape_.ndim(); }
  int64_t Size() const { return shape_.Size(); }
  MemLayout layout() const { return layout_; }
  bool channel_blocked() const { return layout_ == MemLayout::kNChw16c; }
  size_t bytes() const { return static_cast<size_t>(Size()) * DTypeSize(type_flag_); }

  // The data as T*; an error when T is not the blob's dtype, so a kernel
  // instantiated for the wrong type fails loudly instead of reading garbage.
  template <typename T>
  T* dptr() const {
    TS_CHECK(DTypeOf<T>() == type_flag_)
        << "TBlob holds " << DTypeName(type_flag_) << ", not " << DTypeName(DTypeOf<T>());
    return static_cast<T*>(dptr_);
  }
  // The same memory seen with another shape of the same size.
  TBlob Reshape(const Shape& shape) const {
    TS_CHECK(shape.Size() == Size()) << "TBlob reshape from " << shape_ << " to " << shape;
    TS_DCHECK(layout_ == MemLayout::kRowMajor);  // a blocked order has no other shape
    return TBlob(dptr_, shape, type_flag_, ctx_);
  }
};

}  // namespace tessera
