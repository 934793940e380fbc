#include "engine/base/dtype.h"

#include <array>

namespace tessera {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
};

constexpr std::array<DTypeInfo, 9> kInfo = {{
    {DType::kFloat32, "float32", 4},
    {DType::kFloat64, "float64", 8},
    {DType::kFloat16, "float16", 2},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kUint8, "uint8", 1},
    {DType::kInt8, "int8", 1},
    {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kBool, "bool", 1},
}};

const DTypeInfo* Find(DType t) {
  for (const auto& i : kInfo)
    if (i.type == t) return &i;
  return nullptr;
}

}  // namespace

// The inline size table agrees with this one.
constexpr bool SizesAgree() {
  size_t listed = 0;
  for (uint8_t size : dtype_detail::kSizeByFlag) listed += size != 0;
  for (const auto& i : kInfo)
    if (dtype_detail::kSizeByFlag[static_cast<int>(i.type)] != i.size) return false;
  return listed == kInfo.size();
}
static_assert(SizesAgree());

void dtype_detail::ThrowUnknownSize(DType t) {
  TS_THROW << "element size of an unknown dtype (flag " << int(t) << ")";
}

const char* DTypeName(DType t) {
  const DTypeInfo* i = Find(t);
  return i ? i->name : "unknown";
}

std::string AllDTypeNames() {
  std::string s;
  for (const auto& i : kInfo) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

DType DTypeFromName(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.type;
  // MXNet and NumPy spellings people type.
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  if (name == "int") return DType::kInt32;
  TS_THROW << "unknown dtype '" << name << "' (expected one of " << AllDTypeNames() << ")";
}

bool IsValidDType(int flag) {
  for (const auto& i : kInfo)
    if (int(i.type) == flag) return true;
  return false;
}

bool IsFloatingPoint(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

bool IsInteger(DType t) {
  return t == DType::kUint8 || t == DType::kInt8 || t == DType::kInt32 || t == DType::kInt64;
}

void ThrowUnsupportedDType(DType t, const char* what) {
  TS_THROW << what << " does not support dtype " << DTypeName(t);
}

}  // namespace tessera
