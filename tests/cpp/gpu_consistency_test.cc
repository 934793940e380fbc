// The CPU/GPU consistency sweep: every op with a kernel on the compared
// context is called with random parameters and inputs (the op fuzzer's
// generator, tests/cpp/op_call_gen.h, with ordinary values); each call the
// CPU accepts is made again on that context with copies of the inputs and
// must give the same outputs, and leave its inputs the same (ops may write
// them), within a tolerance set by the dtype. An error on the GPU for a call
// the CPU accepted is a failure too. Ops that draw random numbers are left
// out: their streams differ by device.
//
//   TESSERA_CONSISTENCY_CTX=gpu(0)  the context compared with cpu(0) (the
//                                   default; without a GPU the sweep skips);
//                                   cpu(1) sweeps every op without a GPU,
//                                   which tests the sweep itself
//   TESSERA_CONSISTENCY_SEED=n      the seed (default 7)
//   TESSERA_CONSISTENCY_CALLS=n     calls tried per op (default 60)
//   TESSERA_CONSISTENCY_OPS=a,b     only these ops
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/error.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"
#include "engine/resource/resource.h"
#include "tests/cpp/op_call_gen.h"

using namespace tessera;
using namespace tessera::test;

namespace {

// Comparisons made per op before moving on: enough to reach its branches.
constexpr int kComparisonsPerOp = 12;

bool HasKernelOn(const op::Op* op, DeviceType dev) {
  static const auto& fcpu = op::Op::GetAttr<op::FCompute>(op::kFComputeCPU);
  static const auto& fgpu = op::Op::GetAttr<op::FCompute>(op::kFComputeGPU);
  static const auto& scpu = op::Op::GetAttr<op::FStatefulCompute>(op::kFStatefulComputeCPU);
  static const auto& sgpu = op::Op::GetAttr<op::FStatefulCompute>(op::kFStatefulComputeGPU);
  if (dev == DeviceType::kGPU) return fgpu.find(op) || sgpu.find(op);
  return fcpu.find(op) || scpu.find(op);
}

bool DrawsRandomNumbers(const op::NodeAttrs& attrs) {
  static const auto& fres = op::Op::GetAttr<op::FResourceRequest>("FResourceRequest");
  const op::FResourceRequest* f = fres.find(attrs.op);
  if (!f) return false;
  for (const resource::ResourceRequest& r : (*f)(attrs))
    if (r.type == resource::ResourceRequest::kRandom) return true;
  return false;
}

// Outputs past these are hidden (a max pooling's workspace, say): their
// layout is each device's own, so they are not compared.
size_t VisibleOutputs(const op::NodeAttrs& attrs, size_t n) {
  static const auto& fvis = op::Op::GetAttr<op::FNumVisibleOutputs>("FNumVisibleOutputs");
  const op::FNumVisibleOutputs* f = fvis.find(attrs.op);
  return f ? std::min<size_t>(n, (*f)(attrs)) : n;
}

// Ops whose outputs have no defined values to compare.
bool Undefined(const op::Op* op) {
  return op->name() == "_empty";
}

// The largest difference allowed between a CPU value `c` and the other
// context's, for an array whose largest magnitude is `scale`: reductions
// sum in another order, so the absolute part grows with the array's values.
double Tolerance(DType t, double c, double scale) {
  switch (t) {
    case DType::kFloat64:
      return 1e-9 * (1 + scale) + 1e-7 * std::fabs(c);
    case DType::kFloat32:
      return 1e-5 * (1 + scale) + 1e-4 * std::fabs(c);
    case DType::kFloat16:
      return 2e-3 * (1 + scale) + 1e-2 * std::fabs(c);
    case DType::kBFloat16:
      return 1.6e-2 * (1 + scale) + 3e-2 * std::fabs(c);
    default:
      return 0;  // integers and booleans: exact
  }
}

// "" when `other` (any context) holds `cpu`'s values, else where and how they differ.
std::string Compare(const NDArray& cpu, const NDArray& other) {
  if (cpu.shape() != other.shape() || cpu.dtype() != other.dtype())
    return "shape or dtype " + cpu.shape().ToString() + " " + DTypeName(cpu.dtype()) + " against " +
           other.shape().ToString() + " " + DTypeName(other.dtype());
  const std::vector<double> a = cpu.ToVector();
  const std::vector<double> b = other.CopyTo(Context::CPU()).ToVector();
  double scale = 0;
  for (double v : a)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = std::isnan(a[i]) ? std::isnan(b[i])
                      : std::isinf(a[i])
                          ? a[i] == b[i]
                          : std::fabs(a[i] - b[i]) <= Tolerance(cpu.dtype(), a[i], scale);
    if (!same) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "element %zu of %zu: %.9g on the CPU, %.9g here", i, a.size(),
                    a[i], b[i]);
      return buf;
    }
  }
  return "";
}

std::vector<const op::Op*> OpsToSweep(DeviceType dev) {
  std::vector<const op::Op*> ops;
  const char* only = std::getenv("TESSERA_CONSISTENCY_OPS");
  const std::string list = only && *only ? "," + std::string(only) + "," : "";
  for (const op::Op* op : op::Op::ListAll()) {
    if (!list.empty() && list.find("," + op->name() + ",") == std::string::npos) continue;
    if (HasKernelOn(op, dev) && HasKernelOn(op, DeviceType::kCPU) && !Undefined(op))
      ops.push_back(op);
  }
  return ops;
}

// A random call of `op` whose parameters parse and whose inputs fit its
// shape inference where it can tell; nullptr attrs when none came out.
struct Call {
  std::shared_ptr<const op::NodeAttrs> attrs;
  op::ParamDict params;
  std::vector<NDArray> inputs;
  bool is_train = false;
};

Call RandomCall(Gen& gen, const op::Op* op) {
  Call c;
  for (const op::FieldInfo& f : op->params())
    if (f.name != "ctx" && gen.Chance(f.required ? 1.0 : 0.4)) c.params[f.name] = gen.Value(f);
  try {
    c.attrs = MakeAttrs(op->name(), c.params);
  } catch (const Error&) {
    return {};
  }
  const uint32_t n_in = op->NumInputs(*c.attrs);
  if (n_in > 8) return {};
  std::vector<Shape> shapes(n_in);
  if (n_in) {
    shapes[0] = gen.AnyShape();
    if (gen.Chance(0.3))
      for (Shape& s : shapes) s = shapes[0];
    else
      GuessShapes(*c.attrs, &shapes);
  }
  const double d = gen.Uniform();
  const DType dtype = d < 0.6   ? DType::kFloat32
                      : d < 0.8 ? DType::kFloat64
                      : d < 0.9 ? DType::kFloat16
                                : gen.AnyDType();
  try {
    for (const Shape& s : shapes)
      c.inputs.push_back(RandomArray(gen, s.known() ? s : gen.AnyShape(), dtype));
  } catch (const Error&) {
    return {};  // a zero dimension
  }
  c.is_train = gen.Chance(0.3);
  return c;
}

// The outputs of `c` with its inputs copied to `ctx`, and the inputs as the
// call left them; throws what the call throws.
std::vector<NDArray> Run(const Call& c, Context ctx, std::vector<NDArray>* inputs_after) {
  std::vector<NDArray> in;
  for (const NDArray& a : c.inputs) in.push_back(a.CopyTo(ctx));
  InvokeOptions opt;
  opt.is_train = c.is_train;
  opt.ctx = ctx;
  std::vector<NDArray> out;
  Invoke(c.attrs, in, &out, opt);
  for (const NDArray& o : out) o.WaitToRead();
  for (const NDArray& a : in) a.WaitToRead();
  *inputs_after = in;
  return out;
}

}  // namespace

TEST_CASE("every op gives on the other context what it gives on the CPU") {
  const char* ctx_text = std::getenv("TESSERA_CONSISTENCY_CTX");
  const Context other = Context::Parse(ctx_text && *ctx_text ? ctx_text : "gpu(0)");
  if (other.dev_type == DeviceType::kGPU && other.dev_id >= NumGPUs()) {
    MESSAGE("skipped: " << other.ToString() << " is not available ("
                        << (BuiltWithCUDA() ? "no GPU" : "this build has no CUDA") << ")");
    return;
  }
  const uint64_t seed = EnvOr("TESSERA_CONSISTENCY_SEED", 7);
  const uint64_t calls = EnvOr("TESSERA_CONSISTENCY_CALLS", 60);
  const std::vector<const op::Op*> ops = OpsToSweep(other.dev_type);
  MESSAGE("consistency: cpu(0) against " << other.ToString() << ", " << ops.size() << " ops, seed "
                                         << seed << ", " << calls << " calls per op");
  Gen gen(seed);
  gen.odd_chance = 0;
  gen.junk_chance = 0;
  std::map<std::string, int> compared;
  std::set<std::string> random_ops;
  for (const op::Op* op : ops) {
    int done = 0;
    for (uint64_t i = 0; i < calls && done < kComparisonsPerOp; ++i) {
      const Call c = RandomCall(gen, op);
      if (!c.attrs) continue;
      if (DrawsRandomNumbers(*c.attrs)) {
        random_ops.insert(op->name());
        break;
      }
      if (OutputBytes(*c.attrs, c.inputs) > (uint64_t{16} << 20)) continue;
      std::vector<NDArray> cpu_in, other_in, cpu_out;
      try {
        cpu_out = Run(c, Context::CPU(), &cpu_in);
      } catch (const Error&) {
        continue;  // the CPU refuses the call: nothing to compare
      }
      const std::string text = Describe(op, c.params, c.inputs, c.is_train);
      std::vector<NDArray> other_out;
      try {
        other_out = Run(c, other, &other_in);
      } catch (const Error& e) {
        FAIL_CHECK(text << " on " << other.ToString() << ": " << std::string(e.what()));
        break;
      }
      std::string diff;
      if (other_out.size() != cpu_out.size()) diff = "a different number of outputs";
      for (size_t k = 0; diff.empty() && k < VisibleOutputs(*c.attrs, cpu_out.size()); ++k)
        if (!(diff = Compare(cpu_out[k], other_out[k])).empty())
          diff = "output " + std::to_string(k) + ": " + diff;
      for (size_t k = 0; diff.empty() && k < cpu_in.size(); ++k)
        if (!(diff = Compare(cpu_in[k], other_in[k])).empty())
          diff = "input " + std::to_string(k) + " as the call left it: " + diff;
      if (!diff.empty()) {
        FAIL_CHECK(text << " on " << other.ToString() << ": " << diff);
        break;
      }
      ++done;
    }
    compared[op->name()] = done;
  }
  std::string never;
  int total = 0;
  for (const auto& [name, n] : compared) {
    total += n;
    if (n == 0 && !random_ops.count(name)) never += " " + name;
  }
  MESSAGE("consistency: " << total << " calls compared over " << compared.size() << " ops; "
                          << random_ops.size() << " ops draw random numbers and were left out");
  if (!never.empty()) MESSAGE("consistency: no call the CPU accepted for:" << never);
  CHECK(total > static_cast<int>(ops.size()));
}
