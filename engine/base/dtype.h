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

// The C++ type of each DType and back, one row per element type:
// CType<DType::kInt32>::type is int32_t and DTypeOf<int32_t>() is kInt32.
namespace dtype_detail {
template <DType D, typename T>
struct Row {};
struct Table : Row<DType::kFloat32, float>,
               Row<DType::kFloat64, double>,
               Row<DType::kFloat16, float16>,
               Row<DType::kBFloat16, bfloat16>,
               Row<DType::kUint8, uint8_t>,
               Row<DType::kInt8, int8_t>,
               Row<DType::kInt32, int32_t>,
               Row<DType::kInt64, int64_t>,
               Row<DType::kBool, bool> {};
// Given one side of a row, a call with a Table deduces the other from the
// one base that matches (and fails to compile for a type not in the table).
template <DType D, typename T>
T TypeOfRow(Row<D, T>);  // only named in decltype
template <typename T, DType D>
constexpr DType DTypeOfRow(Row<D, T>) {
  return D;
}
}  // namespace dtype_detail

template <DType D>
struct CType {
  using type = decltype(dtype_detail::TypeOfRow<D>(dtype_detail::Table{}));
};

template <typename T>
constexpr DType DTypeOf() {
  static_assert(
      requires { dtype_detail::DTypeOfRow<T>(dtype_detail::Table{}); }, "not an element type");
  return dtype_detail::DTypeOfRow<T>(dtype_detail::Table{});
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

namespace dtype_detail {
template <DType... Ds>
struct List {};
// The dtypes each switch below accepts, in the order it tries them.
using Floats = List<DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16>;
using Numerics = List<DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                      DType::kUint8, DType::kInt8, DType::kInt32, DType::kInt64>;
using All = List<DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kUint8,
                 DType::kInt8, DType::kInt32, DType::kInt64, DType::kBool>;

// fn(tag) for the first of D, Rest... that `t` is; an error naming `what`
// when it is none of them.
template <DType D, DType... Rest, typename F>
decltype(auto) SwitchAmong(DType t, F& fn, const char* what) {
  if (t == D) return fn(TypeTag<typename CType<D>::type>{});
  if constexpr (sizeof...(Rest) == 0)
    ThrowUnsupportedDType(t, what);
  else
    return SwitchAmong<Rest...>(t, fn, what);
}
template <DType... Ds, typename F>
decltype(auto) SwitchIn(List<Ds...>, DType t, F& fn, const char* what) {
  return SwitchAmong<Ds...>(t, fn, what);
}
}  // namespace dtype_detail

template <typename F>
decltype(auto) SwitchDType(DType t, F&& fn, const char* what = "this operation") {
  return dtype_detail::SwitchIn(dtype_detail::All{}, t, fn, what);
}

// Floating-point types only (transcendental functions, softmax, ...).
template <typename F>
decltype(auto) SwitchFloatDType(DType t, F&& fn, const char* what = "this operation") {
  return dtype_detail::SwitchIn(dtype_detail::Floats{}, t, fn, what);
}

// Every type but bool (arithmetic).
template <typename F>
decltype(auto) SwitchNumericDType(DType t, F&& fn, const char* what = "this operation") {
  return dtype_detail::SwitchIn(dtype_detail::Numerics{}, t, fn, what);
}

}  // namespace tessera
