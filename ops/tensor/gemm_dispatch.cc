// Gemm: checks, the TESSERA_GEMM override, and the per-shape backend rule.
#include <string>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "ops/tensor/gemm.h"

namespace tessera::op {
namespace gemm {

const char* BackendName(Backend b) {
  switch (b) {
    case Backend::kAuto:
      return "auto";
    case Backend::kOpenBlas:
      return "openblas";
    case Backend::kDnnl:
      return "dnnl";
    case Backend::kFallback:
      return "fallback";
  }
  return "?";
}

Backend ReadBackendEnv() {
  const std::string s = EnvString("TESSERA_GEMM", "auto");
  if (s == "auto") return Backend::kAuto;
  if (s == "openblas") return Backend::kOpenBlas;
  if (s == "dnnl") return Backend::kDnnl;
  TS_THROW << "environment variable TESSERA_GEMM='" << s << "' is not auto, openblas or dnnl";
}

Backend BackendFromEnv() {
  // A throwing initialiser is retried, so a malformed value fails every
  // call, not only the first.
  static const Backend backend = ReadBackendEnv();
  return backend;
}

int ResolveThreads(int num_threads) {
  if (num_threads > 0) return num_threads;
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// The rule, from tests/bench/gemm_bench --sweep --threads 1 on the 2-core
// development machine (Xeon, AVX-512; one thread so that the kernels, not
// the neighbours' load on the other core, are compared). GFLOP/s, float:
//
//   shape (m n k)          dnnl   OpenBLAS as loaded   OpenBLAS SkylakeX kernels
//   4 4 4 (batch 262144)   0.2    1.1                   1.7
//   8 8 8 (batch 32768)    1.5    3.1                   9.7
//   16 16 16               10     8.4                   44
//   32 32 32               48     13                    94
//   64 64 64               94     17                    119 (NT: 115 vs 90)
//   128 128 128            108    19                    89
//   256 256 256            113    20                    107
//   1024 1024 1024         115    19                    108
//   2048 2048 2048         132    20                    128
//   1 1024 1024            14     6.4                   5.2
//   1024 1 1024            15     3.4                   6.3
//   1024 1024 4            39     12                    21
//   32 1024 1024 (NT)      72     18                    67
//   256 4096 1024 (NT)     145    31                    111
//
// OpenBLAS as loaded runs SSE3 kernels (see OpenBlasHasVectorKernels), and
// oneDNN wins from 16^3 up; below, per-call overhead dominates and OpenBLAS's
// lighter call path wins. With AVX-512 kernels OpenBLAS wins up to ~32^3
// (2-4x at 16-32) and ties at 64^3, and oneDNN wins above and on every
// skinny shape. Transposes did not move the crossover. Double: oneDNN 2.6
// has no dgemm; OpenBLAS ran 3-6x the fallback (15 vs 2.7 at 256^3 with SSE3
// kernels, 54 with SkylakeX ones).
//
// One exception, measured later on an AMD EPYC (Zen 4, AVX-512, 2 threads):
// a few rows times a transposed B, the shape of FullyConnected's and the
// RNN's per-step products (m 32, n 2048, k 512, B^T), ran 2.7x slower in
// oneDNN than either oneDNN without the transpose or OpenBLAS with it (1.16
// ms vs 0.38 and 0.43 per call). On the Xeon above the two were within 7%
// there (32 1024 1024 NT), so such products go to OpenBLAS when it has its
// vector kernels.
Backend Choose(bool is_double, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
  if (is_double) return Backend::kOpenBlas;
  const bool vector_openblas = OpenBlasHasVectorKernels();
  if (vector_openblas && trans_b && !trans_a && m <= 64) return Backend::kOpenBlas;
  const double work = double(m) * double(n) * double(k);
  const double openblas_up_to = vector_openblas ? 65536 : 512;
  return work <= openblas_up_to ? Backend::kOpenBlas : Backend::kDnnl;
}

namespace {

// k = 0 or alpha = 0: C = beta * C, done here so no backend's corner cases
// matter, and beta = 0 writes zeros without reading C.
template <typename T>
void ScaleC(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

}  // namespace

template <typename T>
void GemmWith(Backend backend, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
              const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
              int num_threads) {
  constexpr bool kDouble = std::is_same_v<T, double>;
  CheckGemmArgs(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  TS_CHECK(c != nullptr) << "Gemm: C is null (m=" << m << " n=" << n << ")";
  if (k == 0 || alpha == T(0)) return ScaleC(m, n, beta, c, ldc);
  TS_CHECK(a != nullptr && b != nullptr)
      << "Gemm: A or B is null (m=" << m << " n=" << n << " k=" << k << ")";
  if (backend == Backend::kAuto) {
    backend = BackendFromEnv();
    // TESSERA_GEMM=dnnl leaves double to the rule: oneDNN has no dgemm.
    if (kDouble && backend == Backend::kDnnl) backend = Backend::kAuto;
  }
  if (backend == Backend::kAuto) backend = Choose(kDouble, trans_a, trans_b, m, n, k);
  switch (backend) {
    case Backend::kOpenBlas:
      return OpenBlasGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                          num_threads);
    case Backend::kDnnl:
      if constexpr (kDouble) {
        TS_THROW << "Gemm: oneDNN has no double GEMM (m=" << m << " n=" << n << " k=" << k << ")";
      } else {
        return DnnlGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                        num_threads);
      }
    case Backend::kFallback:
      return GemmFallback<T>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                             num_threads);
    case Backend::kAuto:
      break;
  }
  TS_THROW << "Gemm: no backend chosen";
}

template void GemmWith<float>(Backend, bool, bool, int64_t, int64_t, int64_t, float, const float*,
                              int64_t, const float*, int64_t, float, float*, int64_t, int);
template void GemmWith<double>(Backend, bool, bool, int64_t, int64_t, int64_t, double,
                               const double*, int64_t, const double*, int64_t, double, double*,
                               int64_t, int);

}  // namespace gemm

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          int num_threads) {
  gemm::GemmWith(gemm::Backend::kAuto, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                 ldc, num_threads);
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc, int num_threads) {
  gemm::GemmWith(gemm::Backend::kAuto, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                 ldc, num_threads);
}

}  // namespace tessera::op
