// Row-major linear algebra on one matrix at a time: LAPACK (Fortran,
// column-major) and the BLAS's triangular routines, both from OpenBLAS,
// opened on first use (openblas_library.h). The linalg operators batch these
// over leading axes (linalg_op-inl.h).
//
// A row-major matrix read column-major is its transpose, so each wrapper
// calls LAPACK on the transposed problem: a lower triangle here is LAPACK's
// upper one, and an LQ factorisation here is LAPACK's QR of the transpose.
// Sizes are checked against LAPACK's 32-bit integers. Functions that return
// an int return LAPACK's info: 0 on success, > 0 for the routine's numerical
// failure (say, potrf's order of the first leading minor that is not positive
// definite); the callers turn it into an error naming the op.
#pragma once

#include <cstdint>

namespace tessera::op::lapack {

// Cholesky factor of the symmetric positive-definite n x n matrix in `a`:
// lower: A = L L^T, L in the lower triangle; else A = U^T U, U in the upper.
// Only that triangle of `a` is read or written.
template <typename T>
int Potrf(bool lower, int64_t n, T* a, int64_t lda);

// From the factor Potrf left in `lower`'s triangle, that triangle of A^-1.
template <typename T>
int Potri(bool lower, int64_t n, T* a, int64_t lda);

// B (m x n) <- alpha op(A)^-1 B, or alpha B op(A)^-1 when `rightside`; A is
// triangular (its other triangle is not read), op(A) = A^T when `transpose`.
template <typename T>
void Trsm(bool rightside, bool lower, bool transpose, int64_t m, int64_t n, T alpha, const T* a,
          int64_t lda, T* b, int64_t ldb);

// B (m x n) <- alpha op(A) B, or alpha B op(A) when `rightside`.
template <typename T>
void Trmm(bool rightside, bool lower, bool transpose, int64_t m, int64_t n, T alpha, const T* a,
          int64_t lda, T* b, int64_t ldb);

// The lower triangle of C (n x n) <- alpha A A^T + beta C, A being n x k; or
// alpha A^T A + beta C when `transpose`, A being k x n.
template <typename T>
void Syrk(bool transpose, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, T beta, T* c,
          int64_t ldc);

// LQ factorisation of A (m x n, m <= n): A = L Q with L (m x m) lower
// triangular and Q's rows orthonormal. Q replaces A; L goes to `l` (its
// upper triangle set to zero). LAPACK's signs: L's diagonal may be negative.
template <typename T>
int Gelqf(int64_t m, int64_t n, T* a, int64_t lda, T* l, int64_t ldl);

// Eigen-decomposition of the symmetric n x n matrix A (its lower triangle
// read): A = U^T diag(w) U, eigenvalues ascending in `w`, the eigenvectors
// as the rows of U, which replaces A.
template <typename T>
int Syevd(int64_t n, T* a, int64_t lda, T* w);

// LU factorisation with partial pivoting of the n x n matrix in `a` (of its
// transpose, as LAPACK sees it: the determinant is the same, and Getri
// undoes the transposition). ipiv gets n 1-based pivot rows; info > 0 means
// an exactly zero pivot (singular matrix).
template <typename T>
int Getrf(int64_t n, T* a, int64_t lda, int* ipiv);

// A^-1 from Getrf's factors, in place.
template <typename T>
int Getri(int64_t n, T* a, int64_t lda, const int* ipiv);

}  // namespace tessera::op::lapack
