// The byte size of an array, checked. Shapes come from users' tables, files,
// symbol JSON and ops' shape functions; an element count or byte count that
// wraps would allocate too little (or nothing) and let kernels write past
// it. So every array is sized here once, where it is first sized (a new
// NDArray, an op's inferred outputs, an executor's memory plan), and
// Shape::Size() stays unchecked on the hot paths after that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/base/dtype.h"
#include "engine/base/shape.h"

namespace tessera {

// No array is larger: a bigger request is a wrong shape, not a real need
// (the storage pools refuse larger blocks too), and it keeps every byte
// count and offset far from overflow.
inline constexpr uint64_t kMaxArrayBytes = uint64_t{1} << 47;  // 128 TiB

// prod(shape) * DTypeSize(dtype) into *bytes, or false when that is more
// than kMaxArrayBytes (overflow included) or a dimension is negative. For
// callers whose error names something that costs a string to build; the
// others call ArrayBytes.
inline bool FitsArray(const Shape& shape, DType dtype, size_t* bytes) {
  uint64_t n = DTypeSize(dtype);
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  *bytes = static_cast<size_t>(n);
  return n <= kMaxArrayBytes;
}

// The error of a shape that FitsArray refuses, naming `who`:
//   "zeros: shape (2147483648,2147483648) float32 needs 16 EiB, more than the
//    128 TiB one array may hold"
//   "NDArray: shape (2,-3) has a negative dimension (-3 at axis 1)"
[[noreturn]] void ThrowArrayTooLarge(const Shape& shape, DType dtype, std::string_view who);

// prod(shape) * DTypeSize(dtype), or ThrowArrayTooLarge's error. Unknown (0)
// dimensions give 0 bytes. Inline: it runs for every new array.
inline size_t ArrayBytes(const Shape& shape, DType dtype, std::string_view who) {
  size_t bytes = 0;
  if (!FitsArray(shape, dtype, &bytes)) [[unlikely]]
    ThrowArrayTooLarge(shape, dtype, who);
  return bytes;
}

}  // namespace tessera
