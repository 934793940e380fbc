// GPU matrix products through cuBLAS, on the op's stream, for dot,
// batch_dot, FullyConnected and the linear-algebra ops as they come:
//
//   C_i = alpha op(A_i) op(B_i) + beta C_i,  i < batch (beta 1 when accumulate)
//
// Row-major as gemm.h (op(A) is m x k, op(B) is k x n, C is m x n, leading
// dimensions between rows as stored); matrix i of A starts stride_a
// elements after matrix i-1 (0: one A for every product), likewise B and C.
// float32 is float32-exact unless TESSERA_CUDA_ALLOW_TENSOR_CORE=1
// (engine/resource/cublas_library.h); float16 and bfloat16 multiply on
// tensor cores and sum in float32; float64 in float64 (the 64-bit-size
// entry point: no 2^31 limit). Other dtypes are errors naming `who`.
#pragma once

#include <cstdint>

#include "engine/base/context.h"
#include "engine/base/dtype.h"

namespace tessera::op {

struct GpuGemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  bool accumulate = false;         // beta = 1
  double alpha = 1.0, beta = 0.0;  // float32 and 16-bit products take them as float
};

void GemmGpu(const RunContext& rctx, DType dtype, const GpuGemm& g, const void* a, const void* b,
             void* c, const char* who);

// One product, c = op(a) op(b) (c += when accumulate), for ops' own loops.
template <typename T>
void GemmGpuOne(const RunContext& rctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
                bool accumulate, const char* who) {
  GpuGemm g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.accumulate = accumulate;
  GemmGpu(rctx, DTypeOf<T>(), g, a, b, c, who);
}

// B_i <- alpha op(A_i)^-1 B_i (or B_i op(A_i)^-1 with rightside), i < batch,
// for row-major B_i (m x n, contiguous, back to back) and triangular A_i
// (k x k, k = m or n; lower or upper, the other triangle not read);
// float32 and float64 (cuBLAS's trsm, one call per matrix).
struct GpuTrsm {
  bool rightside = false, lower = true, transpose = false;
  int64_t m = 0, n = 0, batch = 1;
  double alpha = 1.0;
};

void TrsmGpu(const RunContext& rctx, DType dtype, const GpuTrsm& t, const void* a, void* b,
             const char* who);

// LU factorisations with partial pivoting of `batch` n x n matrices (float32
// or float64, back to back), as LAPACK's getrf and getri see row-major
// matrices: the factors of the transpose (same determinant), pivots 1-based
// (n per matrix), info per matrix (> 0: an exactly zero pivot). cuBLAS's
// batched getrf / getri; `ptrs` is device memory for 2 batch pointers.
// LuFactorGpu factors `a` in place; LuInvertGpu writes the inverse of the
// factored matrices to `inv` (not `lu`).
void LuFactorGpu(const RunContext& rctx, DType dtype, int64_t n, int64_t batch, void* a, int* piv,
                 int* info, void** ptrs, const char* who);
void LuInvertGpu(const RunContext& rctx, DType dtype, int64_t n, int64_t batch, const void* lu,
                 const int* piv, void* inv, int* info, void** ptrs, const char* who);

// A row-major triangular problem as the column-major one cuBLAS solves: B
// (m x n) read column-major is B^T (n x m), and op(A) X = B is
// X^T op(A)^T = B^T, so the side flips, A^T's other triangle is the one
// stored, and the sizes swap; the transposition flag stays.
struct ColMajorTrsm {
  bool left, upper, transpose;
  int64_t m, n;
};
inline ColMajorTrsm ToColMajor(const GpuTrsm& t) {
  return {t.rightside, t.lower, t.transpose, t.n, t.m};
}

// The same for the integer types, which cuBLAS does not serve: a plain
// kernel summing in int64, as the CPU does (gemm_gpu_integer.cu).
void GemmGpuInteger(const RunContext& rctx, DType dtype, const GpuGemm& g, const void* a,
                    const void* b, void* c, const char* who);

}  // namespace tessera::op
