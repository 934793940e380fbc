// cuBLAS GEMMs for row-major arrays: a row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, so each call swaps the operands and
// m with n, and cuBLAS reads every matrix as stored.
#include "ops/tensor/gemm_gpu.h"

#include <vector>

#include "engine/base/cuda_utils.h"
#include "engine/base/error.h"
#include "engine/resource/cublas_library.h"

namespace tessera::op {
namespace {

struct Types {
  cudaDataType_t data;
  cublasComputeType_t compute;
  bool double_scalars;  // alpha and beta as double (float64), else float
};

Types TypesFor(DType t, const char* who) {
  switch (t) {
    case DType::kFloat32:
      return {
          CUDA_R_32F,
          resource::CublasAllowTensorCores() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
          false};
    case DType::kFloat64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case DType::kFloat16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    case DType::kBFloat16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    default:
      TS_THROW << who << " on the GPU: " << DTypeName(t)
               << " has no GPU matrix product (float32, float64, float16 and bfloat16 do)";
  }
}

int ToInt(int64_t v, const char* what, const char* who) {
  TS_CHECK(v >= 0 && v <= INT_MAX)
      << who << " on the GPU: " << what << " = " << v << " is past cuBLAS's 32-bit sizes";
  return static_cast<int>(v);
}

}  // namespace

void GemmGpu(const RunContext& rctx, DType dtype, const GpuGemm& g, const void* a, const void* b,
             void* c, const char* who) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const Types t = TypesFor(dtype, who);
  TS_DCHECK(g.m > 0 && g.n > 0 && g.k >= 0 && g.batch > 0);
  const resource::CublasApi& api = resource::Cublas();
  cublasHandle_t h = resource::CublasHandle(rctx.get_stream<cudaStream_t>());
  const double da = g.alpha, db = g.accumulate ? 1.0 : g.beta;
  const float fa = static_cast<float>(da), fb = static_cast<float>(db);
  const void* alpha = t.double_scalars ? static_cast<const void*>(&da) : &fa;
  const void* beta = t.double_scalars ? static_cast<const void*>(&db) : &fb;
  // Column-major view: C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m).
  const cublasStatus_t st = api.gemm_strided_batched_ex(
      h, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.n, g.m,
      g.k, alpha, b, t.data, g.ldb, g.stride_b, a, t.data, g.lda, g.stride_a, beta, c, t.data,
      g.ldc, g.stride_c, g.batch, t.compute, CUBLAS_GEMM_DEFAULT);
  TS_CHECK(st == CUBLAS_STATUS_SUCCESS)
      << who << " on the GPU: cublasGemmStridedBatchedEx_64 (m " << g.m << ", n " << g.n << ", k "
      << g.k << ", batch " << g.batch << ") failed: " << api.status_string(st);
}

void TrsmGpu(const RunContext& rctx, DType dtype, const GpuTrsm& t, const void* a, void* b,
             const char* who) {
  if (t.m == 0 || t.n == 0 || t.batch == 0) return;
  TS_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat64)
      << who << " on the GPU: " << DTypeName(dtype) << " has no triangular solve (float32 and "
      << "float64 do)";
  const resource::CublasApi& api = resource::Cublas();
  cublasHandle_t h = resource::CublasHandle(rctx.get_stream<cudaStream_t>());
  const ColMajorTrsm c = ToColMajor(t);
  const int64_t k = t.rightside ? t.n : t.m, size = DTypeSize(dtype);
  const cublasSideMode_t side = c.left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
  const cublasFillMode_t fill = c.upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  const cublasOperation_t op = c.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const double da = t.alpha;
  const float fa = static_cast<float>(t.alpha);
  for (int64_t i = 0; i < t.batch; ++i) {
    const void* ai = static_cast<const char*>(a) + i * k * k * size;
    void* bi = static_cast<char*>(b) + i * t.m * t.n * size;
    // Column-major: B^T is c.m x c.n with leading dimension n; A^T's is k.
    const cublasStatus_t st =
        dtype == DType::kFloat32
            ? api.strsm(h, side, fill, op, CUBLAS_DIAG_NON_UNIT, c.m, c.n, &fa,
                        static_cast<const float*>(ai), k, static_cast<float*>(bi), t.n)
            : api.dtrsm(h, side, fill, op, CUBLAS_DIAG_NON_UNIT, c.m, c.n, &da,
                        static_cast<const double*>(ai), k, static_cast<double*>(bi), t.n);
    TS_CHECK(st == CUBLAS_STATUS_SUCCESS)
        << who << " on the GPU: cublas?trsm (m " << t.m << ", n " << t.n << ", matrix " << i
        << ") failed: " << api.status_string(st);
  }
}

namespace {

// The batch's matrix addresses (`count` of them, `each` bytes apart) in
// device memory `ptrs`: the batched routines take arrays of pointers.
void UploadPointers(const RunContext& rctx, const void* base, int64_t count, int64_t each,
                    void** ptrs) {
  std::vector<const void*> host(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) host[size_t(i)] = static_cast<const char*>(base) + i * each;
  // From pageable memory the copy is staged before cudaMemcpyAsync returns.
  TS_CUDA_CALL(cudaMemcpyAsync(ptrs, host.data(), host.size() * sizeof(void*),
                               cudaMemcpyHostToDevice, rctx.get_stream<cudaStream_t>()));
}

void CheckLuType(DType dtype, const char* who) {
  TS_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat64)
      << who << " on the GPU: " << DTypeName(dtype)
      << " has no LU factorisation (float32 and float64 do)";
}

}  // namespace

void LuFactorGpu(const RunContext& rctx, DType dtype, int64_t n, int64_t batch, void* a, int* piv,
                 int* info, void** ptrs, const char* who) {
  if (n == 0 || batch == 0) return;
  CheckLuType(dtype, who);
  const resource::CublasApi& api = resource::Cublas();
  cublasHandle_t h = resource::CublasHandle(rctx.get_stream<cudaStream_t>());
  const int in = ToInt(n, "n", who), ib = ToInt(batch, "batch", who);
  UploadPointers(rctx, a, batch, n * n * int64_t(DTypeSize(dtype)), ptrs);
  const cublasStatus_t st =
      dtype == DType::kFloat32
          ? api.sgetrf_batched(h, in, reinterpret_cast<float* const*>(ptrs), in, piv, info, ib)
          : api.dgetrf_batched(h, in, reinterpret_cast<double* const*>(ptrs), in, piv, info, ib);
  TS_CHECK(st == CUBLAS_STATUS_SUCCESS)
      << who << " on the GPU: cublas?getrfBatched (n " << n << ", batch " << batch
      << ") failed: " << api.status_string(st);
}

void LuInvertGpu(const RunContext& rctx, DType dtype, int64_t n, int64_t batch, const void* lu,
                 const int* piv, void* inv, int* info, void** ptrs, const char* who) {
  if (n == 0 || batch == 0) return;
  CheckLuType(dtype, who);
  const resource::CublasApi& api = resource::Cublas();
  cublasHandle_t h = resource::CublasHandle(rctx.get_stream<cudaStream_t>());
  const int in = ToInt(n, "n", who), ib = ToInt(batch, "batch", who);
  const int64_t each = n * n * int64_t(DTypeSize(dtype));
  UploadPointers(rctx, lu, batch, each, ptrs);
  UploadPointers(rctx, inv, batch, each, ptrs + batch);
  const cublasStatus_t st =
      dtype == DType::kFloat32
          ? api.sgetri_batched(h, in, reinterpret_cast<const float* const*>(ptrs), in, piv,
                               reinterpret_cast<float* const*>(ptrs + batch), in, info, ib)
          : api.dgetri_batched(h, in, reinterpret_cast<const double* const*>(ptrs), in, piv,
                               reinterpret_cast<double* const*>(ptrs + batch), in, info, ib);
  TS_CHECK(st == CUBLAS_STATUS_SUCCESS)
      << who << " on the GPU: cublas?getriBatched (n " << n << ", batch " << batch
      << ") failed: " << api.status_string(st);
}

}  // namespace tessera::op
