// Parameter values as text: FormatValue's numbers are the shortest %g
// spelling that reads back the same value (what docs, symbol JSON and error
// messages show), checked against the plain search over every precision.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

#include "engine/op/param_value.h"

using tessera::op::FormatValue;

namespace {

// The definition, spelled out: the first precision from 1 whose %g text
// reads back as `v`.
template <typename T>
std::string ShortestBySearch(T v) {
  char b[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(b, sizeof b, "%.*g", prec, static_cast<double>(v));
    if (static_cast<T>(std::strtod(b, nullptr)) == v) return b;
  }
  std::snprintf(b, sizeof b, "%.17g", static_cast<double>(v));
  return b;
}

}  // namespace

TEST_CASE("real parameters print as the shortest %g text that reads back") {
  CHECK(FormatValue(0.001f) == "0.001");
  CHECK(FormatValue(0.9f) == "0.9");
  CHECK(FormatValue(1e-5f) == "1e-05");
  CHECK(FormatValue(0.0001) == "0.0001");
  CHECK(FormatValue(1e16) == "1e+16");
  CHECK(FormatValue(123456789.0) == "123456789");
  CHECK(FormatValue(0.1) == "0.1");
  CHECK(FormatValue(1.0 / 3) == "0.3333333333333333");
  CHECK(FormatValue(0.0f) == "0");
  CHECK(FormatValue(-0.0) == "-0");
  CHECK(FormatValue(-2.5f) == "-2.5");
  CHECK(FormatValue(INFINITY) == "inf");
  CHECK(FormatValue(-INFINITY) == "-inf");
  CHECK(FormatValue(std::nan("")) == "nan");
  CHECK(FormatValue(std::numeric_limits<float>::denorm_min()) ==
        ShortestBySearch(std::numeric_limits<float>::denorm_min()));
  CHECK(FormatValue(std::numeric_limits<double>::max()) == "1.7976931348623157e+308");
}

TEST_CASE("random floats and doubles print as the search over every precision finds") {
  std::mt19937_64 rng(20261127);
  for (int i = 0; i < 20000; ++i) {
    const auto f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    const auto d = std::bit_cast<double>(rng());
    if (std::isfinite(f)) {
      CAPTURE(ShortestBySearch(f));
      CHECK(FormatValue(f) == ShortestBySearch(f));
    }
    if (std::isfinite(d)) {
      CAPTURE(ShortestBySearch(d));
      CHECK(FormatValue(d) == ShortestBySearch(d));
    }
    // Short decimals, as defaults are written.
    const double short_d =
        static_cast<double>(rng() % 100000) / std::pow(10.0, static_cast<double>(rng() % 12));
    CHECK(FormatValue(short_d) == ShortestBySearch(short_d));
    CHECK(FormatValue(static_cast<float>(short_d)) ==
          ShortestBySearch(static_cast<float>(short_d)));
  }
}
