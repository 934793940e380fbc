// NDArray printing: number styles, alignment, scale headers, summaries and
// higher-dimensional slices.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ndarray/format.h"
#include "tests/cpp/test_util.h"

using namespace tessera;

TEST_CASE("integers print aligned without decimals") {
  CHECK(FormatValues({1, 2, 3, -40}, Shape{2, 2}, DType::kFloat32) == "  1   2\n  3 -40\n");
  CHECK(FormatValues({1, 0, 1}, Shape{3}, DType::kBool) == "1\n0\n1\n");
}

TEST_CASE("fractions print with four decimals in one width") {
  CHECK(FormatValues({0.5, -1.25, 10, 2}, Shape{2, 2}, DType::kFloat64) ==
        " 0.5000 -1.2500\n10.0000  2.0000\n");
}

TEST_CASE("large or small magnitudes get a common scale, wide ranges scientific") {
  CHECK(FormatValues({1500000.25, 2.5e6}, Shape{2}, DType::kFloat32) ==
        "1e+06 *\n1.5000\n2.5000\n");
  CHECK(FormatValues({1.5e-3, 2.5e-3}, Shape{1, 2}, DType::kFloat32) == "1e-03 *\n1.5000 2.5000\n");
  CHECK(FormatValues({1e-5, 1.5}, Shape{2}, DType::kFloat32) == "1.0000e-05\n1.5000e+00\n");
}

TEST_CASE("non-finite values keep the alignment") {
  CHECK(FormatValues({NAN, 1.5, -INFINITY}, Shape{3}, DType::kFloat32) ==
        "   nan\n1.5000\n  -inf\n");
}

TEST_CASE("higher dimensions print one slice at a time, 1-based") {
  std::vector<double> v(8);
  for (int i = 0; i < 8; ++i) v[i] = i;
  CHECK(FormatValues(v, Shape{2, 2, 2}, DType::kInt32) ==
        "(1,.,.) =\n0 1\n2 3\n\n(2,.,.) =\n4 5\n6 7\n\n");
}

TEST_CASE("large arrays are summarised") {
  std::vector<double> v(2000);
  for (int i = 0; i < 2000; ++i) v[i] = i;
  const std::string s = FormatValues(v, Shape{2000}, DType::kInt32);
  CHECK(s == "   0\n   1\n   2\n ...\n1997\n1998\n1999\n");
  const std::string m = FormatValues(v, Shape{40, 50}, DType::kInt32);
  CHECK(test::Contains(m, "   0    1    2  ...   47   48   49\n"));
  CHECK(test::Contains(m, "   :    :    :  ...    :    :    :\n"));
}

TEST_CASE("the footer names dtype, shape and context") {
  NDArray a(Shape{2, 3}, Context::CPU(), DType::kFloat64);
  std::vector<double> v{1, 2, 3, 4, 5, 6};
  a.SyncCopyFromCPU(v.data(), v.size());
  CHECK(FormatNDArray(a) == "1 2 3\n4 5 6\n[NDArray float64 2x3 @cpu(0)]\n");
}
