// The element functor that sets every element of an output to one value,
// shared by the init ops (full, zeros_like, ...) and the scatter gradients
// that start from zeros.
#pragma once

#include <cstdint>

#include "engine/op/kernel_launch.h"

namespace tessera::op {

template <int req>
struct fill_value_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T v) {
    AssignReq<req>(out[i], v);
  }
};

}  // namespace tessera::op
