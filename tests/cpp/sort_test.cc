// Sorting operators: sort, argsort, topk. Stable order, NaN placement,
// dtypes, every ret_typ, requests, numeric gradients and errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/ndarray/imperative.h"
#include "engine/resource/resource.h"
#include "ops/tensor/merge_sort-inl.h"
#include "ops/tensor/sort_bitonic-inl.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

const DType kNumericTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                               DType::kUint8,   DType::kInt8,    DType::kInt32,   DType::kInt64};

std::string ErrorOfRun(std::string_view op, const std::vector<NDArray>& in, op::ParamDict p) {
  return ErrorOf([&] { Run(op, in, std::move(p)).WaitToRead(); });
}

}  // namespace

TEST_CASE("sort orders each row, stably") {
  NDArray x = Array({2, 3}, {3, 1, 2, 1, 1, 0});
  CheckClose(Run("sort", {x}), {1, 2, 3, 0, 1, 1});
  CheckClose(Run("sort", {x}, {{"is_ascend", "False"}}), {3, 2, 1, 1, 1, 0});
  CheckClose(Run("sort", {x}, {{"axis", "0"}}), {1, 1, 0, 3, 1, 2});
  NDArray flat = Run("sort", {x}, {{"axis", "None"}});
  CHECK(flat.shape() == Shape{6});
  CheckClose(flat, {0, 1, 1, 1, 2, 3});
  for (DType t : kNumericTypes)
    CheckClose(Run("sort", {Array({4}, {3, 0, 2, 1}, t)}), {0, 1, 2, 3});
  // NaN sorts last ascending, first descending.
  const double nan = std::nan("");
  CheckClose(Run("sort", {Array({4}, {2, nan, -1, 5})}), {-1, 2, 5, nan});
  CheckClose(Run("sort", {Array({4}, {2, nan, -1, 5})}, {{"is_ascend", "0"}}), {nan, 5, 2, -1});
  CHECK(Contains(ErrorOfRun("sort", {Array({2}, {1, 0}, DType::kBool)}, {}),
                 "sort: cannot sort bool data"));
  CHECK(Contains(ErrorOfRun("sort", {x}, {{"axis", "2"}}), "sort"));
  CHECK(CheckNumericGradient("sort", {}, {RandomArray({3, 4}, -1, 1)}));
  CHECK(CheckNumericGradient("sort", {{"axis", "0"}, {"is_ascend", "0"}},
                             {RandomArray({3, 2}, -1, 1, DType::kFloat64, 5)}));
}

TEST_CASE("argsort gives stable positions in the chosen dtype") {
  NDArray x = Array({2, 3}, {3, 1, 2, 1, 1, 0});
  NDArray a = Run("argsort", {x});
  CHECK(a.dtype() == DType::kFloat32);
  CheckClose(a, {1, 2, 0, 2, 0, 1});
  CheckClose(Run("argsort", {x}, {{"is_ascend", "False"}}), {0, 2, 1, 0, 1, 2});
  NDArray i = Run("argsort", {x}, {{"axis", "0"}, {"dtype", "int32"}});
  CHECK(i.dtype() == DType::kInt32);
  CheckClose(i, {1, 0, 1, 0, 1, 0});
  CheckClose(Run("argsort", {x}, {{"axis", "None"}, {"dtype", "int64"}}), {5, 1, 3, 4, 2, 0});
  CHECK(Contains(ErrorOfRun("argsort", {x}, {{"dtype", "bool"}}),
                 "argsort: indices cannot be stored as bool"));
}

TEST_CASE("topk returns values, indices, masks or both") {
  NDArray x = Array({2, 3}, {3, 1, 2, 4, 6, 5});
  CheckClose(Run("topk", {x}, {{"k", "2"}}), {0, 2, 1, 2});
  CheckClose(Run("topk", {x}, {{"k", "2"}, {"ret_typ", "value"}}), {3, 2, 6, 5});
  CheckClose(Run("topk", {x}, {{"k", "1"}, {"ret_typ", "value"}, {"is_ascend", "1"}}), {1, 4});
  NDArray mask = Run("topk", {x}, {{"k", "2"}, {"ret_typ", "mask"}});
  CHECK(mask.shape() == Shape{2, 3});
  CheckClose(mask, {1, 0, 1, 0, 1, 1});
  std::vector<NDArray> both =
      Invoke("topk", {x}, {{"k", "2"}, {"ret_typ", "both"}, {"axis", "0"}, {"dtype", "int32"}});
  REQUIRE(both.size() == 2);
  CHECK(both[1].dtype() == DType::kInt32);
  CheckClose(both[0], {4, 6, 5, 3, 1, 2});
  CheckClose(both[1], {1, 1, 1, 0, 0, 0});
  CheckClose(Run("topk", {x}, {{"k", "0"}, {"ret_typ", "value"}, {"axis", "None"}}),
             {6, 5, 4, 3, 2, 1});
  // Ties keep their order.
  CheckClose(Run("topk", {Array({4}, {1, 2, 2, 2})}, {{"k", "2"}}), {1, 2});
  for (DType t : kNumericTypes)
    CheckClose(Run("topk", {Array({3}, {1, 3, 2}, t)}, {{"k", "2"}, {"ret_typ", "value"}}), {3, 2});

  // Add into an output.
  std::vector<NDArray> outs{Array({2, 2}, {10, 10, 10, 10})};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("topk", {{"k", "2"}}), {x}, &outs, add);
  CheckClose(outs[0], {10, 12, 11, 12});

  CHECK(Contains(ErrorOfRun("topk", {x}, {{"k", "4"}}),
                 "topk: k = 4 is larger than the 3 elements along the axis of shape (2,3)"));
  CHECK(Contains(ErrorOfRun("topk", {x}, {{"ret_typ", "values"}}),
                 "topk: parameter 'ret_typ' got 'values'"));
  CHECK(CheckNumericGradient("topk", {{"k", "2"}, {"ret_typ", "value"}},
                             {RandomArray({3, 4}, -1, 1)}));
  CHECK(CheckNumericGradient("topk", {{"k", "2"}, {"ret_typ", "both"}, {"axis", "0"}},
                             {RandomArray({3, 2}, -1, 1, DType::kFloat64, 3)}));
}

// The GPU sorts by a bitonic network of element kernels (sort_bitonic-inl.h);
// run here through the CPU launcher on the op's own outputs, it must give
// exactly what the CPU's stable sort gives: ties in their order, NaN last
// (first when descending), every axis split, k, ret_typ, dtype and request.
TEST_CASE("the GPU's bitonic sort gives the CPU's stable order on every kind of call") {
  struct Case {
    Shape shape;
    op::ParamDict params;
    const char* op;
  };
  const std::vector<Case> cases = {
      {{3, 7}, {}, "sort"},
      {{3, 7}, {{"is_ascend", "False"}}, "sort"},
      {{4, 5, 3}, {{"axis", "1"}}, "sort"},
      {{4, 5, 3}, {{"axis", "0"}, {"is_ascend", "False"}}, "sort"},
      {{2, 9, 2}, {{"axis", "None"}}, "sort"},
      {{3, 16}, {{"dtype", "int32"}}, "argsort"},
      {{5, 6, 2}, {{"axis", "1"}, {"is_ascend", "False"}}, "argsort"},
      {{4, 11}, {{"k", "3"}}, "topk"},
      {{4, 11}, {{"k", "4"}, {"ret_typ", "value"}, {"is_ascend", "True"}}, "topk"},
      {{3, 6, 4}, {{"k", "2"}, {"ret_typ", "both"}, {"axis", "1"}}, "topk"},
      {{3, 6, 4}, {{"k", "5"}, {"ret_typ", "mask"}, {"axis", "-2"}}, "topk"},
      {{2, 33}, {{"k", "0"}, {"ret_typ", "both"}, {"dtype", "int64"}}, "topk"},
  };
  std::mt19937 rng(3);
  for (const Case& c : cases)
    for (DType t : {DType::kFloat32, DType::kFloat16, DType::kInt32, DType::kUint8}) {
      CAPTURE(c.op);
      CAPTURE(c.shape);
      CAPTURE(t);
      // Few distinct values, so rows are full of ties; NaNs in float data.
      std::vector<double> v(size_t(c.shape.Size()));
      for (double& e : v) e = double(std::uniform_int_distribution<int>(0, 4)(rng));
      const bool is_float = t == DType::kFloat32 || t == DType::kFloat16;
      if (is_float)
        for (size_t i = 0; i < v.size(); i += 5) v[i] = std::nan("");
      NDArray x = Array(c.shape, v, t);
      auto attrs = MakeAttrs(c.op, c.params);
      std::vector<NDArray> want;
      Invoke(attrs, {x}, &want);
      std::vector<NDArray> got;
      for (const NDArray& w : want) got.emplace_back(w.shape(), w.ctx(), w.dtype());
      x.WaitToRead();
      for (const NDArray& w : want) w.WaitToRead();
      const op::Resource temp = resource::ResourceManager::Get()->Request(
          Context::CPU(), resource::ResourceRequest::kTempSpace);
      const op::OpContext ctx{false, RunContext{Context::CPU(), nullptr, 1}, {temp}, nullptr};
      const op::SortSpec s = op::SortSpecOf(*attrs);
      std::vector<TBlob> out;
      std::vector<OpReqType> req(got.size(), kWriteTo);
      for (const NDArray& g : got) out.push_back(g.data());
      op::SwitchSortTypes(*attrs, t, s, [&](auto tag, auto itag) {
        using T = typename decltype(tag)::type;
        using I = typename decltype(itag)::type;
        op::BitonicSortRows<op::cpu, T, I>(ctx, op::SortRowsOf(*attrs, s, x.shape()), s,
                                           x.data().template dptr<T>(),
                                           op::SortOutputsOf<T, I>(s, req, out), out[0]);
      });
      for (size_t i = 0; i < want.size(); ++i) {
        const std::vector<double> a = got[i].ToVector(), b = want[i].ToVector();
        REQUIRE(a.size() == b.size());
        for (size_t j = 0; j < a.size(); ++j)
          CHECK(((std::isnan(a[j]) && std::isnan(b[j])) || a[j] == b[j]));
      }
    }
}

namespace {
// Orders indices by descending key, as the detection ops sort scores.
struct KeyAbove {
  const double* key;
  bool operator()(int64_t a, int64_t b) const { return key[a] > key[b]; }
};
}  // namespace

TEST_CASE("StableSortIndices orders as std::stable_sort, ties included") {
  std::mt19937 gen(11);
  for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 64, 100, 1000, 1025}) {
    for (int distinct : {2, 5, 1000}) {
      std::vector<double> key(static_cast<size_t>(n));
      std::uniform_int_distribution<int> pick(0, distinct);
      for (double& k : key) k = double(pick(gen));
      std::vector<int64_t> want(key.size()), got(key.size()), tmp(key.size());
      std::iota(want.begin(), want.end(), 0);
      std::iota(got.begin(), got.end(), 0);
      const KeyAbove above{key.data()};
      std::stable_sort(want.begin(), want.end(), above);
      op::StableSortIndices(got.data(), tmp.data(), n, above);
      CHECK(got == want);
    }
  }
}
