// Embedding's parameters and index rule, shared by the CPU kernels
// (embedding.cc) and the GPU's (embedding.cu).
#pragma once

#include <cstdint>
#include <type_traits>

#include "engine/base/dtype.h"
#include "engine/base/host_device.h"
#include "engine/op/params.h"

namespace tessera::op {

struct EmbeddingParam : Params<EmbeddingParam> {
  int64_t input_dim = 0, output_dim = 0;
  DType dtype = DType::kFloat32;
  bool sparse_grad = false;
  static void Declare(ParamDecl<EmbeddingParam>& d) {
    d.field("input_dim", &EmbeddingParam::input_dim)
        .set_lower_bound(1)
        .describe("Vocabulary size: the number of rows of the weight (indices 0 .. input_dim-1).");
    d.field("output_dim", &EmbeddingParam::output_dim)
        .set_lower_bound(1)
        .describe("Dimension of the embedding vectors (columns of the weight).");
    d.field("dtype", &EmbeddingParam::dtype)
        .set_default(DType::kFloat32)
        .describe("Data type of the weight and the output.");
    d.field("sparse_grad", &EmbeddingParam::sparse_grad)
        .set_default(false)
        .describe("Row-sparse weight gradients (MXNet); only False is supported.");
  }
};

// The row an index selects, clipped into [0, rows - 1].
template <typename I>
TS_XINLINE int64_t ClipIndex(I v, int64_t rows) {
  if constexpr (!std::is_integral_v<I>) {
    const double d = static_cast<double>(static_cast<AccType<I>>(v));
    if (!(d > 0)) return 0;  // negatives and NaN
    if (d >= static_cast<double>(rows - 1)) return rows - 1;
    return static_cast<int64_t>(d);
  } else {
    const int64_t i = static_cast<int64_t>(v);
    return i < 0 ? 0 : (i >= rows ? rows - 1 : i);
  }
}

}  // namespace tessera::op
