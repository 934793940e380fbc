// The oneDNN backend: dnnl_sgemm (row-major, like the public API). oneDNN 2.6
// has no double GEMM.
#include <oneapi/dnnl/dnnl.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "engine/base/error.h"
#include "ops/tensor/gemm.h"

namespace tessera::op::gemm {
namespace {

// oneDNN's OpenMP runtime sizes its team from the calling thread's
// omp_get_max_threads(), a per-thread setting, so a call's thread count is set
// around it and restored after; other threads are unaffected.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) {
#ifdef _OPENMP
    saved_ = omp_get_max_threads();
    if (threads != saved_) omp_set_num_threads(threads);
#else
    (void)threads;
#endif
  }
  ~ScopedOmpThreads() {
#ifdef _OPENMP
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
#endif
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  [[maybe_unused]] int saved_ = 1;
};

}  // namespace

void DnnlGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc, int num_threads) {
  ScopedOmpThreads threads(ResolveThreads(num_threads));
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                ldb, beta, c, ldc);
  TS_CHECK(st == dnnl_success) << "Gemm: dnnl_sgemm failed with status " << int(st) << " (m=" << m
                               << " n=" << n << " k=" << k << " lda=" << lda << " ldb=" << ldb
                               << " ldc=" << ldc << ")";
}

}  // namespace tessera::op::gemm
