// Argument checks shared by every GEMM entry point: the caller's mistakes
// become errors that name Gemm and the values, never a backend's abort
// (OpenBLAS's xerbla prints and carries on, oneDNN returns a bare status).
#include <algorithm>

#include "engine/base/error.h"
#include "ops/tensor/gemm.h"

namespace tessera::op {

void CheckGemmArgs(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda,
                   int64_t ldb, int64_t ldc) {
  TS_CHECK(m >= 0 && n >= 0 && k >= 0)
      << "Gemm: sizes must not be negative, got m=" << m << " n=" << n << " k=" << k;
  // Row-major: a leading dimension is at least the stored row length.
  const int64_t row_a = trans_a ? m : k, row_b = trans_b ? k : n;
  TS_CHECK(lda >= std::max<int64_t>(1, row_a))
      << "Gemm: lda=" << lda << " is less than the row length " << row_a << " of A (m=" << m
      << " k=" << k << " trans_a=" << trans_a << ")";
  TS_CHECK(ldb >= std::max<int64_t>(1, row_b))
      << "Gemm: ldb=" << ldb << " is less than the row length " << row_b << " of B (k=" << k
      << " n=" << n << " trans_b=" << trans_b << ")";
  TS_CHECK(ldc >= std::max<int64_t>(1, n))
      << "Gemm: ldc=" << ldc << " is less than the row length " << n << " of C (m=" << m << ")";
}

void CheckGemmBatchArgs(int64_t m, int64_t n, int64_t ldc, int64_t batch, int64_t stride_a,
                        int64_t stride_b, int64_t stride_c) {
  TS_CHECK(batch >= 0 && stride_a >= 0 && stride_b >= 0 && stride_c >= 0)
      << "Gemm: batch and strides must not be negative, got batch=" << batch
      << " stride_a=" << stride_a << " stride_b=" << stride_b << " stride_c=" << stride_c;
  // Overlapping outputs would race when the batch runs in parallel.
  const int64_t span_c = m > 0 && n > 0 ? (m - 1) * ldc + n : 0;
  TS_CHECK(batch <= 1 || stride_c >= span_c)
      << "Gemm: stride_c=" << stride_c << " makes the C matrices overlap (m=" << m << " n=" << n
      << " ldc=" << ldc << " needs at least " << span_c << ")";
}

}  // namespace tessera::op
