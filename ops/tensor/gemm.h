// CPU matrix multiply for the dot/batch_dot operators and FullyConnected.
//
//   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T
//
// Row-major, as in C and NumPy: op(A) is m x k, op(B) is k x n, C is m x n,
// and a leading dimension is the distance between two rows as stored. beta = 0
// never reads C, so C may hold garbage or NaN. float and double go to oneDNN
// (dnnl_sgemm) or OpenBLAS, whichever measured faster for the shape (the rule
// and its figures are in gemm_dispatch.cc; TESSERA_GEMM=auto|openblas|dnnl
// overrides it); every other element type uses GemmFallback below.
//
// Threads: num_threads = 0 means the calling thread's omp_get_max_threads(),
// which is the machine's cores outside the engine; an op passes
// RunContext::omp_threads so that workers x threads stays within the cores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tessera::op {

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          int num_threads = 0);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc, int num_threads = 0);

// `batch` independent products; matrix i of A starts at a + i * stride_a, and
// likewise for B and C. A stride of 0 reuses one A (or B) for every product.
// C matrices must not overlap.
void GemmBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 int num_threads = 0);
void GemmBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                 int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                 int num_threads = 0);

// Throws tessera::Error naming Gemm and the offending values when a size is
// negative or a leading dimension is too small for its matrix. Every entry
// point calls it; GemmFallback's callers call it themselves.
void CheckGemmArgs(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda,
                   int64_t ldb, int64_t ldc);
void CheckGemmBatchArgs(int64_t m, int64_t n, int64_t ldc, int64_t batch, int64_t stride_a,
                        int64_t stride_b, int64_t stride_c);

// ---------------------------------------------------------------------------
// Portable fallback for any element type. Products are summed in Acc (int32
// for int8, float for float16/bfloat16, ...): to_acc turns an element into Acc
// and from_acc turns the result back, so a half type without arithmetic of its
// own only needs two conversion functors. alpha and beta are given in Acc.

template <typename To>
struct CastTo {
  template <typename From>
  To operator()(const From& v) const {
    return static_cast<To>(v);
  }
};

template <typename T, typename Acc = T, typename ToAcc = CastTo<Acc>, typename FromAcc = CastTo<T>>
void GemmFallback(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, Acc alpha,
                  const T* a, int64_t lda, const T* b, int64_t ldb, Acc beta, T* c, int64_t ldc,
                  int num_threads = 0, ToAcc to_acc = {}, FromAcc from_acc = {}) {
  if (m <= 0 || n <= 0) return;
  // Tiles of C small enough to stay in L1 as Acc while a panel of B, packed
  // once per (k-block, column-block) into contiguous Acc, streams through.
  constexpr int64_t kTileM = 16, kTileN = 64, kTileK = 256;
  const int64_t tiles_m = (m + kTileM - 1) / kTileM, tiles_n = (n + kTileN - 1) / kTileN;
  const int64_t tiles = tiles_m * tiles_n;
  auto at_a = [&](int64_t i, int64_t p) {
    return to_acc(trans_a ? a[p * lda + i] : a[i * lda + p]);
  };
  auto at_b = [&](int64_t p, int64_t j) {
    return to_acc(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
  };
#ifdef _OPENMP
  // Only worth the fork when every thread gets real work.
  const int threads = num_threads > 0 ? num_threads : omp_get_max_threads();
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (tiles > 1 && m * n * k > (int64_t{1} << 18))
#else
  (void)num_threads;
#endif
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t i0 = (t / tiles_n) * kTileM, j0 = (t % tiles_n) * kTileN;
    const int64_t im = std::min(kTileM, m - i0), jn = std::min(kTileN, n - j0);
    Acc acc[kTileM][kTileN] = {};
    std::vector<Acc> panel(static_cast<size_t>(std::min(kTileK, std::max<int64_t>(k, 1)) * jn));
    for (int64_t p0 = 0; p0 < k; p0 += kTileK) {
      const int64_t pk = std::min(kTileK, k - p0);
      for (int64_t p = 0; p < pk; ++p)
        for (int64_t j = 0; j < jn; ++j) panel[p * jn + j] = at_b(p0 + p, j0 + j);
      for (int64_t i = 0; i < im; ++i) {
        Acc* row = acc[i];
        for (int64_t p = 0; p < pk; ++p) {
          const Acc av = at_a(i0 + i, p0 + p);
          const Acc* bp = &panel[p * jn];
          for (int64_t j = 0; j < jn; ++j) row[j] += av * bp[j];
        }
      }
    }
    for (int64_t i = 0; i < im; ++i) {
      T* crow = c + (i0 + i) * ldc + j0;
      for (int64_t j = 0; j < jn; ++j) {
        // beta = 0 must not read C: 0 * NaN would poison the result.
        const Acc prior = beta == Acc(0) ? Acc(0) : beta * to_acc(crow[j]);
        crow[j] = from_acc(alpha * acc[i][j] + prior);
      }
    }
  }
}

template <typename T, typename Acc = T, typename ToAcc = CastTo<Acc>, typename FromAcc = CastTo<T>>
void GemmBatchedFallback(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, Acc alpha,
                         const T* a, int64_t lda, const T* b, int64_t ldb, Acc beta, T* c,
                         int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b,
                         int64_t stride_c, int num_threads = 0, ToAcc to_acc = {},
                         FromAcc from_acc = {}) {
  for (int64_t i = 0; i < batch; ++i)
    GemmFallback<T, Acc>(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b,
                         ldb, beta, c + i * stride_c, ldc, num_threads, to_acc, from_acc);
}

// c = op(a) op(b), or c += op(a) op(b) when accumulate, for the floating
// element types an op's own loop meets: the BLAS for float and double, the
// portable kernel summing in float for the 16-bit floats.
template <typename T>
void GemmFloatAny(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                  int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate,
                  int num_threads) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    Gemm(trans_a, trans_b, m, n, k, T(1), a, lda, b, ldb, accumulate ? T(1) : T(0), c, ldc,
         num_threads);
  } else {
    CheckGemmArgs(trans_a, trans_b, m, n, k, lda, ldb, ldc);
    GemmFallback<T, float>(trans_a, trans_b, m, n, k, 1.f, a, lda, b, ldb, accumulate ? 1.f : 0.f,
                           c, ldc, num_threads);
  }
}

// ---------------------------------------------------------------------------
// Internal: backend selection, exposed so that tests and benchmarks can force
// each path. Operators call Gemm / GemmBatched above.
namespace gemm {

enum class Backend { kAuto, kOpenBlas, kDnnl, kFallback };
// How a batch is spread over threads: one threaded GEMM per matrix in turn
// (kSerial), or whole single-threaded GEMMs side by side (kParallel).
enum class BatchMode { kAuto, kSerial, kParallel };

const char* BackendName(Backend b);
// TESSERA_GEMM, read once per process; a malformed value throws naming it.
Backend BackendFromEnv();
// The same, read now and not remembered (for tests).
Backend ReadBackendEnv();
// The rule: what kAuto resolves to for this shape (never kAuto).
Backend Choose(bool is_double, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k);
BatchMode ChooseBatchMode(int64_t m, int64_t n, int64_t k, int64_t batch, int num_threads);

// Gemm and GemmBatched with the backend and batch mode given (kAuto: as the
// public entry points decide). oneDNN 2.6 has no dgemm: kDnnl with double
// throws.
template <typename T>
void GemmWith(Backend backend, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
              const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
              int num_threads = 0);
template <typename T>
void GemmBatchedWith(Backend backend, BatchMode mode, bool trans_a, bool trans_b, int64_t m,
                     int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                     int64_t ldb, T beta, T* c, int64_t ldc, int64_t batch, int64_t stride_a,
                     int64_t stride_b, int64_t stride_c, int num_threads = 0);

// The backends themselves, arguments already checked, m, n > 0.
void OpenBlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc, int num_threads);
void OpenBlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                  double* c, int64_t ldc, int num_threads);
void DnnlGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc, int num_threads);

// Whether OpenBLAS runs AVX2/AVX-512 kernels here rather than a generic
// SSE3 build for a CPU it does not recognise.
bool OpenBlasHasVectorKernels();

// Threads a call uses: num_threads, or omp_get_max_threads() when it is 0.
int ResolveThreads(int num_threads);

}  // namespace gemm
}  // namespace tessera::op
