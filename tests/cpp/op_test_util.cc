#include "tests/cpp/op_test_util.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "engine/op/op_attr_types.h"

namespace tessera::test {

NDArray Array(const Shape& shape, const std::vector<double>& values, DType dtype, Context ctx) {
  NDArray f64(shape, Context::CPU(), DType::kFloat64);
  f64.SyncCopyFromCPU(values.data(), values.size());
  NDArray out = dtype == DType::kFloat64 ? f64 : f64.AsType(dtype);
  return ctx == Context::CPU() ? out : out.CopyTo(ctx);
}

std::vector<double> Iota(int64_t n, double start) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + double(i);
  return v;
}

NDArray IotaArray(const Shape& shape, DType dtype, double start) {
  return Array(shape, Iota(shape.Size(), start), dtype);
}

NDArray RandomArray(const Shape& shape, double lo, double hi, DType dtype, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape.Size()));
  for (double& x : v) x = dist(gen);
  return Array(shape, v, dtype);
}

NDArray Run(std::string_view op, const std::vector<NDArray>& inputs, op::ParamDict params,
            size_t index) {
  return Invoke(op, inputs, std::move(params)).at(index);
}

bool CheckClose(const std::vector<double>& a, const std::vector<double>& expected, double rtol,
                double atol) {
  if (a.size() != expected.size()) {
    FAIL_CHECK("size " << a.size() << " != expected " << expected.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = expected[i];
    const bool both_nan = std::isnan(a[i]) && std::isnan(e);
    const bool same_inf = std::isinf(a[i]) && a[i] == e;
    if (!both_nan && !same_inf && !(std::fabs(a[i] - e) <= atol + rtol * std::fabs(e))) {
      FAIL_CHECK("element " << i << ": got " << a[i] << ", expected " << e);
      return false;
    }
  }
  return true;
}

bool CheckClose(const NDArray& a, const std::vector<double>& expected, double rtol, double atol) {
  return CheckClose(a.ToVector(), expected, rtol, atol);
}

std::vector<NDArray> EvalEntries(const std::vector<op::NodeEntry>& entries,
                                 const std::vector<std::pair<op::NodePtr, NDArray>>& bindings) {
  std::map<const op::Node*, std::vector<NDArray>> memo;
  for (const auto& [node, arr] : bindings) memo[node.get()] = {arr};
  std::function<const std::vector<NDArray>&(const op::NodePtr&)> eval =
      [&](const op::NodePtr& n) -> const std::vector<NDArray>& {
    auto it = memo.find(n.get());
    if (it != memo.end()) return it->second;
    TS_CHECK(!n->is_variable()) << "unbound variable " << n->attrs.name;
    std::vector<NDArray> in;
    for (const op::NodeEntry& e : n->inputs) in.push_back(eval(e.node).at(e.index));
    std::vector<NDArray> out;
    Invoke(std::make_shared<op::NodeAttrs>(n->attrs), in, &out);
    return memo[n.get()] = std::move(out);
  };
  std::vector<NDArray> result;
  for (const op::NodeEntry& e : entries) result.push_back(eval(e.node).at(e.index));
  return result;
}

namespace {

double Loss(const std::vector<NDArray>& outs, const std::vector<std::vector<double>>& w) {
  double l = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::vector<double> v = outs[k].ToVector();
    for (size_t i = 0; i < v.size(); ++i) l += v[i] * w[k][i];
  }
  return l;
}

}  // namespace

bool CheckNumericGradient(std::string_view op_name, const op::ParamDict& params,
                          const std::vector<NDArray>& inputs, const GradCheckOptions& opt) {
  auto attrs = MakeAttrs(op_name, params);
  const op::Op* op = attrs->op;
  const auto& fgrad = op::Op::GetAttr<op::FGradient>("FGradient");
  REQUIRE_MESSAGE(fgrad.contains(op), op_name << " has no FGradient");

  std::vector<NDArray> outs;
  Invoke(attrs, inputs, &outs);
  const uint32_t n_visible = op::Op::GetAttr<op::FNumVisibleOutputs>("FNumVisibleOutputs")
                                 .get(op, [&](const op::NodeAttrs&) {
                                   return static_cast<uint32_t>(outs.size());
                                 })(*attrs);
  outs.resize(n_visible);
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<std::vector<double>> w(outs.size());
  std::vector<NDArray> w_arrays;
  for (size_t k = 0; k < outs.size(); ++k) {
    w[k].resize(static_cast<size_t>(outs[k].Size()));
    for (double& x : w[k]) x = dist(gen);
    w_arrays.push_back(Array(outs[k].shape(), w[k], outs[k].dtype()));
  }

  // The forward node and its gradient nodes, as the graph code builds them.
  op::NodePtr fwd = op::Node::Create();
  fwd->attrs = *attrs;
  fwd->attrs.name = std::string(op_name) + "0";
  std::vector<std::pair<op::NodePtr, NDArray>> bindings;
  for (size_t i = 0; i < inputs.size(); ++i) {
    op::NodePtr v = op::Node::Variable("in" + std::to_string(i));
    fwd->inputs.push_back({v, 0, 0});
    bindings.emplace_back(v, inputs[i]);
  }
  std::vector<op::NodeEntry> ograds;
  for (size_t k = 0; k < outs.size(); ++k) {
    op::NodePtr v = op::Node::Variable("ograd" + std::to_string(k));
    ograds.push_back({v, 0, 0});
    bindings.emplace_back(v, w_arrays[k]);
  }
  const uint32_t n_out = op->NumOutputs(*attrs);
  for (uint32_t k = static_cast<uint32_t>(outs.size()); k < n_out; ++k) {
    // Invisible outputs get a zero head gradient.
    op::NodePtr v = op::Node::Variable("ograd_hidden" + std::to_string(k));
    std::vector<NDArray> all;
    Invoke(attrs, inputs, &all);
    ograds.push_back({v, 0, 0});
    bindings.emplace_back(v, Run("zeros_like", {all[k]}));
  }
  const std::vector<op::NodeEntry> grad_entries = fgrad[op](fwd, ograds);
  REQUIRE(grad_entries.size() == inputs.size());
  const std::vector<NDArray> grads = EvalEntries(grad_entries, bindings);

  bool ok = true;
  for (size_t j = 0; j < inputs.size(); ++j) {
    if (!opt.check_inputs.empty() && !opt.check_inputs[j]) continue;
    std::vector<double> x = inputs[j].ToVector();
    std::vector<double> numeric(x.size());
    for (size_t e = 0; e < x.size(); ++e) {
      auto loss_at = [&](double value) {
        std::vector<double> xv = x;
        xv[e] = value;
        std::vector<NDArray> in = inputs;
        in[j] = Array(inputs[j].shape(), xv, inputs[j].dtype());
        std::vector<NDArray> o;
        Invoke(attrs, in, &o);
        o.resize(outs.size());
        return Loss(o, w);
      };
      numeric[e] = (loss_at(x[e] + opt.eps) - loss_at(x[e] - opt.eps)) / (2 * opt.eps);
    }
    INFO(op_name << ": gradient of input " << j);
    ok = CheckClose(grads[j], numeric, opt.rtol, opt.atol) && ok;
  }
  return ok;
}

}  // namespace tessera::test
