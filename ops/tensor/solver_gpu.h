// GPU factorisations through cuSOLVER, on the op's stream, for linalg.potrf,
// potri, gelqf and syevd: `batch` row-major matrices, back to back, as
// LAPACK's row-major wrappers (lapack.h) see them (read column-major, a
// matrix is its transpose: a lower triangle here is cuSOLVER's upper one,
// an LQ here the QR of the transpose). float32 and float64; one call per
// matrix, the workspace shared; info values per matrix, LAPACK's.
#pragma once

#include <cstdint>

#include "engine/base/context.h"
#include "engine/base/dtype.h"

namespace tessera::op {

struct GpuCholesky {
  bool inverse = false;  // potri (from the factor, that triangle of A^-1) rather than potrf
  bool lower = true;
  int64_t n = 0, batch = 1;
};

// Elements of workspace the routine needs (a is any of the matrices).
int64_t CholeskyWorkspaceGpu(const RunContext& rctx, DType dtype, const GpuCholesky& c, void* a,
                             const char* who);

// Each matrix in place; info per matrix (LAPACK's: > 0, the failing minor
// or zero diagonal). `work` holds the workspace, shared by the calls.
void CholeskyGpu(const RunContext& rctx, DType dtype, const GpuCholesky& c, void* a, void* work,
                 int64_t lwork, int* info, const char* who);

// LQ of m x n matrices (m <= n) in two steps, so that L can be read out
// between them: QrGpu (form_q false) leaves each matrix's R (its upper
// triangle read column-major: L's lower one read row-major) and
// Householder vectors with `tau` (m per matrix); QrGpu (form_q true) then
// turns them into Q in place.
struct GpuQr {
  bool form_q = false;
  int64_t m = 0, n = 0, batch = 1;
};
int64_t QrWorkspaceGpu(const RunContext& rctx, DType dtype, const GpuQr& q, void* a, void* tau,
                       const char* who);
void QrGpu(const RunContext& rctx, DType dtype, const GpuQr& q, void* a, void* tau, void* work,
           int64_t lwork, int* info, const char* who);

// Eigenvalues (ascending, n per matrix, to w) and eigenvectors (the rows of
// each matrix, in place) of symmetric n x n matrices (their lower triangle
// read).
int64_t SymEigWorkspaceGpu(const RunContext& rctx, DType dtype, int64_t n, void* a, void* w,
                           const char* who);
void SymEigGpu(const RunContext& rctx, DType dtype, int64_t n, int64_t batch, void* a, void* w,
               void* work, int64_t lwork, int* info, const char* who);

}  // namespace tessera::op
