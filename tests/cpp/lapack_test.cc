// The row-major wrappers over OpenBLAS's LAPACK and triangular BLAS
// (ops/tensor/lapack.h): every routine on known matrices or against the
// identity it must satisfy, in float and double, with leading dimensions
// wider than the matrices, and LAPACK's failures returned as info.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <random>
#include <vector>

#include "ops/tensor/lapack.h"
#include "tests/cpp/test_util.h"

using namespace tessera::op;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

// MXNet's test_laop matrices: kSpd = kLow kLow^T.
const double kSpd[16] = {9, 3, -6, 12, 3, 26, -7, -11, -6, -7, 9, 7, 12, -11, 7, 65};
const double kLow[16] = {3, 0, 0, 0, 1, 5, 0, 0, -2, -1, 2, 0, 4, -3, 6, 2};

// A row-major n x m matrix stored with leading dimension ld (> m), the
// padding filled with a marker that must survive.
template <typename T>
std::vector<T> Padded(const double* v, int64_t n, int64_t m, int64_t ld) {
  std::vector<T> a(size_t(n * ld), T(-777));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < m; ++c) a[size_t(r * ld + c)] = T(v[r * m + c]);
  return a;
}

template <typename T>
T At(const std::vector<T>& a, int64_t ld, int64_t r, int64_t c) {
  return a[size_t(r * ld + c)];
}

template <typename T>
void CheckPadding(const std::vector<T>& a, int64_t n, int64_t m, int64_t ld) {
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = m; c < ld; ++c) CHECK(At(a, ld, r, c) == T(-777));
}

template <typename T>
double Tol() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-10;
}

}  // namespace

TEST_CASE_TEMPLATE("Potrf and Potri: lower and upper, row-major", T, float, double) {
  const int64_t n = 4, ld = 6;
  for (bool lower : {true, false}) {
    auto a = Padded<T>(kSpd, n, n, ld);
    REQUIRE(lapack::Potrf(lower, n, a.data(), ld) == 0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < n; ++c)
        if (lower ? c <= r : c >= r)
          CHECK(At(a, ld, r, c) ==
                doctest::Approx(lower ? kLow[r * n + c] : kLow[c * n + r]).epsilon(Tol<T>()));
    CheckPadding(a, n, n, ld);
    // potri from the factor: A^-1 in the same triangle; A A^-1 = I.
    REQUIRE(lapack::Potri(lower, n, a.data(), ld) == 0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k) {
          // Read the symmetric inverse from the triangle LAPACK wrote.
          const int64_t i = lower ? std::max(k, c) : std::min(k, c);
          const int64_t j = lower ? std::min(k, c) : std::max(k, c);
          s += kSpd[r * n + k] * double(At(a, ld, i, j));
        }
        CHECK(s == doctest::Approx(r == c ? 1.0 : 0.0).epsilon(Tol<T>()).scale(1));
      }
  }
  // Not positive definite: info names the leading minor that fails.
  const double bad[4] = {1, 2, 2, 1};
  auto b = Padded<T>(bad, 2, 2, 2);
  CHECK(lapack::Potrf(true, 2, b.data(), 2) == 2);
}

TEST_CASE_TEMPLATE("Trsm undoes Trmm on both sides, transposed or not", T, float, double) {
  const int64_t m = 4, n = 3;
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> bv(size_t(m * n));
  for (auto& v : bv) v = dist(gen);
  for (bool right : {false, true})
    for (bool lower : {true, false})
      for (bool trans : {false, true}) {
        const int64_t k = right ? n : m;
        // A well-conditioned triangle; garbage in the other one.
        std::vector<T> a(size_t(k * k), T(99));
        for (int64_t r = 0; r < k; ++r)
          for (int64_t c = 0; c < k; ++c)
            if (lower ? c <= r : c >= r) a[size_t(r * k + c)] = T(r == c ? 2 + r : 0.3 * (r - c));
        std::vector<T> b(bv.begin(), bv.end());
        lapack::Trmm(right, lower, trans, m, n, T(2), a.data(), k, b.data(), n);
        lapack::Trsm(right, lower, trans, m, n, T(0.5), a.data(), k, b.data(), n);
        for (size_t i = 0; i < b.size(); ++i)
          CHECK(double(b[i]) == doctest::Approx(bv[i]).epsilon(Tol<T>()));
      }
}

TEST_CASE_TEMPLATE("Syrk fills the lower triangle of alpha A A^T or alpha A^T A", T, float,
                   double) {
  const double av[6] = {1, 2, 3, 4, 5, 6};  // 2 x 3
  const auto a = Padded<T>(av, 2, 3, 3);
  std::vector<T> c(4, T(0));
  lapack::Syrk(false, 2, 3, T(1), a.data(), 3, T(0), c.data(), 2);
  CHECK(double(c[0]) == 14);
  CHECK(double(c[2]) == 32);
  CHECK(double(c[3]) == 77);
  std::vector<T> d(9, T(0));
  lapack::Syrk(true, 3, 2, T(2), a.data(), 3, T(0), d.data(), 3);
  CHECK(double(d[0]) == 34);  // 2 * (1 + 16)
  CHECK(double(d[7]) == 72);  // 2 * (3 * 2 + 6 * 5), row 2 column 1
}

TEST_CASE_TEMPLATE("Gelqf: A = L Q, Q's rows orthonormal, L lower", T, float, double) {
  const int64_t m = 3, n = 5, ld = 7;
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> av(size_t(m * n));
  for (auto& v : av) v = dist(gen);
  auto q = Padded<T>(av.data(), m, n, ld);
  std::vector<T> l(size_t(m * m), T(5));
  REQUIRE(lapack::Gelqf(m, n, q.data(), ld, l.data(), m) == 0);
  CheckPadding(q, m, n, ld);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < m; ++c) {
      if (c > r) CHECK(double(l[size_t(r * m + c)]) == 0);
      double dotp = 0;
      for (int64_t k = 0; k < n; ++k) dotp += double(At(q, ld, r, k)) * double(At(q, ld, c, k));
      CHECK(dotp == doctest::Approx(r == c ? 1.0 : 0.0).epsilon(Tol<T>()).scale(1));
    }
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t k = 0; k < m; ++k) s += double(l[size_t(r * m + k)]) * double(At(q, ld, k, c));
      CHECK(s == doctest::Approx(av[size_t(r * n + c)]).epsilon(Tol<T>()).scale(1));
    }
  // MXNet's documented example: L = [[-3.7417, 0], [-8.5524, 1.9640]].
  const double ex[6] = {1, 2, 3, 4, 5, 6};
  auto q2 = Padded<T>(ex, 2, 3, 3);
  std::vector<T> l2(4);
  REQUIRE(lapack::Gelqf(2, 3, q2.data(), 3, l2.data(), 2) == 0);
  CHECK(double(l2[0]) == doctest::Approx(-3.74165739).epsilon(1e-5));
  CHECK(double(l2[2]) == doctest::Approx(-8.55235974).epsilon(1e-5));
  CHECK(double(l2[3]) == doctest::Approx(1.96396101).epsilon(1e-5));
}

TEST_CASE_TEMPLATE("Syevd: eigenvectors as rows, eigenvalues ascending", T, float, double) {
  const double av[4] = {1, 2, 2, 4};
  auto u = Padded<T>(av, 2, 2, 3);
  std::vector<T> w(2);
  REQUIRE(lapack::Syevd(2, u.data(), 3, w.data()) == 0);
  CheckPadding(u, 2, 2, 3);
  CHECK(double(w[0]) == doctest::Approx(0).scale(1).epsilon(Tol<T>()));
  CHECK(double(w[1]) == doctest::Approx(5).epsilon(Tol<T>()));
  // Row 1 is +-(1, 2)/sqrt(5): A u = 5 u.
  const double u0 = double(At(u, 3, 1, 0)), u1 = double(At(u, 3, 1, 1));
  CHECK(u0 + 2 * u1 == doctest::Approx(5 * u0).epsilon(Tol<T>()));
  CHECK(std::abs(u1) == doctest::Approx(2 / std::sqrt(5.0)).epsilon(Tol<T>()));
}

TEST_CASE_TEMPLATE("Getrf and Getri: determinant sign and inverse", T, float, double) {
  const double av[4] = {1, 4, 2, 3};  // det -5, inverse [[-0.6, 0.8], [0.4, -0.2]]
  auto a = Padded<T>(av, 2, 2, 4);
  int ipiv[2];
  REQUIRE(lapack::Getrf(2, a.data(), 4, ipiv) == 0);
  double det = double(At(a, 4, 0, 0)) * double(At(a, 4, 1, 1));
  for (int j = 0; j < 2; ++j)
    if (ipiv[j] != j + 1) det = -det;
  CHECK(det == doctest::Approx(-5).epsilon(Tol<T>()));
  REQUIRE(lapack::Getri(2, a.data(), 4, ipiv) == 0);
  const double inv[4] = {-0.6, 0.8, 0.4, -0.2};
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 2; ++c)
      CHECK(double(At(a, 4, r, c)) == doctest::Approx(inv[r * 2 + c]).epsilon(Tol<T>()));
  CheckPadding(a, 2, 2, 4);
  // Singular: info > 0.
  const double sing[4] = {1, 2, 2, 4};
  auto s = Padded<T>(sing, 2, 2, 2);
  CHECK(lapack::Getrf(2, s.data(), 2, ipiv) > 0);
}

TEST_CASE("sizes past LAPACK's 32-bit integers are errors, not truncations") {
  float x = 0;
  const std::string e = ErrorOf([&] { lapack::Potrf(true, int64_t(INT_MAX) + 1, &x, 1); });
  CHECK(Contains(e, "32-bit"));
  CHECK(Contains(e, "n = 2147483648"));
}
