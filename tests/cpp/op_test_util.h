// Helpers for operator tests: arrays from values, closeness checks, and the
// numeric gradient check every op with a gradient goes through.
#pragma once

#include <string_view>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "engine/op/node.h"

namespace tessera::test {

// An array of `shape` holding `values` (converted to dtype), on ctx.
NDArray Array(const Shape& shape, const std::vector<double>& values, DType dtype = DType::kFloat32,
              Context ctx = Context::CPU());
// An array of `shape` with values uniform in [lo, hi) from a fixed seed.
NDArray RandomArray(const Shape& shape, double lo, double hi, DType dtype = DType::kFloat64,
                    uint64_t seed = 1);
// start, start + 1, ..., n values.
std::vector<double> Iota(int64_t n, double start = 0);
// An array of `shape` holding 0, 1, 2, ... (from `start`).
NDArray IotaArray(const Shape& shape, DType dtype = DType::kFloat32, double start = 0);
// Runs one op and returns output `index`.
NDArray Run(std::string_view op, const std::vector<NDArray>& inputs, op::ParamDict params = {},
            size_t index = 0);

// True (and a doctest failure with the first mismatch otherwise) when every
// element of `a` is within atol + rtol * |expected| of `expected`.
bool CheckClose(const NDArray& a, const std::vector<double>& expected, double rtol = 1e-5,
                double atol = 1e-6);
bool CheckClose(const std::vector<double>& a, const std::vector<double>& expected,
                double rtol = 1e-5, double atol = 1e-6);

// Evaluates graph entries imperatively: variable nodes take their arrays from
// `bindings` (by node), op nodes run through Invoke.
std::vector<NDArray> EvalEntries(const std::vector<op::NodeEntry>& entries,
                                 const std::vector<std::pair<op::NodePtr, NDArray>>& bindings);

struct GradCheckOptions {
  double eps = 1e-4;
  double rtol = 1e-3;
  double atol = 1e-5;
  std::vector<bool> check_inputs;  // empty: every input
};

// Checks the op's FGradient rule against central finite differences of
// L = sum_k sum(out_k * w_k) for random weights w_k, at `inputs` (use float64
// inputs). Builds the backward nodes exactly as the graph code will.
bool CheckNumericGradient(std::string_view op, const op::ParamDict& params,
                          const std::vector<NDArray>& inputs, const GradCheckOptions& opt = {});

}  // namespace tessera::test
