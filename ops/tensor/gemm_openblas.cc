// The OpenBLAS backend (cblas_sgemm / cblas_dgemm, pthread build).
//
// OpenBLAS runs single-threaded here and the product is split over OpenMP
// threads instead. Its pthread pool spin-waits for about 0.1 s after every
// call, and oneDNN's OpenMP team spins too: on a machine with few cores a
// oneDNN call right after an OpenBLAS one measured 10-100x slower (e.g.
// 128^3 sgemm 0.5 instead of ~40 GFLOP/s on 2 cores). With one threading
// runtime in the process the two cannot oversubscribe each other, and a
// call's thread count is its own instead of OpenBLAS's process-wide one.
//
// The library is opened on the first GEMM that needs it
// (openblas_library.h); cblas.h gives only the functions' types.
#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "engine/base/error.h"
#include "ops/tensor/gemm.h"
#include "ops/tensor/openblas_library.h"

namespace tessera::op::gemm {
namespace {

// The three functions used.
struct OpenBlasApi {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
  decltype(&openblas_get_corename) get_corename;
};

OpenBlasApi LoadOpenBlas() {
  OpenBlasApi api;
  api.sgemm = reinterpret_cast<decltype(api.sgemm)>(openblas::Symbol("cblas_sgemm", "Gemm"));
  api.dgemm = reinterpret_cast<decltype(api.dgemm)>(openblas::Symbol("cblas_dgemm", "Gemm"));
  api.get_corename = reinterpret_cast<decltype(api.get_corename)>(
      openblas::Symbol("openblas_get_corename", "Gemm"));
  return api;
}

// Resolved once, on first use (a failed load is tried again by the next call).
const OpenBlasApi& Api() {
  static const OpenBlasApi api = LoadOpenBlas();
  return api;
}

// Debian's OpenBLAS takes 32-bit int sizes.
void CheckFits(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    TS_CHECK(v <= INT_MAX) << "Gemm: OpenBLAS takes 32-bit sizes; m=" << m << " n=" << n
                           << " k=" << k << " lda=" << lda << " ldb=" << ldb << " ldc=" << ldc;
}

CBLAS_TRANSPOSE Trans(bool t) {
  return t ? CblasTrans : CblasNoTrans;
}

void Call(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  Api().sgemm(CblasRowMajor, Trans(ta), Trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void Call(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  Api().dgemm(CblasRowMajor, Trans(ta), Trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Below this many multiply-adds a second thread costs more than it saves
// (OpenBLAS uses the same bound, 4 * 65536, for its own threads).
constexpr int64_t kSplitMinWork = int64_t{1} << 18;

// C split into row blocks (or column blocks when it is wider than tall), each
// a whole single-threaded GEMM; blocks are multiples of 16 so that the
// kernels' register tiles stay full.
template <typename T>
void Split(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
           const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int threads) {
  const bool rows = m >= n;
  const int64_t extent = rows ? m : n;
  int parts = static_cast<int>(std::min<int64_t>(threads, (extent + 15) / 16));
  if (m * n * k < kSplitMinWork) parts = 1;
  if (parts <= 1) {
    Call(ta, tb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
    return;
  }
  const int64_t block = ((extent + parts - 1) / parts + 15) / 16 * 16;
#ifdef _OPENMP
#pragma omp parallel for num_threads(parts) schedule(static)
#endif
  for (int p = 0; p < parts; ++p) {
    const int64_t lo = std::min(extent, p * block), hi = std::min(extent, lo + block);
    if (hi <= lo) continue;
    if (rows) {
      const T* ap = ta ? a + lo : a + lo * lda;
      Call(ta, tb, int(hi - lo), int(n), int(k), alpha, ap, int(lda), b, int(ldb), beta,
           c + lo * ldc, int(ldc));
    } else {
      const T* bp = tb ? b + lo * ldb : b + lo;
      Call(ta, tb, int(m), int(hi - lo), int(k), alpha, a, int(lda), bp, int(ldb), beta, c + lo,
           int(ldc));
    }
  }
}

template <typename T>
void Run(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
         const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int num_threads) {
  CheckFits(m, n, k, lda, ldb, ldc);
  Api();  // loads the library, or throws, before any thread starts
#ifdef _OPENMP
  const int threads = omp_in_parallel() ? 1 : ResolveThreads(num_threads);
#else
  const int threads = 1;
  (void)num_threads;
#endif
  Split(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
}

}  // namespace

bool OpenBlasHasVectorKernels() {
  // Debian's OpenBLAS 0.3.21 picks its kernels by CPU model at load time and
  // takes CPUs newer than it knows (Emerald Rapids, say) for a Prescott: SSE3
  // kernels at about a fifth of the speed. OPENBLAS_CORETYPE=SkylakeX in the
  // environment corrects that.
  static const bool vector = [] {
    std::string core = Api().get_corename();
    for (char& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (const char* fast : {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
      if (core == fast) return true;
    return false;
  }();
  return vector;
}

void OpenBlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc, int num_threads) {
  Run(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, num_threads);
}

void OpenBlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                  double* c, int64_t ldc, int num_threads) {
  Run(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, num_threads);
}

}  // namespace tessera::op::gemm
