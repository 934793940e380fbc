// GemmBatched: many products of one shape, spread over threads either inside
// each product (a threaded GEMM per matrix, in turn) or across products (each
// thread runs whole single-threaded GEMMs).
#ifdef _OPENMP
#include <omp.h>
#endif

#include "engine/base/error.h"
#include "ops/tensor/gemm.h"

namespace tessera::op {
namespace gemm {

// Side by side when one product is too small to be split over threads by
// itself (the same 2^18 multiply-adds below which the OpenBLAS path stays on
// one thread, and about where oneDNN's threaded sgemm stops gaining): then
// one OpenMP region for the whole batch replaces a region, or a lone thread,
// per matrix. Larger products run in turn, each on every thread.
// gemm_bench --sweep prints both modes per backend (sgemm.batch*); on one
// thread they measured equal (e.g. 4096 x 16^3: dnnl 10.3 vs 10.2, OpenBLAS
// 9.3 vs 9.3 GFLOP/s). Two-thread figures on the shared 2-core machine were
// dominated by other processes holding the second core (an empty OpenMP
// region took 8 ms at p90), so re-measure this bound on a quiet machine.
BatchMode ChooseBatchMode(int64_t m, int64_t n, int64_t k, int64_t batch, int num_threads) {
  if (batch < 2 || ResolveThreads(num_threads) < 2) return BatchMode::kSerial;
  const double work = double(m) * double(n) * double(k);
  return work <= double(int64_t{1} << 18) ? BatchMode::kParallel : BatchMode::kSerial;
}

template <typename T>
void GemmBatchedWith(Backend backend, BatchMode mode, bool trans_a, bool trans_b, int64_t m,
                     int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                     int64_t ldb, T beta, T* c, int64_t ldc, int64_t batch, int64_t stride_a,
                     int64_t stride_b, int64_t stride_c, int num_threads) {
  CheckGemmArgs(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  CheckGemmBatchArgs(m, n, ldc, batch, stride_a, stride_b, stride_c);
  if (m == 0 || n == 0 || batch == 0) return;
  if (mode == BatchMode::kAuto) mode = ChooseBatchMode(m, n, k, batch, num_threads);
  if (mode == BatchMode::kSerial) {
    for (int64_t i = 0; i < batch; ++i)
      GemmWith<T>(backend, trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda,
                  b + i * stride_b, ldb, beta, c + i * stride_c, ldc, num_threads);
    return;
  }
  const int threads = ResolveThreads(num_threads);
  // Errors cannot leave an OpenMP region: the first is kept and rethrown.
  std::exception_ptr error;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#else
  (void)threads;
#endif
  for (int64_t i = 0; i < batch; ++i) {
    try {
      GemmWith<T>(backend, trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda,
                  b + i * stride_b, ldb, beta, c + i * stride_c, ldc, 1);
    } catch (...) {
#ifdef _OPENMP
#pragma omp critical(tessera_gemm_batched_error)
#endif
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

template void GemmBatchedWith<float>(Backend, BatchMode, bool, bool, int64_t, int64_t, int64_t,
                                     float, const float*, int64_t, const float*, int64_t, float,
                                     float*, int64_t, int64_t, int64_t, int64_t, int64_t, int);
template void GemmBatchedWith<double>(Backend, BatchMode, bool, bool, int64_t, int64_t, int64_t,
                                      double, const double*, int64_t, const double*, int64_t,
                                      double, double*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                      int);

}  // namespace gemm

void GemmBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 int num_threads) {
  gemm::GemmBatchedWith(gemm::Backend::kAuto, gemm::BatchMode::kAuto, trans_a, trans_b, m, n, k,
                        alpha, a, lda, b, ldb, beta, c, ldc, batch, stride_a, stride_b, stride_c,
                        num_threads);
}

void GemmBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                 int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 int num_threads) {
  gemm::GemmBatchedWith(gemm::Backend::kAuto, gemm::BatchMode::kAuto, trans_a, trans_b, m, n, k,
                        alpha, a, lda, b, ldb, beta, c, ldc, batch, stride_a, stride_b, stride_c,
                        num_threads);
}

}  // namespace tessera::op
