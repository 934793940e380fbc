// mx.rtc's kernel signatures (ops/custom/rtc.h): the C parameter lists a
// launch checks its arguments against. Compiling and launching are tested
// from Lua (tests/lua/rtc_test.lua), where NVRTC and a GPU are found.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/base/error.h"
#include "ops/custom/rtc.h"

using namespace tessera;
using namespace tessera::op;

TEST_CASE("a kernel signature gives each parameter's type, pointer, constness and name") {
  const std::vector<RtcParam> p = ParseRtcSignature(
      "const float* x, float *y, double a, int n, const __half * __restrict__ h, "
      "long long big, unsigned char* bytes, const int k");
  REQUIRE(p.size() == 8);
  CHECK((p[0].dtype == DType::kFloat32 && p[0].pointer && p[0].is_const && p[0].name == "x"));
  CHECK((p[1].dtype == DType::kFloat32 && p[1].pointer && !p[1].is_const && p[1].name == "y"));
  CHECK((p[2].dtype == DType::kFloat64 && !p[2].pointer && p[2].name == "a"));
  CHECK((p[3].dtype == DType::kInt32 && !p[3].pointer && p[3].name == "n"));
  CHECK((p[4].dtype == DType::kFloat16 && p[4].pointer && p[4].is_const && p[4].name == "h"));
  CHECK((p[5].dtype == DType::kInt64 && !p[5].pointer));
  CHECK((p[6].dtype == DType::kUint8 && p[6].pointer && !p[6].is_const));
  // A const scalar is passed by value like any scalar.
  CHECK((p[7].dtype == DType::kInt32 && !p[7].pointer && !p[7].is_const));
  CHECK(ParseRtcSignature("").empty());
  CHECK(ParseRtcSignature(" void ").empty());
}

TEST_CASE("a signature it cannot read is an error naming the parameter") {
  auto fails = [](const char* sig, const char* part) {
    try {
      ParseRtcSignature(sig);
      FAIL("no error for '" << sig << "'");
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK_MESSAGE(what.find(part) != std::string::npos, what);
    }
  };
  fails("float* x, float** y", "parameter 2 'float** y' has more than one '*'");
  fails("float", "parameter 1 'float' has no name");
  fails("float* x,", "parameter 2 '' is empty");
  fails("quaternion q", "has an unknown type");
  fails("float x-y", "has no valid name");
}
