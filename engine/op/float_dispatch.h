// Dispatch of kernels written for float32 and float64 only (the plain CPU
// loops, LAPACK): other dtypes are an error naming the op.
#pragma once

#include <type_traits>

#include "engine/base/dtype.h"
#include "engine/op/infer_utils.h"

namespace tessera::op {

// Calls fn(T{}) for float32 and float64 data; an error names the op for the
// others.
template <typename F>
void ForFloatAndDouble(const NodeAttrs& attrs, DType t, const char* what, F fn) {
  SwitchFloatDType(
      t,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
          fn(T{});
        else
          TS_THROW << OpLabel(attrs) << ": dtype " << DTypeName(t)
                   << " is not supported (float32, float64)";
      },
      what);
}

}  // namespace tessera::op
