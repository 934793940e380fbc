// Integer matrix products on the GPU (cuBLAS has none for these layouts):
// a thread per element of C, summing in int64 as the CPU's GemmFallback does
// for integers, so both give the same wrapped results.
#include <type_traits>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/gemm_gpu.h"

namespace tessera::op {
namespace {

struct IntegerGemmKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t idx, GpuGemm g, const T* a, const T* b, T* c) {
    const int64_t mn = g.m * g.n;
    const int64_t bi = idx / mn, r = idx % mn, i = r / g.n, j = r % g.n;
    const T* pa = a + bi * g.stride_a;
    const T* pb = b + bi * g.stride_b;
    int64_t acc = 0;
    for (int64_t p = 0; p < g.k; ++p) {
      const T av = g.trans_a ? pa[p * g.lda + i] : pa[i * g.lda + p];
      const T bv = g.trans_b ? pb[j * g.ldb + p] : pb[p * g.ldb + j];
      acc += static_cast<int64_t>(av) * static_cast<int64_t>(bv);
    }
    T& out = c[bi * g.stride_c + i * g.ldc + j];
    out = static_cast<T>(g.accumulate ? static_cast<int64_t>(out) + acc : acc);
  }
};

}  // namespace

void GemmGpuInteger(const RunContext& rctx, DType dtype, const GpuGemm& g, const void* a,
                    const void* b, void* c, const char* who) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  TS_DCHECK(g.alpha == 1.0 && g.beta == 0.0);  // dot's integer products only write or add
  SwitchDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      Kernel<IntegerGemmKernel, gpu>::Launch(rctx, g.batch * g.m * g.n, g, static_cast<const T*>(a),
                                             static_cast<const T*>(b), static_cast<T*>(c));
    } else {
      TS_THROW << who << " on the GPU: dtype " << DTypeName(dtype) << " has no matrix product";
    }
  });
}

}  // namespace tessera::op
