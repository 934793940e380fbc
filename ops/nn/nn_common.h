// Helpers shared by the neural-network operators (ops/nn): shape assignment
// with errors that name the argument, dtype checks, and column sums.
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"

namespace tessera::op {

// Plane p (`size` elements) of a gradient that a kernel thread owns and
// spreads its contributions into: zeroed first unless the request adds.
template <typename T>
TS_XINLINE T* GradPlane(T* grad, int64_t p, int64_t size, OpReqType req) {
  T* plane = grad + p * size;
  if (req != kAddTo)
    for (int64_t e = 0; e < size; ++e) plane[e] = T(0);
  return plane;
}

// Merges `value` into (*shapes)[i]; a conflict raises
// "<op>: <name> has shape (3,4) but (5,4) is required (<rule>)".
inline void AssignNamed(const NodeAttrs& attrs, std::vector<Shape>* shapes, size_t i,
                        const Shape& value, const char* name, const char* rule) {
  Shape merged = (*shapes)[i];
  TS_CHECK(MergeShape(&merged, value))
      << OpLabel(attrs) << ": " << name << " has shape " << (*shapes)[i] << " but " << value
      << " is required (" << rule << ")";
  (*shapes)[i] = merged;
}

// Every known dtype among `in` and `out` must be a floating-point type.
inline void CheckFloatTypes(const NodeAttrs& attrs, const std::vector<DType>& in,
                            const std::vector<DType>& out) {
  for (size_t i = 0; i < in.size(); ++i)
    TS_CHECK(in[i] == DType::kUnknown || IsFloatingPoint(in[i]))
        << OpLabel(attrs) << ": input " << i << " has dtype " << DTypeName(in[i])
        << ", supported: float16, bfloat16, float32, float64";
  for (size_t i = 0; i < out.size(); ++i)
    TS_CHECK(out[i] == DType::kUnknown || IsFloatingPoint(out[i]))
        << OpLabel(attrs) << ": output " << i << " has dtype " << DTypeName(out[i])
        << ", supported: float16, bfloat16, float32, float64";
}

// FInferType of ops on floating-point data: one dtype for every input and
// output (SameTypeAll), which must be a floating-point one.
inline bool FloatSameType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  CheckFloatTypes(attrs, *in, *out);
  return SameTypeAll(attrs, in, out);
}

// out[j] (+)= sum_r x[r * n + j]: the column sums of a rows x n matrix (bias
// gradients). Threads take column blocks and stream down the rows.
template <typename T>
void SumRows(const RunContext& rctx, const T* x, int64_t rows, int64_t n, T* out, bool accumulate) {
  using A = AccType<T>;
  const int threads = static_cast<int>(std::min<int64_t>(CpuThreads(rctx, rows * n), n));
  auto block = [&](int64_t j0, int64_t j1) {
    std::vector<A> acc(static_cast<size_t>(j1 - j0), A(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * n;
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += static_cast<A>(row[j]);
    }
    for (int64_t j = j0; j < j1; ++j)
      out[j] = static_cast<T>(accumulate ? static_cast<A>(out[j]) + acc[j - j0] : acc[j - j0]);
  };
  if (threads <= 1) return block(0, n);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    const int t = OmpThreadIndex(), nt = OmpThreadCount();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = std::min<int64_t>(n, t * chunk), e = std::min<int64_t>(n, b + chunk);
    if (b < e) block(b, e);
  }
}

// The GPU's column sums: out[j] (+)= sum_r x[r * n + j], one thread per
// column, so neighbouring threads read neighbouring elements of each row.
struct SumColumnKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t j, const T* x, int64_t rows, int64_t n, T* out,
                             bool accumulate) {
    using A = AccType<T>;
    A acc = accumulate ? static_cast<A>(out[j]) : A(0);
    for (int64_t r = 0; r < rows; ++r) acc += static_cast<A>(x[r * n + j]);
    out[j] = static_cast<T>(acc);
  }
};

// A device's row-major GEMM and column sums, for the ops written over their
// device's steps (FcSteps, RnnSteps derive from it, naming themselves as
// Op): defined for both devices in gemm_steps.h, where Op::kName labels
// cuBLAS's errors.
template <typename xpu, typename Op>
struct GemmSteps;

inline std::vector<std::string> DataInputName(const NodeAttrs&) {
  return {"data"};
}

inline std::vector<std::pair<int, int>> InplaceFirstInput(const NodeAttrs&) {
  return {{0, 0}};
}

}  // namespace tessera::op
