// Sizes that overflow (engine/base/array_bytes.h): element and byte counts
// checked where arrays are first sized, on every path that makes them: a
// new NDArray, views, an op's inferred outputs (the creation ops, tile,
// repeat, reshape codes, concat, broadcast_to, one_hot, eye, the window
// ops), and the executor's memory plan. Each case below once allocated
// nothing (a wrapped count) or too little and then wrote past it.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/base/array_bytes.h"
#include "engine/base/format_bytes.h"
#include "engine/graph/executor.h"
#include "engine/graph/indexed_graph.h"
#include "engine/graph/infer.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/reshape_spec.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using test::Contains;
using test::ErrorOf;

namespace {

constexpr int64_t k31 = int64_t{1} << 31, k32 = int64_t{1} << 32, k62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::string CallError(const char* op, std::vector<NDArray> in, op::ParamDict params) {
  return ErrorOf([&] { Invoke(op, in, std::move(params)); });
}

NDArray Ones(const Shape& s) {
  return Invoke("_ones", {}, {{"shape", s.ToString()}})[0];
}

}  // namespace

TEST_CASE("element counts: CheckedSize, MulDims and AddDims detect overflow") {
  CHECK(Shape{2, 3}.CheckedSize() == 6);
  CHECK(Shape{k31, k31}.CheckedSize() == int64_t{1} << 62);
  CHECK(Shape{k32, k32}.CheckedSize() == -1);  // Size() would wrap to 0
  CHECK(Shape{kMax, 2}.CheckedSize() == -1);
  CHECK(Shape{kMax, 0}.CheckedSize() == 0);
  CHECK(MulDims(k31, 4, "tile") == int64_t{1} << 33);
  CHECK(ErrorOf([] { MulDims(k32, k32, "tile"); }) ==
        "tile: the size 4294967296 x 4294967296 does not fit in 64 bits");
  CHECK(ErrorOf([] { AddDims(kMax, 1, "concat"); }) ==
        "concat: the size 9223372036854775807 + 1 does not fit in 64 bits");
  // Negative dimensions are refused where shapes are made.
  CHECK(Contains(ErrorOf([] { Shape{2, -3}; }), "negative"));
  CHECK(Contains(ErrorOf([] { Shape::Parse("(2,-3)"); }), "invalid shape"));
}

TEST_CASE("ArrayBytes: the issue's message, the bound, every dtype") {
  CHECK(ArrayBytes(Shape{2, 3}, DType::kFloat64, "x") == 48);
  CHECK(ErrorOf([] {
          ArrayBytes(Shape{k31, k31}, DType::kFloat32, "zeros");
        }) ==
        "zeros: shape (2147483648,2147483648) float32 needs 16 EiB, more than the 128 TiB one "
        "array may hold");
  CHECK(Contains(ErrorOf([] {
                   ArrayBytes(Shape{k32, k32}, DType::kFloat32, "z");
                 }),
                 "needs 64 EiB"));
  CHECK(Contains(ErrorOf([] { ArrayBytes(Shape{k62, k62, k62}, DType::kInt8, "z"); }), "YiB"));
  // Exactly the bound is allowed, one element more is not.
  CHECK(ArrayBytes(Shape{int64_t{1} << 47}, DType::kUint8, "x") == kMaxArrayBytes);
  CHECK(Contains(ErrorOf([] { ArrayBytes(Shape{(int64_t{1} << 47) + 1}, DType::kUint8, "x"); }),
                 "more than the 128 TiB"));
  CHECK(Contains(ErrorOf([] { ArrayBytes(Shape{int64_t{1} << 45}, DType::kFloat64, "x"); }),
                 "needs 256 TiB"));
  Shape negative{2, 3};
  negative[1] = -3;  // through operator[], which push_back's check does not see
  CHECK(ErrorOf([&] { ArrayBytes(negative, DType::kFloat32, "NDArray"); }) ==
        "NDArray: shape (2,-3) has a negative dimension (-3 at axis 1)");
  CHECK(FormatBytes(0x1p64) == "16 EiB");
  CHECK(FormatBytes(0x1p90) == "1024 YiB");
}

TEST_CASE("NDArray construction and views check the size before allocating") {
  for (const Shape& s : {Shape{k31, k31}, Shape{k32, k32}, Shape{kMax, kMax}, Shape{k62, 4}})
    CHECK(Contains(ErrorOf([&] { NDArray(s, Context::CPU(), DType::kFloat32); }), "needs"));
  CHECK(Contains(ErrorOf([] {
                   NDArray(Shape{k32, k32}, Context::CPU(), DType::kFloat32, true);
                 }),
                 "NDArray: shape (4294967296,4294967296) float32 needs 64 EiB"));
  NDArray a = Ones(Shape{4});
  CHECK(Contains(ErrorOf([&] { a.AsView(Shape{k32, k32}, DType::kFloat32); }), "view: shape"));
}

TEST_CASE("creation ops: zeros, ones, full, empty, random, eye") {
  for (const char* shape : {"(2147483648,2147483648)", "(4294967296,4294967296)",
                            "(9223372036854775807,9223372036854775807)", "(4611686018427387904,4)",
                            "(65536,65536,65536,65536)"}) {
    for (const char* op : {"_zeros", "_ones", "_empty", "_random_uniform", "_random_normal"}) {
      CAPTURE(op);
      CAPTURE(shape);
      CHECK(Contains(CallError(op, {}, {{"shape", shape}}), "needs"));
    }
    CHECK(Contains(CallError("_full", {}, {{"shape", shape}, {"value", "3"}}), "needs"));
    CHECK(
        Contains(CallError("_random_randint", {}, {{"shape", shape}, {"low", "0"}, {"high", "5"}}),
                 "needs"));
  }
  CHECK(CallError("_zeros", {}, {{"shape", "(2147483648,2147483648)"}}) ==
        "_zeros: shape (2147483648,2147483648) float32 needs 16 EiB, more than the 128 TiB one "
        "array may hold");
  CHECK(Contains(CallError("_eye", {}, {{"N", "4294967296"}}), "needs 64 EiB"));
  CHECK(Contains(CallError("_eye", {}, {{"N", "9223372036854775807"}, {"M", "2"}}), "needs"));
  CHECK(Contains(CallError("_zeros", {}, {{"shape", "(2,-3)"}}), "expected Shape(tuple)"));
}

TEST_CASE("ops whose output sizes multiply or add: no wrapped shape") {
  NDArray a = Ones(Shape{4, 4});
  CHECK(Contains(CallError("tile", {a}, {{"reps", "(4294967296,4294967296)"}}), "needs"));
  CHECK(Contains(CallError("tile", {a}, {{"reps", "(4611686018427387904,4611686018427387904)"}}),
                 "does not fit in 64 bits"));
  // 65536 elements repeated 2^31 - 1 times: more than 128 TiB.
  NDArray b = Ones(Shape{256, 256});
  CHECK(Contains(CallError("repeat", {b}, {{"repeats", "2147483647"}, {"axis", "0"}}),
                 "needs 512 TiB"));
  CHECK(Contains(CallError("repeat", {b}, {{"repeats", "2147483647"}}), "needs 512 TiB"));
  CHECK(Contains(
      CallError("broadcast_to", {Ones(Shape{1, 1})}, {{"shape", "(4294967296,4294967296)"}}),
      "needs"));
  CHECK(Contains(CallError("one_hot", {b}, {{"depth", "2147483647"}}), "needs 512 TiB"));
  CHECK(
      Contains(CallError("UpSampling", {Ones(Shape{1, 1, 2, 2})},
                         {{"scale", "2147483647"}, {"sample_type", "nearest"}, {"num_args", "1"}}),
               "needs"));
  // Reshape codes: the product of two merged axes, a split, the size of -1.
  CHECK(Contains(ErrorOf([] {
                   InferReshape(Shape{k32, k32}, {-3}, false);
                 }),
                 "does not fit in 64 bits"));
  CHECK(Contains(ErrorOf([] {
                   InferReshape(Shape{4}, {-4, k32, k32}, false);
                 }),
                 "do not multiply to 4"));
  CHECK(Contains(ErrorOf([] {
                   InferReshape(Shape{4}, {k32, k32, -1}, false);
                 }),
                 "more elements than 64 bits count"));
  CHECK(Contains(CallError("Reshape", {a}, {{"shape", "(4294967296,4294967296,0)"}}),
                 "cannot reshape"));
}

TEST_CASE("concat adds sizes without wrapping, in graph inference too") {
  // Shapes a graph may hold (never arrays): the sum along the axis overflows.
  const op::ParamDict huge{{"__shape__", "(9223372036854775807,1)"}};
  graph::Symbol x = graph::Symbol::Variable("x", huge), y = graph::Symbol::Variable("y", huge);
  graph::Symbol c =
      graph::Symbol::Create(op::Op::Get("Concat"), {{"num_args", "2"}, {"dim", "0"}}, {x, y}, {});
  graph::IndexedGraph g(c.outputs);
  std::vector<Shape> shapes(g.num_entries());
  CHECK(Contains(ErrorOf([&] { graph::InferShapes(g, &shapes); }), "does not fit in 64 bits"));
}

TEST_CASE("simple_bind: arguments and planned entries are sized before allocation") {
  graph::Symbol x = graph::Symbol::Variable("x");
  graph::Symbol r = graph::Symbol::Create(op::Op::Get("relu"), {}, {x}, {}, "r");
  CHECK(Contains(ErrorOf([&] {
                   graph::Executor::SimpleBind(r, Context::CPU(), {{"x", Shape{k32, k32}}});
                 }),
                 "needs 64 EiB"));
  // The argument fits, an inner entry (tile's output) does not.
  graph::Symbol t = graph::Symbol::Create(op::Op::Get("tile"),
                                          {{"reps", "(2147483648,2147483648)"}}, {x}, {}, "t");
  const std::string e = ErrorOf([&] {
    graph::Executor::SimpleBind(t, Context::CPU(), {{"x", Shape{2, 2}}});
  });
  CHECK(Contains(e, "bind: node 't' output 0: shape (4294967296,4294967296) float32 needs"));
}
