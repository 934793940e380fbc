// The oneDNN backend: dnnl_sgemm (row-major, like the public API). oneDNN 2.6
// has no double GEMM. Where oneDNN cannot be loaded, OpenBLAS does it.
#include <oneapi/dnnl/dnnl.h>

#include "engine/base/error.h"
#include "engine/op/omp_threads.h"
#include "ops/tensor/dnnl_lazy.h"
#include "ops/tensor/gemm.h"

namespace tessera::op::gemm {

// oneDNN sizes its OpenMP team from the calling thread's setting.
void DnnlGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc, int num_threads) {
  if (!nn_dnnl::Available())
    return OpenBlasGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                        num_threads);
  ScopedOmpThreads threads(ResolveThreads(num_threads));
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                ldb, beta, c, ldc);
  TS_CHECK(st == dnnl_success) << "Gemm: dnnl_sgemm failed with status " << int(st) << " (m=" << m
                               << " n=" << n << " k=" << k << " lda=" << lda << " ldb=" << ldb
                               << " ldc=" << ldc << ")";
}

}  // namespace tessera::op::gemm
