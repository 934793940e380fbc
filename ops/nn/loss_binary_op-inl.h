// softmax_cross_entropy's label rule, shared by the CPU (loss_binary_op.cc)
// and GPU (loss_binary_op.cu) kernels.
#pragma once

#include <cstdint>

#include "engine/base/dtype.h"
#include "engine/op/infer_utils.h"
#include "engine/op/op.h"

namespace tessera::op {

// The row's label as a class index; an error when outside [0, k).
template <typename T>
inline int64_t LabelIndex(const NodeAttrs& attrs, const T* label, int64_t r, int64_t k) {
  const double v = static_cast<double>(static_cast<AccType<T>>(label[r]));
  const int64_t c = static_cast<int64_t>(v);
  TS_CHECK(v >= 0 && c < k) << OpLabel(attrs) << ": label " << v << " of row " << r
                            << " is outside [0, " << k << ")";
  return c;
}

}  // namespace tessera::op
