// Element types. The numeric values are MXNet's type flags, so they can be
// written to and read from MXNet's files and symbol JSON unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>

#include "engine/base/error.h"
#include "engine/base/half.h"

namespace tessera {

enum class DType : int8_t {
  kUnknown = -1,  // not inferred yet
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kUint8 = 3,
  kInt32 = 4,
  kInt8 = 5,
  kInt64 = 6,
  kBool = 7,
  kBFloat16 = 12,
};

// The C++ type of each DType and back.
template <DType T>
struct CType;
template <>
struct CType<DType::kFloat32> {
  using type = float;
};
template <>
struct CType<DType::kFloat64> {
  using type = double;
};
template <>
struct CType<DType::kFloat16> {
  using type = float16;
};
template <>
struct CType<DType::kBFloat16> {
  using type = bfloat16;
};
template <>
struct CType<DType::kUint8> {
  using type = uint8_t;
};
template <>
struct CType<DType::kInt8> {
  using type = int8_t;
};
template <>
struct CType<DType::kInt32> {
  using type = int32_t;
};
template <>
struct CType<DType::kInt64> {
  using type = int64_t;
};
template <>
struct CType<DType::kBool> {
  using type = bool;
};

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kFloat64;
  else if constexpr (std::is_same_v<T, float16>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::kUint8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::kInt8;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::kInt64;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::kBool;
  else
    static_assert(sizeof(T) == 0, "not an element type");
}

namespace dtype_detail {
// Bytes per element by flag (0: no such dtype), checked against the name
// table in dtype.cc. Inline: every array made asks.
inline constexpr uint8_t kSizeByFlag[13] = {4, 8, 2, 1, 4, 1, 8, 1, 0, 0, 0, 0, 2};
[[noreturn]] void ThrowUnknownSize(DType t);
}  // namespace dtype_detail
// Bytes per element; an error for kUnknown.
inline size_t DTypeSize(DType t) {
  const auto flag = static_cast<unsigned>(static_cast<int>(t));
  if (flag < std::size(dtype_detail::kSizeByFlag) && dtype_detail::kSizeByFlag[flag])
    return dtype_detail::kSizeByFlag[flag];
  dtype_detail::ThrowUnknownSize(t);
}
const char* DTypeName(DType t);              // "float32", ..., "unknown"
DType DTypeFromName(std::string_view name);  // error naming the bad name
bool IsValidDType(int flag);                 // a flag read from a file or JSON
bool IsFloatingPoint(DType t);               // float16/32/64, bfloat16
bool IsInteger(DType t);                     // int and uint types, not bool
std::string AllDTypeNames();                 // "float32, float64, ..." for messages

// The types arithmetic is done in: float for the 16-bit floats, the type
// itself otherwise.
template <typename T>
using AccType =
    std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

// Calls fn(tag) with tag an object of type TypeTag<T> for the C++ type of `t`:
//   SwitchDType(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
// The *Float and *Numeric variants only instantiate fn for the types an op
// supports and raise `what` + the dtype name for the others.
template <typename T>
struct TypeTag {
  using type = T;
};

[[noreturn]] void ThrowUnsupportedDType(DType t, const char* what);

template <typename F>
decltype(auto) SwitchDType(DType t, F&& fn, const char* what = "this operation") {
  switch (t) {
    case DType::kFloat32:
      return fn(TypeTag<float>{});
    case DType::kFloat64:
      return fn(TypeTag<double>{});
    case DType::kFloat16:
      return fn(TypeTag<float16>{});
    case DType::kBFloat16:
      return fn(TypeTag<bfloat16>{});
    case DType::kUint8:
      return fn(TypeTag<uint8_t>{});
    case DType::kInt8:
      return fn(TypeTag<int8_t>{});
    case DType::kInt32:
      return fn(TypeTag<int32_t>{});
    case DType::kInt64:
      return fn(TypeTag<int64_t>{});
    case DType::kBool:
      return fn(TypeTag<bool>{});
    default:
      ThrowUnsupportedDType(t, what);
  }
}

// Floating-point types only (transcendental functions, softmax, ...).
template <typename F>
decltype(auto) SwitchFloatDType(DType t, F&& fn, const char* what = "this operation") {
  switch (t) {
    case DType::kFloat32:
      return fn(TypeTag<float>{});
    case DType::kFloat64:
      return fn(TypeTag<double>{});
    case DType::kFloat16:
      return fn(TypeTag<float16>{});
    case DType::kBFloat16:
      return fn(TypeTag<bfloat16>{});
    default:
      ThrowUnsupportedDType(t, what);
  }
}

// Every type but bool (arithmetic).
template <typename F>
decltype(auto) SwitchNumericDType(DType t, F&& fn, const char* what = "this operation") {
  switch (t) {
    case DType::kFloat32:
      return fn(TypeTag<float>{});
    case DType::kFloat64:
      return fn(TypeTag<double>{});
    case DType::kFloat16:
      return fn(TypeTag<float16>{});
    case DType::kBFloat16:
      return fn(TypeTag<bfloat16>{});
    case DType::kUint8:
      return fn(TypeTag<uint8_t>{});
    case DType::kInt8:
      return fn(TypeTag<int8_t>{});
    case DType::kInt32:
      return fn(TypeTag<int32_t>{});
    case DType::kInt64:
      return fn(TypeTag<int64_t>{});
    default:
      ThrowUnsupportedDType(t, what);
  }
}

}  // namespace tessera
