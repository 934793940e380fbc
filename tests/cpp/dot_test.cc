// dot and batch_dot: values, transposes, N-d shapes, dtypes, requests,
// gradients and shape errors.
#include <doctest/doctest.h>

#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using test::Array;
using test::CheckClose;
using test::Contains;
using test::ErrorOf;
using test::Run;

namespace {
// Row-major naive product for expected values.
std::vector<double> MatMul(const std::vector<double>& a, const std::vector<double>& b, int m, int k,
                           int n) {
  std::vector<double> c(m * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}
std::vector<double> Transpose(const std::vector<double>& a, int rows, int cols) {
  std::vector<double> t(a.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  return t;
}
std::vector<double> Seq(int n, double scale = 1) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = (i % 7 - 3) * scale;
  return v;
}
}  // namespace

TEST_CASE("dot of matrices, vectors and N-d arrays") {
  NDArray a = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  NDArray b = Array({3, 2}, {7, 8, 9, 10, 11, 12});
  CheckClose(Run("dot", {a, b}), {58, 64, 139, 154});
  NDArray v = Array({3}, {1, 2, 3});
  NDArray r = Run("dot", {v, v});
  CHECK(r.shape() == Shape{1});
  CheckClose(r, {14});
  CHECK(Run("dot", {a, v}).shape() == Shape{2});
  CheckClose(Run("dot", {a, v}), {14, 32});
  // (2,2,3) x (3,2,1) -> (2,2,2,1)
  NDArray x = Array({2, 2, 3}, Seq(12));
  NDArray y = Array({3, 2, 1}, Seq(6, 0.5));
  NDArray z = Run("dot", {x, y});
  CHECK(z.shape() == Shape{2, 2, 2, 1});
  CheckClose(z, MatMul(Seq(12), Seq(6, 0.5), 4, 3, 2));
}

TEST_CASE("dot transposes and dtypes") {
  const int m = 5, k = 4, n = 3;
  std::vector<double> av = Seq(m * k), bv = Seq(k * n, 0.25);
  const std::vector<double> expect = MatMul(av, bv, m, k, n);
  for (DType t :
       {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kFloat16}) {
    if (IsInteger(t)) {
      bv = Seq(k * n);
    } else {
      bv = Seq(k * n, 0.25);
    }
    const std::vector<double> e = MatMul(av, bv, m, k, n);
    NDArray a = Array({m, k}, av, t), at = Array({k, m}, Transpose(av, m, k), t);
    NDArray b = Array({k, n}, bv, t), bt = Array({n, k}, Transpose(bv, k, n), t);
    CheckClose(Run("dot", {a, b}), e, 1e-3);
    CheckClose(Run("dot", {at, b}, {{"transpose_a", "true"}}), e, 1e-3);
    CheckClose(Run("dot", {a, bt}, {{"transpose_b", "true"}}), e, 1e-3);
    CheckClose(Run("dot", {at, bt}, {{"transpose_a", "1"}, {"transpose_b", "1"}}), e, 1e-3);
  }
  (void)expect;
}

TEST_CASE("dot with add request accumulates; out aliasing an input goes through a temporary") {
  NDArray a = Array({2, 2}, {1, 2, 3, 4});
  NDArray out = Array({2, 2}, {1, 1, 1, 1});
  std::vector<NDArray> outs{out};
  InvokeOptions opt;
  opt.req = {kAddTo};
  Invoke(MakeAttrs("dot"), {a, a}, &outs, opt);
  CheckClose(out, {8, 11, 16, 23});
  std::vector<NDArray> self{a};
  Invoke(MakeAttrs("dot"), {a, a}, &self);
  CheckClose(a, {7, 10, 15, 22});
}

TEST_CASE("batch_dot") {
  const int bsz = 3, m = 2, k = 4, n = 5;
  std::vector<double> av = Seq(bsz * m * k), bv = Seq(bsz * k * n, 0.5);
  std::vector<double> e;
  for (int i = 0; i < bsz; ++i) {
    std::vector<double> ai(av.begin() + i * m * k, av.begin() + (i + 1) * m * k);
    std::vector<double> bi(bv.begin() + i * k * n, bv.begin() + (i + 1) * k * n);
    auto c = MatMul(ai, bi, m, k, n);
    e.insert(e.end(), c.begin(), c.end());
  }
  NDArray r = Run("batch_dot", {Array({bsz, m, k}, av), Array({bsz, k, n}, bv)});
  CHECK(r.shape() == Shape{bsz, m, n});
  CheckClose(r, e);
  std::vector<double> bt;
  for (int i = 0; i < bsz; ++i) {
    auto t =
        Transpose(std::vector<double>(bv.begin() + i * k * n, bv.begin() + (i + 1) * k * n), k, n);
    bt.insert(bt.end(), t.begin(), t.end());
  }
  CheckClose(
      Run("batch_dot", {Array({bsz, m, k}, av), Array({bsz, n, k}, bt)}, {{"transpose_b", "true"}}),
      e);
}

TEST_CASE("dot and batch_dot gradients") {
  for (const char* ta : {"false", "true"})
    for (const char* tb : {"false", "true"}) {
      CAPTURE(ta);
      CAPTURE(tb);
      CHECK(test::CheckNumericGradient("dot", {{"transpose_a", ta}, {"transpose_b", tb}},
                                       {test::RandomArray({3, 3}, -1, 1, DType::kFloat64, 1),
                                        test::RandomArray({3, 3}, -1, 1, DType::kFloat64, 2)}));
      CHECK(test::CheckNumericGradient("batch_dot", {{"transpose_a", ta}, {"transpose_b", tb}},
                                       {test::RandomArray({2, 3, 3}, -1, 1, DType::kFloat64, 3),
                                        test::RandomArray({2, 3, 3}, -1, 1, DType::kFloat64, 4)}));
    }
  CHECK(test::CheckNumericGradient("dot", {},
                                   {test::RandomArray({2, 3, 4}, -1, 1, DType::kFloat64, 5),
                                    test::RandomArray({4, 2}, -1, 1, DType::kFloat64, 6)}));
}

TEST_CASE("dot shape errors name both shapes") {
  NDArray a = Array({2, 3}, Seq(6)), b = Array({2, 3}, Seq(6));
  CHECK(Contains(ErrorOf([&] { Run("dot", {a, b}); }), "dot: shape mismatch, (2,3) X (2,3)"));
  CHECK(Contains(ErrorOf([&] {
                   Run("batch_dot", {a, b});
                 }),
                 "batch_dot: needs two arrays of the same rank >= 3"));
  CHECK(Contains(ErrorOf([&] {
                   Run("dot", {a, Array({3}, {1, 2, 3}, DType::kFloat64)});
                 }),
                 "dtype"));
  CHECK(Contains(
      ErrorOf([&] {
        Run("dot", {a.AsType(DType::kBool), a.AsType(DType::kBool)}, {{"transpose_b", "1"}});
      }),
      "does not support dtype bool"));
}
