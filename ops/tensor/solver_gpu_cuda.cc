// cuSOLVER's potrf and potri for row-major matrices: read column-major,
// a matrix is its transpose, so the triangle flips (solver_gpu.h).
#include "ops/tensor/solver_gpu.h"

#include <climits>

#include "engine/base/cuda_utils.h"
#include "engine/base/error.h"
#include "engine/resource/cusolver_library.h"

namespace tessera::op {
namespace {

int SolverInt(int64_t v, const char* what, const char* who) {
  TS_CHECK(v >= 0 && v <= INT_MAX)
      << who << " on the GPU: " << what << " = " << v << " is past cuSOLVER's 32-bit sizes";
  return static_cast<int>(v);
}

void CheckSolverType(DType dtype, const char* who) {
  TS_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat64)
      << who << " on the GPU: " << DTypeName(dtype) << " has no factorisation (float32 and "
      << "float64 do)";
}

// Matrix i of a batch of `elements` each.
void* Nth(void* base, int64_t i, int64_t elements, DType dtype) {
  return static_cast<char*>(base) + i * elements * int64_t(DTypeSize(dtype));
}

void CheckStatus(cusolverStatus_t st, const char* routine, int64_t n, const char* who) {
  TS_CHECK(st == CUSOLVER_STATUS_SUCCESS) << who << " on the GPU: cusolverDn" << routine << " (n "
                                          << n << ") failed (status " << int(st) << ")";
}

cublasFillMode_t ColMajorFill(bool row_major_lower) {
  return row_major_lower ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
}

}  // namespace

int64_t CholeskyWorkspaceGpu(const RunContext& rctx, DType dtype, const GpuCholesky& c, void* a,
                             const char* who) {
  if (c.n == 0 || c.batch == 0) return 0;
  CheckSolverType(dtype, who);
  const resource::CusolverApi& api = resource::Cusolver();
  cusolverDnHandle_t h = resource::CusolverHandle(rctx.get_stream<cudaStream_t>());
  const int n = SolverInt(c.n, "n", who);
  const cublasFillMode_t fill = ColMajorFill(c.lower);
  int lwork = 0;
  const bool f = dtype == DType::kFloat32;
  const cusolverStatus_t st =
      c.inverse ? (f ? api.spotri_buffer(h, fill, n, static_cast<float*>(a), n, &lwork)
                     : api.dpotri_buffer(h, fill, n, static_cast<double*>(a), n, &lwork))
                : (f ? api.spotrf_buffer(h, fill, n, static_cast<float*>(a), n, &lwork)
                     : api.dpotrf_buffer(h, fill, n, static_cast<double*>(a), n, &lwork));
  CheckStatus(st, c.inverse ? "?potri_bufferSize" : "?potrf_bufferSize", c.n, who);
  return lwork;
}

void CholeskyGpu(const RunContext& rctx, DType dtype, const GpuCholesky& c, void* a, void* work,
                 int64_t lwork, int* info, const char* who) {
  if (c.n == 0 || c.batch == 0) return;
  CheckSolverType(dtype, who);
  const resource::CusolverApi& api = resource::Cusolver();
  cusolverDnHandle_t h = resource::CusolverHandle(rctx.get_stream<cudaStream_t>());
  const int n = SolverInt(c.n, "n", who), lw = SolverInt(lwork, "workspace", who);
  const cublasFillMode_t fill = ColMajorFill(c.lower);
  const int64_t size = int64_t(DTypeSize(dtype));
  for (int64_t i = 0; i < c.batch; ++i) {
    void* ai = static_cast<char*>(a) + i * c.n * c.n * size;
    cusolverStatus_t st;
    if (dtype == DType::kFloat32) {
      float* m = static_cast<float*>(ai);
      float* w = static_cast<float*>(work);
      st = c.inverse ? api.spotri(h, fill, n, m, n, w, lw, info + i)
                     : api.spotrf(h, fill, n, m, n, w, lw, info + i);
    } else {
      double* m = static_cast<double*>(ai);
      double* w = static_cast<double*>(work);
      st = c.inverse ? api.dpotri(h, fill, n, m, n, w, lw, info + i)
                     : api.dpotrf(h, fill, n, m, n, w, lw, info + i);
    }
    CheckStatus(st, c.inverse ? "?potri" : "?potrf", c.n, who);
  }
}

int64_t QrWorkspaceGpu(const RunContext& rctx, DType dtype, const GpuQr& q, void* a, void* tau,
                       const char* who) {
  if (q.m == 0 || q.batch == 0) return 0;
  CheckSolverType(dtype, who);
  const resource::CusolverApi& api = resource::Cusolver();
  cusolverDnHandle_t h = resource::CusolverHandle(rctx.get_stream<cudaStream_t>());
  // Column-major: A^T is n x m, leading dimension n.
  const int rows = SolverInt(q.n, "n", who), cols = SolverInt(q.m, "m", who);
  int qr = 0, form = 0;
  const bool f = dtype == DType::kFloat32;
  cusolverStatus_t st = f ? api.sgeqrf_buffer(h, rows, cols, static_cast<float*>(a), rows, &qr)
                          : api.dgeqrf_buffer(h, rows, cols, static_cast<double*>(a), rows, &qr);
  CheckStatus(st, "?geqrf_bufferSize", q.n, who);
  st = f ? api.sorgqr_buffer(h, rows, cols, cols, static_cast<float*>(a), rows,
                             static_cast<float*>(tau), &form)
         : api.dorgqr_buffer(h, rows, cols, cols, static_cast<double*>(a), rows,
                             static_cast<double*>(tau), &form);
  CheckStatus(st, "?orgqr_bufferSize", q.n, who);
  return qr > form ? qr : form;
}

void QrGpu(const RunContext& rctx, DType dtype, const GpuQr& q, void* a, void* tau, void* work,
           int64_t lwork, int* info, const char* who) {
  if (q.m == 0 || q.batch == 0) return;
  CheckSolverType(dtype, who);
  const resource::CusolverApi& api = resource::Cusolver();
  cusolverDnHandle_t h = resource::CusolverHandle(rctx.get_stream<cudaStream_t>());
  const int rows = SolverInt(q.n, "n", who), cols = SolverInt(q.m, "m", who);
  const int lw = SolverInt(lwork, "workspace", who);
  for (int64_t i = 0; i < q.batch; ++i) {
    void* ai = Nth(a, i, q.m * q.n, dtype);
    void* ti = Nth(tau, i, q.m, dtype);
    cusolverStatus_t st;
    if (dtype == DType::kFloat32) {
      auto* m = static_cast<float*>(ai);
      auto* t = static_cast<float*>(ti);
      auto* w = static_cast<float*>(work);
      st = q.form_q ? api.sorgqr(h, rows, cols, cols, m, rows, t, w, lw, info + i)
                    : api.sgeqrf(h, rows, cols, m, rows, t, w, lw, info + i);
    } else {
      auto* m = static_cast<double*>(ai);
      auto* t = static_cast<double*>(ti);
      auto* w = static_cast<double*>(work);
      st = q.form_q ? api.dorgqr(h, rows, cols, cols, m, rows, t, w, lw, info + i)
                    : api.dgeqrf(h, rows, cols, m, rows, t, w, lw, info + i);
    }
    CheckStatus(st, q.form_q ? "?orgqr" : "?geqrf", q.n, who);
  }
}

int64_t SymEigWorkspaceGpu(const RunContext& rctx, DType dtype, int64_t n, void* a, void* w,
                           const char* who) {
  if (n == 0) return 0;
  CheckSolverType(dtype, who);
  const resource::CusolverApi& api = resource::Cusolver();
  cusolverDnHandle_t h = resource::CusolverHandle(rctx.get_stream<cudaStream_t>());
  const int in = SolverInt(n, "n", who);
  int lwork = 0;
  // A row-major lower triangle is the column-major upper one.
  const cusolverStatus_t st =
      dtype == DType::kFloat32
          ? api.ssyevd_buffer(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, in,
                              static_cast<float*>(a), in, static_cast<float*>(w), &lwork)
          : api.dsyevd_buffer(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, in,
                              static_cast<double*>(a), in, static_cast<double*>(w), &lwork);
  CheckStatus(st, "?syevd_bufferSize", n, who);
  return lwork;
}

void SymEigGpu(const RunContext& rctx, DType dtype, int64_t n, int64_t batch, void* a, void* w,
               void* work, int64_t lwork, int* info, const char* who) {
  if (n == 0 || batch == 0) return;
  CheckSolverType(dtype, who);
  const resource::CusolverApi& api = resource::Cusolver();
  cusolverDnHandle_t h = resource::CusolverHandle(rctx.get_stream<cudaStream_t>());
  const int in = SolverInt(n, "n", who), lw = SolverInt(lwork, "workspace", who);
  for (int64_t i = 0; i < batch; ++i) {
    void* ai = Nth(a, i, n * n, dtype);
    void* wi = Nth(w, i, n, dtype);
    const cusolverStatus_t st =
        dtype == DType::kFloat32
            ? api.ssyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, in,
                         static_cast<float*>(ai), in, static_cast<float*>(wi),
                         static_cast<float*>(work), lw, info + i)
            : api.dsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, in,
                         static_cast<double*>(ai), in, static_cast<double*>(wi),
                         static_cast<double*>(work), lw, info + i);
    CheckStatus(st, "?syevd", n, who);
  }
}

}  // namespace tessera::op
