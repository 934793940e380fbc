// The linalg operators against the libraries called directly, on the same
// threads, float32: potrf and trsm on 64 matrices of 256 x 256 against
// OpenBLAS's LAPACK spotrf_ / cblas_strsm looped over the batch on OpenMP
// threads (one matrix per call, the op's own scheme; each matrix copied
// first, as the op copies its input to its output), and gemm2 on 1024^3
// against dot and OpenBLAS's cblas_sgemm on its own threads. Prints
// `name: value unit` lines (medians after a warm-up).
//   linalg_bench [reps] [threads]
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "tests/bench/bench_timing.h"

extern "C" void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info,
                        size_t uplo_len);

using tessera::Context;
using tessera::Invoke;
using tessera::MakeAttrs;
using tessera::NDArray;
using tessera::Shape;
using tessera::bench::MedianMs;

namespace {

constexpr int64_t kBatch = 64, kN = 256, kNN = kN * kN, kG = 1024;

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// 64 symmetric positive-definite matrices: X X^T / n + I.
std::vector<float> SpdBatch() {
  std::vector<float> x = Random(size_t(kBatch * kNN), 1), a(size_t(kBatch * kNN));
  for (int64_t b = 0; b < kBatch; ++b) {
    cblas_ssyrk(CblasRowMajor, CblasLower, CblasNoTrans, kN, kN, 1.f / kN, x.data() + b * kNN, kN,
                0.f, a.data() + b * kNN, kN);
    float* m = a.data() + b * kNN;
    for (int64_t r = 0; r < kN; ++r) {
      m[r * kN + r] += 1.f;
      for (int64_t c = r + 1; c < kN; ++c) m[r * kN + c] = m[c * kN + r];
    }
  }
  return a;
}

NDArray ArrayOf(const std::vector<float>& v, const Shape& s) {
  NDArray a(s, Context::CPU());
  a.SyncCopyFromCPU(v.data(), v.size());
  return a;
}

NDArray Run(const char* op, std::vector<NDArray> in) {
  std::vector<NDArray> out;
  Invoke(MakeAttrs(op, {}), std::move(in), &out);
  out[0].WaitToRead();
  return out[0];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  openblas_set_num_threads(1);
  const std::vector<float> spd = SpdBatch();
  const Shape stack{kBatch, kN, kN};
  NDArray a = ArrayOf(spd, stack);
  NDArray rhs = ArrayOf(Random(size_t(kBatch * kNN), 2), stack);
  NDArray factor = Run("_linalg_potrf", {a});
  std::vector<float> l(size_t(kBatch * kNN)), b(size_t(kBatch * kNN));
  factor.SyncCopyToCPU(l.data(), l.size());
  rhs.SyncCopyToCPU(b.data(), b.size());
  std::vector<float> work(size_t(kBatch * kNN));

  const double op_potrf = MedianMs([&] { Run("_linalg_potrf", {a}); }, reps);
  const double lapack_potrf = MedianMs(
      [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < kBatch; ++i) {
          float* m = work.data() + i * kNN;
          std::memcpy(m, spd.data() + i * kNN, sizeof(float) * kNN);
          const int n = int(kN);
          int info = 0;
          spotrf_("U", &n, m, &n, &info, 1);  // row-major lower is column-major upper
        }
      },
      reps);
  const double op_trsm = MedianMs([&] { Run("_linalg_trsm", {factor, rhs}); }, reps);
  const double blas_trsm = MedianMs(
      [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < kBatch; ++i) {
          float* m = work.data() + i * kNN;
          std::memcpy(m, b.data() + i * kNN, sizeof(float) * kNN);
          cblas_strsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, kN, kN, 1.f,
                      l.data() + i * kNN, kN, m, kN);
        }
      },
      reps);

  const Shape square{kG, kG};
  NDArray x = ArrayOf(Random(size_t(kG * kG), 3), square);
  NDArray y = ArrayOf(Random(size_t(kG * kG), 4), square);
  std::vector<float> xv(size_t(kG * kG)), yv(size_t(kG * kG)), zv(size_t(kG * kG));
  x.SyncCopyToCPU(xv.data(), xv.size());
  y.SyncCopyToCPU(yv.data(), yv.size());
  const double op_gemm2 = MedianMs([&] { Run("_linalg_gemm2", {x, y}); }, reps);
  const double op_dot = MedianMs([&] { Run("dot", {x, y}); }, reps);
  openblas_set_num_threads(threads);
  const double blas_gemm = MedianMs(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kG, kG, kG, 1.f, xv.data(), kG,
                    yv.data(), kG, 0.f, zv.data(), kG);
      },
      reps);
  openblas_set_num_threads(1);

  std::printf("linalg_potrf_64x256_op: %.3f ms\n", op_potrf);
  std::printf("linalg_potrf_64x256_lapack: %.3f ms\n", lapack_potrf);
  std::printf("linalg_potrf_64x256_vs_lapack: %.2f x\n", op_potrf / lapack_potrf);
  std::printf("linalg_trsm_64x256_op: %.3f ms\n", op_trsm);
  std::printf("linalg_trsm_64x256_blas: %.3f ms\n", blas_trsm);
  std::printf("linalg_trsm_64x256_vs_blas: %.2f x\n", op_trsm / blas_trsm);
  std::printf("linalg_gemm2_1024_op: %.3f ms\n", op_gemm2);
  std::printf("linalg_gemm2_1024_dot: %.3f ms\n", op_dot);
  std::printf("linalg_gemm2_1024_openblas: %.3f ms\n", blas_gemm);
  std::printf("linalg_gemm2_1024_vs_dot: %.2f x\n", op_gemm2 / op_dot);
  std::printf("linalg_gemm2_1024_vs_openblas: %.2f x\n", op_gemm2 / blas_gemm);
  return 0;
}
