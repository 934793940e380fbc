// CPU GEMM: every backend, the fallback for other element types and the
// batched form against a naive triple loop in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cblas.h>

#include "ops/tensor/gemm.h"
#include "ops/tensor/gemm_gpu.h"
#include "ops/tensor/lapack.h"
#include "ops/tensor/openblas_library.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::op;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

struct Shape {
  int64_t m, n, k;
};

// Sizes 1, odd sizes, sizes around kernel tiles, and shapes past the point
// where the OpenBLAS path splits over threads, by rows (m >= n) or columns.
const std::vector<Shape> kShapes = {{1, 1, 1},     {1, 7, 5},     {7, 1, 5},     {5, 7, 1},
                                    {3, 5, 7},     {17, 13, 33},  {64, 65, 63},  {130, 67, 129},
                                    {301, 37, 45}, {37, 301, 45}, {1, 300, 1000}};

// One operand as stored: rows x cols with a leading dimension `pad` past the
// row length, the padding filled with a sentinel that must survive.
template <typename T>
struct Mat {
  int64_t rows, cols, ld;
  std::vector<T> v;
  Mat(int64_t r, int64_t c, int64_t pad, unsigned seed, T sentinel = T(-777))
      : rows(r), cols(c), ld(c + pad), v(static_cast<size_t>(std::max<int64_t>(r, 1) * ld)) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> dist(-8, 8);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < ld; ++j) v[i * ld + j] = j < c ? T(dist(gen) / 8.0) : sentinel;
  }
  T at(int64_t i, int64_t j) const { return v[i * ld + j]; }
};

// alpha * op(A) * op(B) + beta * C0 in double, and beside each value the sum
// of the magnitudes of its terms, which bounds a float sum's rounding error;
// beta = 0 ignores C0.
struct Ref {
  std::vector<double> value, magnitude;
};

template <typename T>
Ref Reference(bool ta, bool tb, Shape s, double alpha, const Mat<T>& a, const Mat<T>& b,
              double beta, const Mat<T>& c0) {
  Ref r{std::vector<double>(s.m * s.n), std::vector<double>(s.m * s.n)};
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0, mag = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double t =
            double(ta ? a.at(p, i) : a.at(i, p)) * double(tb ? b.at(j, p) : b.at(p, j));
        acc += t;
        mag += std::abs(t);
      }
      const double cterm = beta == 0 ? 0.0 : beta * double(c0.at(i, j));
      r.value[i * s.n + j] = alpha * acc + cterm;
      r.magnitude[i * s.n + j] = std::abs(alpha) * mag + std::abs(cterm);
    }
  return r;
}

// A length-k sum in T is off by at most about k roundings of its terms'
// magnitudes; a few times that leaves room for blocked summation orders.
template <typename T>
double Tolerance(int64_t k, double magnitude) {
  return 4.0 * double(std::numeric_limits<T>::epsilon()) * double(k + 2) * (magnitude + 1e-3);
}

template <typename T>
void CheckResult(const Mat<T>& c, const Ref& ref, Shape s, const std::string& what) {
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < c.ld; ++j) {
      if (j >= s.n) {
        REQUIRE_MESSAGE(c.at(i, j) == T(-777), what << ": wrote C's padding at " << i << "," << j);
        continue;
      }
      const double got = double(c.at(i, j)), want = ref.value[i * s.n + j];
      REQUIRE_MESSAGE(std::abs(got - want) <= Tolerance<T>(s.k, ref.magnitude[i * s.n + j]),
                      what << " at (" << i << "," << j << "): " << got << " vs " << want);
    }
  }
}

template <typename T>
std::vector<gemm::Backend> BackendsFor() {
  std::vector<gemm::Backend> b = {gemm::Backend::kAuto, gemm::Backend::kOpenBlas,
                                  gemm::Backend::kFallback};
  if constexpr (std::is_same_v<T, float>) b.push_back(gemm::Backend::kDnnl);
  return b;
}

template <typename T>
void CheckAllBackends() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Scale {
    double alpha, beta;
  };
  const Scale scales[] = {{1, 0}, {0.5, 0}, {1.5, -0.75}, {-1, 1}};
  unsigned seed = 1;
  for (auto backend : BackendsFor<T>()) {
    for (int tr = 0; tr < 4; ++tr) {
      const bool ta = tr & 1, tb = tr & 2;
      for (Shape s : kShapes) {
        for (Scale sc : scales) {
          for (int threads : {0, 1}) {
            // Different paddings per operand, so a swapped ld shows.
            Mat<T> a(ta ? s.k : s.m, ta ? s.m : s.k, 3, seed++);
            Mat<T> b(tb ? s.n : s.k, tb ? s.k : s.n, 5, seed++);
            Mat<T> c(s.m, s.n, 2, seed++);
            if (sc.beta == 0)
              for (int64_t i = 0; i < s.m; ++i)
                for (int64_t j = 0; j < s.n; ++j) c.v[i * c.ld + j] = T(nan);
            auto ref = Reference(ta, tb, s, sc.alpha, a, b, sc.beta, c);
            gemm::GemmWith<T>(backend, ta, tb, s.m, s.n, s.k, T(sc.alpha), a.v.data(), a.ld,
                              b.v.data(), b.ld, T(sc.beta), c.v.data(), c.ld, threads);
            CheckResult(c, ref, s,
                        std::string(gemm::BackendName(backend)) + " ta=" + std::to_string(ta) +
                            " tb=" + std::to_string(tb) + " m=" + std::to_string(s.m) +
                            " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) + " alpha=" +
                            std::to_string(sc.alpha) + " beta=" + std::to_string(sc.beta) +
                            " threads=" + std::to_string(threads));
          }
        }
      }
    }
  }
}

template <typename T>
void CheckBatched() {
  const Shape s{13, 9, 21};
  const int64_t batch = 7;
  for (auto backend : BackendsFor<T>()) {
    for (auto mode :
         {gemm::BatchMode::kAuto, gemm::BatchMode::kSerial, gemm::BatchMode::kParallel}) {
      for (int tr = 0; tr < 4; ++tr) {
        const bool ta = tr & 1, tb = tr & 2;
        // One A for every product (stride 0), B and C with gaps between them.
        Mat<T> a(ta ? s.k : s.m, ta ? s.m : s.k, 1, 11);
        std::vector<Mat<T>> bs, cs;
        for (int64_t i = 0; i < batch; ++i) {
          bs.emplace_back(tb ? s.n : s.k, tb ? s.k : s.n, 2, 100 + i);
          cs.emplace_back(s.m, s.n, 3, 200 + i);
        }
        const int64_t size_b = bs[0].v.size() + 4, size_c = cs[0].v.size() + 6;
        std::vector<T> b_all(batch * size_b), c_all(batch * size_c, T(-777));
        for (int64_t i = 0; i < batch; ++i) {
          std::copy(bs[i].v.begin(), bs[i].v.end(), b_all.begin() + i * size_b);
          std::copy(cs[i].v.begin(), cs[i].v.end(), c_all.begin() + i * size_c);
        }
        gemm::GemmBatchedWith<T>(backend, mode, ta, tb, s.m, s.n, s.k, T(0.5), a.v.data(), a.ld,
                                 b_all.data(), bs[0].ld, T(2), c_all.data(), cs[0].ld, batch, 0,
                                 size_b, size_c);
        for (int64_t i = 0; i < batch; ++i) {
          auto ref = Reference(ta, tb, s, 0.5, a, bs[i], 2.0, cs[i]);
          std::copy(c_all.begin() + i * size_c, c_all.begin() + i * size_c + cs[i].v.size(),
                    cs[i].v.begin());
          CheckResult(cs[i], ref, s,
                      std::string("batched ") + gemm::BackendName(backend) +
                          " mode=" + std::to_string(int(mode)) + " tr=" + std::to_string(tr) +
                          " item " + std::to_string(i));
          for (int64_t g = int64_t(cs[i].v.size()); g < size_c; ++g)
            REQUIRE(c_all[i * size_c + g] == T(-777));
        }
      }
    }
  }
}

// A bfloat16 stand-in with no arithmetic of its own: the fallback sees it
// only through the conversion functors.
struct Bf16 {
  uint16_t bits;
};
struct Bf16ToFloat {
  float operator()(Bf16 h) const {
    uint32_t u = uint32_t(h.bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
};
struct FloatToBf16 {
  Bf16 operator()(float f) const {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
    return Bf16{uint16_t(u >> 16)};
  }
};

// Exact integer GEMM through the fallback, with a wider accumulator.
template <typename T, typename Acc>
void CheckIntegerFallback() {
  for (int tr = 0; tr < 4; ++tr) {
    const bool ta = tr & 1, tb = tr & 2;
    for (Shape s : kShapes) {
      std::mt19937 gen(unsigned(s.m * 131 + s.n * 7 + s.k + tr));
      std::uniform_int_distribution<int> dist(std::is_signed_v<T> ? -100 : 0, 100);
      const int64_t lda = (ta ? s.m : s.k) + 1, ldb = (tb ? s.k : s.n) + 2, ldc = s.n + 3;
      std::vector<T> a((ta ? s.k : s.m) * lda), b((tb ? s.n : s.k) * ldb), c(s.m * ldc);
      for (auto& x : a) x = T(dist(gen));
      for (auto& x : b) x = T(dist(gen));
      for (auto& x : c) x = T(dist(gen) % 8);
      std::vector<T> c0 = c;
      GemmFallback<T, Acc>(ta, tb, s.m, s.n, s.k, Acc(2), a.data(), lda, b.data(), ldb, Acc(3),
                           c.data(), ldc);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          Acc acc = 0;
          for (int64_t p = 0; p < s.k; ++p)
            acc += Acc(ta ? a[p * lda + i] : a[i * lda + p]) *
                   Acc(tb ? b[j * ldb + p] : b[p * ldb + j]);
          REQUIRE(c[i * ldc + j] == T(2 * acc + 3 * Acc(c0[i * ldc + j])));
        }
    }
  }
}

}  // namespace

TEST_CASE("sgemm: every backend matches the reference") {
  CheckAllBackends<float>();
}

TEST_CASE("dgemm: every backend matches the reference") {
  CheckAllBackends<double>();
}

TEST_CASE("batched GEMM: every backend and batch mode") {
  CheckBatched<float>();
  CheckBatched<double>();
}

TEST_CASE("public entry points") {
  Mat<float> a(3, 4, 0, 1), b(4, 5, 0, 2), c(3, 5, 0, 3);
  auto ref = Reference<float>(false, false, {3, 5, 4}, 1, a, b, 0, c);
  Gemm(false, false, 3, 5, 4, 1.f, a.v.data(), 4, b.v.data(), 5, 0.f, c.v.data(), 5);
  CheckResult(c, ref, {3, 5, 4}, "Gemm float");

  Mat<double> ad(3, 4, 0, 1), bd(8, 5, 0, 2), cd(6, 5, 0, 3);
  Mat<double> b0(4, 5, 0, 0), b1(4, 5, 0, 0), c0(3, 5, 0, 0), c1(3, 5, 0, 0);
  std::copy(bd.v.begin(), bd.v.begin() + 20, b0.v.begin());
  std::copy(bd.v.begin() + 20, bd.v.end(), b1.v.begin());
  std::copy(cd.v.begin(), cd.v.begin() + 15, c0.v.begin());
  std::copy(cd.v.begin() + 15, cd.v.end(), c1.v.begin());
  auto ref0 = Reference<double>(false, false, {3, 5, 4}, 1, ad, b0, 1, c0);
  auto ref1 = Reference<double>(false, false, {3, 5, 4}, 1, ad, b1, 1, c1);
  GemmBatched(false, false, 3, 5, 4, 1.0, ad.v.data(), 4, bd.v.data(), 5, 1.0, cd.v.data(), 5, 2, 0,
              20, 15);
  std::copy(cd.v.begin(), cd.v.begin() + 15, c0.v.begin());
  std::copy(cd.v.begin() + 15, cd.v.end(), c1.v.begin());
  CheckResult(c0, ref0, {3, 5, 4}, "GemmBatched double 0");
  CheckResult(c1, ref1, {3, 5, 4}, "GemmBatched double 1");
}

TEST_CASE("k = 0 scales C, and empty products do nothing") {
  for (auto backend : BackendsFor<float>()) {
    std::vector<float> c = {1, 2, 3, 4, 5, 6};
    gemm::GemmWith<float>(backend, false, false, 2, 3, 0, 1.f, nullptr, 1, nullptr, 3, 2.f,
                          c.data(), 3);
    CHECK(c == std::vector<float>{2, 4, 6, 8, 10, 12});
    std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
    gemm::GemmWith<float>(backend, false, false, 2, 3, 0, 1.f, nullptr, 1, nullptr, 3, 0.f,
                          c.data(), 3);
    CHECK(c == std::vector<float>(6, 0.f));
    gemm::GemmWith<float>(backend, false, false, 0, 3, 4, 1.f, nullptr, 4, nullptr, 3, 0.f, nullptr,
                          3);
    gemm::GemmWith<float>(backend, false, false, 2, 0, 4, 1.f, nullptr, 4, nullptr, 1, 0.f, nullptr,
                          1);
  }
}

TEST_CASE("oneDNN has no double GEMM: forcing it is an error") {
  double a = 1, b = 1, c = 0;
  auto msg = ErrorOf([&] {
    gemm::GemmWith<double>(gemm::Backend::kDnnl, false, false, 1, 1, 1, 1.0, &a, 1, &b, 1, 0.0, &c,
                           1);
  });
  CHECK(Contains(msg, "Gemm"));
  CHECK(Contains(msg, "double"));
}

TEST_CASE("bad sizes and leading dimensions name Gemm and the values") {
  float a[64] = {}, b[64] = {}, c[64] = {};
  auto msg = ErrorOf([&] { Gemm(false, false, -1, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2); });
  CHECK(Contains(msg, "Gemm"));
  CHECK(Contains(msg, "m=-1"));
  msg = ErrorOf([&] { Gemm(false, false, 2, 2, -3, 1.f, a, 2, b, 2, 0.f, c, 2); });
  CHECK(Contains(msg, "k=-3"));
  // A is 3 x 4 untransposed (row length 4), 4 x 3 transposed (row length 3).
  msg = ErrorOf([&] { Gemm(false, false, 3, 2, 4, 1.f, a, 3, b, 2, 0.f, c, 2); });
  CHECK(Contains(msg, "Gemm"));
  CHECK(Contains(msg, "lda=3"));
  CHECK(ErrorOf([&] { Gemm(true, false, 3, 2, 4, 1.f, a, 3, b, 2, 0.f, c, 2); }).empty());
  msg = ErrorOf([&] { Gemm(false, true, 2, 5, 4, 1.f, a, 4, b, 3, 0.f, c, 5); });
  CHECK(Contains(msg, "ldb=3"));
  msg = ErrorOf([&] { Gemm(false, false, 2, 5, 4, 1.f, a, 4, b, 5, 0.f, c, 4); });
  CHECK(Contains(msg, "ldc=4"));
  msg =
      ErrorOf([&] { GemmBatched(false, false, 2, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2, -1, 4, 4, 4); });
  CHECK(Contains(msg, "batch=-1"));
  msg =
      ErrorOf([&] { GemmBatched(false, false, 2, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2, 3, 4, 4, 3); });
  CHECK(Contains(msg, "stride_c=3"));
  // Errors inside a batch spread over threads still reach the caller.
  double ad[4] = {}, bd[4] = {}, cd[16] = {};
  msg = ErrorOf([&] {
    gemm::GemmBatchedWith<double>(gemm::Backend::kDnnl, gemm::BatchMode::kParallel, false, false, 2,
                                  2, 2, 1.0, ad, 2, bd, 2, 0.0, cd, 2, 4, 0, 0, 4);
  });
  CHECK(Contains(msg, "double"));
}

TEST_CASE("TESSERA_GEMM: values and a malformed one") {
  const char* saved = std::getenv("TESSERA_GEMM");
  const std::string keep = saved ? saved : "";
  setenv("TESSERA_GEMM", "openblas", 1);
  CHECK(gemm::ReadBackendEnv() == gemm::Backend::kOpenBlas);
  setenv("TESSERA_GEMM", "dnnl", 1);
  CHECK(gemm::ReadBackendEnv() == gemm::Backend::kDnnl);
  setenv("TESSERA_GEMM", "auto", 1);
  CHECK(gemm::ReadBackendEnv() == gemm::Backend::kAuto);
  setenv("TESSERA_GEMM", "mkl", 1);
  auto msg = ErrorOf([] { gemm::ReadBackendEnv(); });
  CHECK(Contains(msg, "TESSERA_GEMM"));
  CHECK(Contains(msg, "mkl"));
  if (saved)
    setenv("TESSERA_GEMM", keep.c_str(), 1);
  else
    unsetenv("TESSERA_GEMM");
}

TEST_CASE("the rule picks a backend that exists for the type") {
  for (int64_t s : {1, 4, 8, 16, 64, 1024})
    for (bool is_double : {false, true}) {
      auto b = gemm::Choose(is_double, false, false, s, s, s);
      CHECK(b != gemm::Backend::kAuto);
      if (is_double) CHECK(b != gemm::Backend::kDnnl);
    }
}

TEST_CASE("fallback: integer types are exact") {
  CheckIntegerFallback<int32_t, int64_t>();
  CheckIntegerFallback<int64_t, int64_t>();
  CheckIntegerFallback<int8_t, int32_t>();
  CheckIntegerFallback<uint8_t, int32_t>();
}

TEST_CASE("fallback: a half type through conversion functors") {
  const FloatToBf16 to_bf16;
  const Bf16ToFloat to_float;
  for (Shape s : kShapes) {
    Mat<float> a(s.m, s.k, 0, 5), b(s.k, s.n, 0, 6), c(s.m, s.n, 0, 7);
    std::vector<Bf16> ah(a.v.size()), bh(b.v.size()), ch(c.v.size());
    // Eighths of small integers are exact in bfloat16, so the inputs are too.
    for (size_t i = 0; i < a.v.size(); ++i) ah[i] = to_bf16(a.v[i]);
    for (size_t i = 0; i < b.v.size(); ++i) bh[i] = to_bf16(b.v[i]);
    for (size_t i = 0; i < c.v.size(); ++i) ch[i] = to_bf16(c.v[i]);
    auto ref = Reference<float>(false, false, s, 1, a, b, -0.5, c);
    GemmFallback<Bf16, float>(false, false, s.m, s.n, s.k, 1.f, ah.data(), s.k, bh.data(), s.n,
                              -0.5f, ch.data(), s.n, 0, to_float, to_bf16);
    for (int64_t i = 0; i < s.m * s.n; ++i) {
      const double got = to_float(ch[i]), want = ref.value[i];
      // One bfloat16 rounding of the result (8 significant bits).
      REQUIRE(std::abs(got - want) <=
              std::abs(want) / 256 + Tolerance<float>(s.k, ref.magnitude[i]));
    }
  }
}

// The GPU's triangular solve runs the row-major problem as cuBLAS's
// column-major one (ToColMajor). The same column-major call through
// OpenBLAS's cblas must give what the row-major solve gives, for every side,
// triangle and transposition.
TEST_CASE("ToColMajor: the column-major triangular solve equals the row-major one") {
  using ColTrsm = void (*)(CBLAS_ORDER, CBLAS_SIDE, CBLAS_UPLO, CBLAS_TRANSPOSE, CBLAS_DIAG, int,
                           int, double, const double*, int, double*, int);
  const auto col_trsm = reinterpret_cast<ColTrsm>(openblas::Symbol("cblas_dtrsm", "test"));
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t m = 4, n = 6;
  for (bool right : {false, true})
    for (bool lower : {false, true})
      for (bool trans : {false, true}) {
        const GpuTrsm t{right, lower, trans, m, n, 1, 1.5};
        const int64_t k = right ? n : m;
        std::vector<double> a(size_t(k * k)), b(size_t(m * n));
        for (int64_t i = 0; i < k * k; ++i) a[size_t(i)] = u(gen) + (i % (k + 1) == 0 ? 3 : 0);
        for (double& v : b) v = u(gen);
        std::vector<double> want = b, got = b;
        lapack::Trsm(right, lower, trans, m, n, 1.5, a.data(), k, want.data(), n);
        const ColMajorTrsm c = ToColMajor(t);
        col_trsm(CblasColMajor, c.left ? CblasLeft : CblasRight, c.upper ? CblasUpper : CblasLower,
                 c.transpose ? CblasTrans : CblasNoTrans, CblasNonUnit, int(c.m), int(c.n), 1.5,
                 a.data(), int(k), got.data(), int(n));
        for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
      }
}
