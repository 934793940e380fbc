// The C++ operator plugin loader (ops/custom/plugin_loader.h) on real shared
// libraries built by tests/plugin/CMakeLists.txt: the example plugin
// (scripts/ops) and one library per way of being wrong (tests/plugin/bad).
// This executable exports its symbols (ENABLE_EXPORTS), as tessera does, so
// the plugins resolve the registry against it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/op/op.h"
#include "engine/op/registration_guard.h"
#include "ops/custom/op_plugin.h"
#include "ops/custom/plugin_loader.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::op;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

std::string Lib(const std::string& name) {
  return std::string(TESSERA_TEST_PLUGIN_DIR) + "/lib" + name + ".so";
}
std::string Bad(const std::string& name) {
  return Lib("tessera_test_" + name);
}

// The error of loading `path`, which must fail.
std::string LoadError(const std::string& path) {
  const std::string e = ErrorOf([&] { LoadOpPlugin(path); });
  INFO(path);
  CHECK(!e.empty());
  return e;
}

}  // namespace

TEST_CASE("the example plugin registers its ops, which compute and differentiate") {
  const std::vector<std::string> names = LoadOpPlugin(Lib("tessera_example_ops"));
  CHECK(names == std::vector<std::string>{"plugin_quadratic", "_backward_plugin_quadratic",
                                          "plugin_smooth_l1", "_backward_plugin_smooth_l1"});
  CHECK(Op::Find("plugin_quadratic"));

  NDArray x = Array(Shape({3}), {1, 2, 3});
  CHECK(
      CheckClose(Run("plugin_quadratic", {x}, {{"a", "1"}, {"b", "2"}, {"c", "3"}}), {6, 11, 18}));
  NDArray y = Array(Shape({5}), {-2, -0.5, 0, 0.5, 2});
  CHECK(CheckClose(Run("plugin_smooth_l1", {y}, {{"scalar", "1"}}), {1.5, 0.125, 0, 0.125, 1.5}));

  CHECK(CheckNumericGradient("plugin_quadratic", {{"a", "0.5"}, {"b", "-1"}, {"c", "2"}},
                             {RandomArray(Shape({2, 3}), -2, 2)}));
  // Away from the kinks at +-1/sigma^2 = +-0.25.
  CHECK(CheckNumericGradient("plugin_smooth_l1", {{"scalar", "2"}},
                             {Array(Shape({4}), {-1.5, -0.1, 0.2, 0.9}, DType::kFloat64)}));
}

TEST_CASE("loading the same library again returns the same names and registers nothing") {
  const std::vector<std::string> first = LoadOpPlugin(Lib("tessera_example_ops"));
  const size_t ops = Op::ListAll().size();
  // Another spelling of the same file.
  const std::string other = std::string(TESSERA_TEST_PLUGIN_DIR) + "/./libtessera_example_ops.so";
  CHECK(LoadOpPlugin(other) == first);
  CHECK(Op::ListAll().size() == ops);
  bool listed = false;
  for (const std::string& p : LoadedOpPlugins()) listed = listed || Contains(p, "example_ops");
  CHECK(listed);
}

TEST_CASE("a missing file, or one that is not a library, is an error naming the path") {
  std::string e = LoadError("/nonexistent/libnothing.so");
  CHECK(Contains(e, "cannot load operator plugin '/nonexistent/libnothing.so': no such file"));
  e = LoadError(__FILE__);
  CHECK(Contains(e, std::string("'") + __FILE__ + "'"));
  e = LoadError("");
  CHECK(Contains(e, "the path is empty"));
}

TEST_CASE("a library without the entry points is not a plugin") {
  const std::string e = LoadError(Bad("no_entry"));
  CHECK(Contains(e, Bad("no_entry")));
  CHECK(Contains(e, "is not a Tessera operator plugin"));
  CHECK(Contains(e, "tessera_op_plugin_abi nor tessera_op_plugin_register"));
}

TEST_CASE("another ABI version or layout is refused before registration runs") {
  std::string e = LoadError(Bad("bad_version"));
  CHECK(Contains(e, "built for operator plugin ABI version " +
                        std::to_string(TESSERA_OP_PLUGIN_ABI_VERSION + 1)));
  CHECK(Contains(e, "rebuild it"));
  CHECK(!Op::Find("bad_version_op"));

  e = LoadError(Bad("bad_layout"));
  CHECK(Contains(e, "sizeof(tessera::TBlob)"));
  CHECK(!Op::Find("bad_layout_op"));
}

TEST_CASE("a plugin may not take an existing op name") {
  const std::string doc = Op::Get("quadratic")->description();
  std::string e = LoadError(Bad("duplicate_op"));
  CHECK(Contains(e, "operator 'quadratic' already exists"));
  CHECK(Contains(e, "plugin_before_duplicate"));  // reported as staying registered
  CHECK(Op::Get("quadratic")->description() == doc);
  CHECK(CheckClose(Run("quadratic", {Array(Shape({2}), {1, 2})}, {{"a", "1"}}), {1, 4}));

  e = LoadError(Bad("duplicate_simple_op"));
  CHECK(Contains(e, "operator 'smooth_l1' already exists"));
  CHECK(CheckClose(Run("smooth_l1", {Array(Shape({1}), {2})}, {{"scalar", "1"}}), {1.5}));
}

TEST_CASE("registering from static initialisers is refused with advice") {
  const std::string e = LoadError(Bad("static_registration"));
  CHECK(Contains(e, "plugin_static_op"));
  CHECK(Contains(e, "inside TESSERA_OP_PLUGIN()"));
}

TEST_CASE("an undefined symbol names the C++ function") {
  const std::string e = LoadError(Bad("undefined_symbol"));
  CHECK(Contains(e, "undefined symbol"));
  CHECK(Contains(e, "tessera::op::FunctionTesseraDoesNotHave(int)"));
}

TEST_CASE("RegistrationGuard protects only the names taken before it") {
  Op::Register("guard_test_existing");
  {
    RegistrationGuard guard;
    CHECK(Contains(ErrorOf([] { Op::Register("guard_test_existing"); }), "already exists"));
    Op& fresh = Op::Register("guard_test_new");
    CHECK(&Op::Register("guard_test_new") == &fresh);  // again under the same guard: fine
    CHECK(Contains(ErrorOf([&] { fresh.add_alias("guard_test_existing"); }), "already exists"));
  }
  CHECK(&Op::Register("guard_test_existing") == Op::Find("guard_test_existing"));
}
