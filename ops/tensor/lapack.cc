// The row-major wrappers over OpenBLAS's LAPACK and triangular BLAS.
#include "ops/tensor/lapack.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "engine/base/error.h"
#include "ops/tensor/openblas_library.h"

namespace tessera::op::lapack {
namespace {

// LAPACK's Fortran entry points. Character arguments carry gfortran's hidden
// lengths at the end, passed explicitly as the Fortran ABI expects.
template <typename T>
struct Api {
  using Potrf = void (*)(const char*, const int*, T*, const int*, int*, size_t);
  using Geqrf = void (*)(const int*, const int*, T*, const int*, T*, T*, const int*, int*);
  using Orgqr = void (*)(const int*, const int*, const int*, T*, const int*, const T*, T*,
                         const int*, int*);
  using Syevd = void (*)(const char*, const char*, const int*, T*, const int*, T*, T*, const int*,
                         int*, const int*, int*, size_t, size_t);
  using Getrf = void (*)(const int*, const int*, T*, const int*, int*, int*);
  using Getri = void (*)(const int*, T*, const int*, const int*, T*, const int*, int*);
  using Trsm =
      std::conditional_t<std::is_same_v<T, float>, decltype(&cblas_strsm), decltype(&cblas_dtrsm)>;
  using Syrk =
      std::conditional_t<std::is_same_v<T, float>, decltype(&cblas_ssyrk), decltype(&cblas_dsyrk)>;
  Potrf potrf, potri;
  Geqrf geqrf;
  Orgqr orgqr;
  Syevd syevd;
  Getrf getrf;
  Getri getri;
  Trsm trsm, trmm;  // cblas_?trmm has cblas_?trsm's signature
  Syrk syrk;
};

template <typename F>
F Find(const char* name) {
  return reinterpret_cast<F>(openblas::Symbol(name, "linalg"));
}

template <typename T>
Api<T> Load() {
  constexpr bool f = std::is_same_v<T, float>;
  using A = Api<T>;
  A api;
  api.potrf = Find<typename A::Potrf>(f ? "spotrf_" : "dpotrf_");
  api.potri = Find<typename A::Potrf>(f ? "spotri_" : "dpotri_");
  api.geqrf = Find<typename A::Geqrf>(f ? "sgeqrf_" : "dgeqrf_");
  api.orgqr = Find<typename A::Orgqr>(f ? "sorgqr_" : "dorgqr_");
  api.syevd = Find<typename A::Syevd>(f ? "ssyevd_" : "dsyevd_");
  api.getrf = Find<typename A::Getrf>(f ? "sgetrf_" : "dgetrf_");
  api.getri = Find<typename A::Getri>(f ? "sgetri_" : "dgetri_");
  api.trsm = Find<typename A::Trsm>(f ? "cblas_strsm" : "cblas_dtrsm");
  api.trmm = Find<typename A::Trsm>(f ? "cblas_strmm" : "cblas_dtrmm");
  api.syrk = Find<typename A::Syrk>(f ? "cblas_ssyrk" : "cblas_dsyrk");
  return api;
}

template <typename T>
const Api<T>& Get() {
  static const Api<T> api = Load<T>();
  return api;
}

int Int(int64_t v, const char* what) {
  TS_CHECK(v >= 0 && v <= INT_MAX) << "linalg: LAPACK takes 32-bit sizes; " << what << " = " << v;
  return static_cast<int>(v);
}

// A work array per thread, grown to the largest size asked for: batches run
// the same routine on many matrices, so it is allocated once.
template <typename T>
T* Work(size_t n) {
  thread_local std::vector<T> work;
  if (work.size() < n) work.resize(n);
  return work.data();
}
int* IntWork(size_t n) {
  thread_local std::vector<int> work;
  if (work.size() < n) work.resize(n);
  return work.data();
}

// Row-major lower is column-major upper.
const char* Uplo(bool lower) {
  return lower ? "U" : "L";
}

CBLAS_SIDE Side(bool right) {
  return right ? CblasRight : CblasLeft;
}
CBLAS_UPLO Tri(bool lower) {
  return lower ? CblasLower : CblasUpper;
}
CBLAS_TRANSPOSE Trans(bool t) {
  return t ? CblasTrans : CblasNoTrans;
}

}  // namespace

template <typename T>
int Potrf(bool lower, int64_t n, T* a, int64_t lda) {
  const int in = Int(n, "n"), ilda = Int(lda, "lda");
  int info = 0;
  Get<T>().potrf(Uplo(lower), &in, a, &ilda, &info, 1);
  return info;
}

template <typename T>
int Potri(bool lower, int64_t n, T* a, int64_t lda) {
  const int in = Int(n, "n"), ilda = Int(lda, "lda");
  int info = 0;
  Get<T>().potri(Uplo(lower), &in, a, &ilda, &info, 1);
  return info;
}

template <typename T>
void Trsm(bool rightside, bool lower, bool transpose, int64_t m, int64_t n, T alpha, const T* a,
          int64_t lda, T* b, int64_t ldb) {
  Get<T>().trsm(CblasRowMajor, Side(rightside), Tri(lower), Trans(transpose), CblasNonUnit,
                Int(m, "m"), Int(n, "n"), alpha, a, Int(lda, "lda"), b, Int(ldb, "ldb"));
}

template <typename T>
void Trmm(bool rightside, bool lower, bool transpose, int64_t m, int64_t n, T alpha, const T* a,
          int64_t lda, T* b, int64_t ldb) {
  Get<T>().trmm(CblasRowMajor, Side(rightside), Tri(lower), Trans(transpose), CblasNonUnit,
                Int(m, "m"), Int(n, "n"), alpha, a, Int(lda, "lda"), b, Int(ldb, "ldb"));
}

template <typename T>
void Syrk(bool transpose, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, T beta, T* c,
          int64_t ldc) {
  Get<T>().syrk(CblasRowMajor, CblasLower, Trans(transpose), Int(n, "n"), Int(k, "k"), alpha, a,
                Int(lda, "lda"), beta, c, Int(ldc, "ldc"));
}

template <typename T>
int Gelqf(int64_t m, int64_t n, T* a, int64_t lda, T* l, int64_t ldl) {
  // Column-major, `a` holds A^T (n x m): its QR, A^T = Q_c R, is A = R^T Q_c^T.
  const int im = Int(n, "n"), in = Int(m, "m"), ilda = Int(lda, "lda");
  const auto& api = Get<T>();
  int info = 0, query = -1;
  T size[2] = {};
  api.geqrf(&im, &in, a, &ilda, size, size, &query, &info);
  api.orgqr(&im, &in, &in, a, &ilda, size, size + 1, &query, &info);
  const int lwork = static_cast<int>(std::max(size[0], size[1])) + 1;
  T* tau = Work<T>(size_t(m) + lwork);
  T* work = tau + m;
  api.geqrf(&im, &in, a, &ilda, tau, work, &lwork, &info);
  if (info != 0) return info;
  // R's upper triangle, read row-major, is L's lower one, in place.
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < m; ++c) l[r * ldl + c] = c <= r ? a[r * lda + c] : T(0);
  api.orgqr(&im, &in, &in, a, &ilda, tau, work, &lwork, &info);
  return info;
}

template <typename T>
int Syevd(int64_t n, T* a, int64_t lda, T* w) {
  const int in = Int(n, "n"), ilda = Int(lda, "lda");
  const auto& api = Get<T>();
  int info = 0, query = -1, isize = 0;
  T size = 0;
  api.syevd("V", "U", &in, a, &ilda, w, &size, &query, &isize, &query, &info, 1, 1);
  const int lwork = static_cast<int>(size) + 1, liwork = isize + 1;
  api.syevd("V", "U", &in, a, &ilda, w, Work<T>(lwork), &lwork, IntWork(liwork), &liwork, &info, 1,
            1);
  return info;
}

template <typename T>
int Getrf(int64_t n, T* a, int64_t lda, int* ipiv) {
  const int in = Int(n, "n"), ilda = Int(lda, "lda");
  int info = 0;
  Get<T>().getrf(&in, &in, a, &ilda, ipiv, &info);
  return info;
}

template <typename T>
int Getri(int64_t n, T* a, int64_t lda, const int* ipiv) {
  const int in = Int(n, "n"), ilda = Int(lda, "lda");
  const auto& api = Get<T>();
  int info = 0, query = -1;
  T size = 0;
  api.getri(&in, a, &ilda, ipiv, &size, &query, &info);
  const int lwork = static_cast<int>(size) + 1;
  api.getri(&in, a, &ilda, ipiv, Work<T>(lwork), &lwork, &info);
  return info;
}

#define TS_LAPACK_INSTANTIATE(T)                                                                \
  template int Potrf<T>(bool, int64_t, T*, int64_t);                                            \
  template int Potri<T>(bool, int64_t, T*, int64_t);                                            \
  template void Trsm<T>(bool, bool, bool, int64_t, int64_t, T, const T*, int64_t, T*, int64_t); \
  template void Trmm<T>(bool, bool, bool, int64_t, int64_t, T, const T*, int64_t, T*, int64_t); \
  template void Syrk<T>(bool, int64_t, int64_t, T, const T*, int64_t, T, T*, int64_t);          \
  template int Gelqf<T>(int64_t, int64_t, T*, int64_t, T*, int64_t);                            \
  template int Syevd<T>(int64_t, T*, int64_t, T*);                                              \
  template int Getrf<T>(int64_t, T*, int64_t, int*);                                            \
  template int Getri<T>(int64_t, T*, int64_t, const int*);
TS_LAPACK_INSTANTIATE(float)
TS_LAPACK_INSTANTIATE(double)
#undef TS_LAPACK_INSTANTIATE

}  // namespace tessera::op::lapack
