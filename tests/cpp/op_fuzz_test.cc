// A randomized fuzzer over the operator registry: every registered op
// (backward and internal ones too: symbol JSON can name any), called with
// random inputs (counts, shapes, dtypes, values with NaN, infinities and
// out-of-range indices) and random parameters (each declared field given an
// ordinary, extreme or ill-typed value, sometimes an unknown key). It
// asserts only what holds for any call: no signal, no hang, and either a
// result or a tessera::Error. Anything else fails the test naming the seed
// and the call; a signal prints the call from its handler before the
// process dies.
//
//   TESSERA_OP_FUZZ_SEED=n     the seed (default 20; the failing one is printed)
//   TESSERA_OP_FUZZ_CALLS=n    calls to make (default 3000)
//   TESSERA_OP_FUZZ_TRACE=1    print each call before making it (to pair a
//                              memory checker's report with its call)
//   TESSERA_OP_FUZZ_SKIP=a,b   leave these ops out (to look past one known fault)
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "engine/base/array_bytes.h"
#include "engine/base/error.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using test::Contains;

namespace {

// ---- What a signal or the watchdog prints: the call in progress.

char g_current_call[4096];
std::atomic<uint64_t> g_call_started_ms{0};  // 0: no call running

void SetCurrentCall(const std::string& text) {
  const size_t n = std::min(text.size(), sizeof(g_current_call) - 1);
  std::memcpy(g_current_call, text.data(), n);
  g_current_call[n] = '\0';
}

extern "C" void OnFatalSignal(int sig) {
  // Only async-signal-safe calls: write(2) of the prepared text.
  const char head[] = "\nop fuzz: fatal signal during call: ";
  (void)!write(2, head, sizeof(head) - 1);
  (void)!write(2, g_current_call, std::strlen(g_current_call));
  (void)!write(2, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Aborts the process, naming the call, when one call runs longer than this.
constexpr uint64_t kHangMs = 60000;

class Watchdog {
 public:
  Watchdog()
      : thread_([this] {
          while (!stop_) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            const uint64_t t = g_call_started_ms.load();
            if (t && NowMs() - t > kHangMs) {
              std::fprintf(stderr, "\nop fuzz: call hangs (over %llu s): %s\n",
                           static_cast<unsigned long long>(kHangMs / 1000), g_current_call);
              std::abort();
            }
          }
        }) {}
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---- Random values.

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  uint64_t Below(uint64_t n) { return n ? rng_() % n : 0; }
  double Uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  bool Chance(double p) { return Uniform() < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

  // An integer: mostly small, sometimes an extreme of some width.
  std::string Int() {
    static const std::vector<std::string> extremes = {"-1",
                                                      "-2",
                                                      "2147483647",
                                                      "-2147483648",
                                                      "2147483648",
                                                      "4294967296",
                                                      "4611686018427387904",
                                                      "9223372036854775807",
                                                      "-9223372036854775808",
                                                      "18446744073709551616",
                                                      "100000"};
    if (Chance(0.7)) return std::to_string(static_cast<int64_t>(Below(6)));
    return Pick(extremes);
  }
  std::string Float() {
    static const std::vector<std::string> extremes = {"nan",    "inf",    "-inf", "1e308", "-1e308",
                                                      "1e-320", "3.5e38", "-0.0", "1e40",  "0.5"};
    if (Chance(0.7)) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.3g", std::normal_distribution<double>(0, 2)(rng_));
      return buf;
    }
    return Pick(extremes);
  }
  // A tuple of `ints` with 0 to 11 entries (one more than an array may have).
  std::string Tuple(bool negative) {
    const size_t n = Chance(0.8) ? Below(5) : Below(12);
    std::string s = "(";
    for (size_t i = 0; i < n; ++i) {
      std::string v = Chance(0.8) ? std::to_string(Below(5) + (negative ? 0 : 1)) : Int();
      if (!negative && Chance(0.9) && v[0] == '-') v = v.substr(1);
      s += (i ? "," : "") + v;
    }
    return s + (n == 1 ? ",)" : ")");
  }
  std::string Junk() {
    static const std::vector<std::string> junk = {"",     "abc",   "(",    "((1,2)", "1.5.5",
                                                  "None", "[1,2]", "True", "0x10",   "\xff\xfe",
                                                  "1e",   "--1",   "()",   " 3 ",    "(1,,2)"};
    return Pick(junk);
  }

  // A value for a parameter whose declared type is `type` ("int", "float or
  // None", "{'relu', 'tanh'}", "Shape(tuple)", ...).
  std::string Value(const op::FieldInfo& f) {
    if (Chance(0.08)) return Junk();
    const std::string& t = f.type;
    if (t.size() > 8 && t.ends_with(" or None") && Chance(0.2)) return "None";
    if (!f.enum_names.empty()) return Chance(0.9) ? Pick(f.enum_names) : Junk();
    if (t.starts_with("int") || t.starts_with("long")) return Int();
    if (t.starts_with("float") || t.starts_with("double")) return Float();
    if (t.starts_with("boolean")) return Pick(std::vector<std::string>{"True", "False", "1", "0"});
    if (t.starts_with("dtype"))
      return Pick(std::vector<std::string>{"float32", "float64", "float16", "bfloat16", "uint8",
                                           "int8", "int32", "int64", "bool", "unknown"});
    if (t.starts_with("Shape")) return Tuple(false);
    if (t.starts_with("tuple of int")) return Tuple(true);
    if (t.starts_with("tuple of float")) return "(" + Float() + "," + Float() + ")";
    if (f.name == "ctx") return Pick(std::vector<std::string>{"cpu(0)", "cpu(1)", "gpu(0)", "x"});
    return Pick(std::vector<std::string>{"", "x", "data", "cpu(0)", "None", "NCHW", "relu"});
  }

  DType AnyDType() {
    static const std::vector<DType> all = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                           DType::kBFloat16, DType::kUint8,   DType::kInt8,
                                           DType::kInt32,    DType::kInt64,   DType::kBool};
    return Chance(0.6) ? DType::kFloat32 : Pick(all);
  }

  // A shape: mostly a few small dims, sometimes large but not huge (at most
  // kMaxElements elements), sometimes a zero dimension (arrays refuse it).
  static constexpr int64_t kMaxElements = 1 << 16;
  Shape AnyShape() {
    const int ndim = Chance(0.9) ? 1 + static_cast<int>(Below(4)) : 1 + static_cast<int>(Below(6));
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) {
      int64_t d = 1 + static_cast<int64_t>(Below(4));
      if (Chance(0.05)) d = 1 + static_cast<int64_t>(Below(300));
      if (Chance(0.01)) d = 0;
      if (n * std::max<int64_t>(d, 1) > kMaxElements) d = 1;
      n *= std::max<int64_t>(d, 1);
      dims.push_back(d);
    }
    return Shape(dims);
  }

  double Element(DType t) {
    if (Chance(0.03)) {
      static const std::vector<double> odd = {std::numeric_limits<double>::quiet_NaN(),
                                              std::numeric_limits<double>::infinity(),
                                              -std::numeric_limits<double>::infinity(),
                                              1e30,
                                              -1e30,
                                              -1,
                                              1e9};
      return Pick(odd);
    }
    // Integer types hold small values, often usable as indices or labels.
    if (!IsFloatingPoint(t)) return static_cast<double>(Below(6)) - (Chance(0.1) ? 3 : 0);
    return std::normal_distribution<double>(0, 1)(rng_);
  }

 private:
  std::mt19937_64 rng_;
};

// A new array of `shape` and `dtype` holding `gen`'s values (converted as
// C++ casts; NaN and infinities into integer types become 0).
NDArray RandomArray(Gen& gen, const Shape& shape, DType dtype) {
  NDArray a(shape, Context::CPU(), dtype);
  SwitchDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const size_t n = static_cast<size_t>(shape.Size());
    std::unique_ptr<T[]> v(new T[n]);  // not a vector: vector<bool> has no data()
    for (size_t i = 0; i < n; ++i) {
      double d = gen.Element(dtype);
      if constexpr (std::is_integral_v<T>) {
        if (!(d >= -100 && d <= 100)) d = 0;
      }
      v[i] = static_cast<T>(d);
    }
    a.SyncCopyFromCPU(v.get(), n);
  });
  return a;
}

std::string Describe(const op::Op* op, const op::ParamDict& params,
                     const std::vector<NDArray>& inputs, bool is_train) {
  std::string s = op->name() + "(";
  for (size_t i = 0; i < inputs.size(); ++i)
    s += (i ? ", " : "") + std::string(DTypeName(inputs[i].dtype())) + " " +
         inputs[i].shape().ToString();
  s += ") {";
  bool first = true;
  for (const auto& [k, v] : params) {
    s += (first ? "" : ", ") + k + "='" + v + "'";
    first = false;
  }
  return s + "}" + (is_train ? " is_train" : "");
}

// Fills the unknown input shapes the op's shape inference can derive from
// the known ones (a Convolution's weight and bias from its data); leaves the
// rest unknown. Inference may refuse the shapes: then nothing is filled.
void GuessShapes(const op::NodeAttrs& attrs, std::vector<Shape>* shapes) {
  static const auto& fshape = op::Op::GetAttr<op::FInferShape>("FInferShape");
  const op::FInferShape* f = fshape.find(attrs.op);
  if (!f) return;
  std::vector<Shape> in = *shapes, out(attrs.op->NumOutputs(attrs));
  try {
    (*f)(attrs, &in, &out);
  } catch (const Error&) {
    return;
  }
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].known() && !(*shapes)[i].known()) {
      size_t bytes = 0;
      if (FitsArray(in[i], DType::kFloat64, &bytes) && bytes <= (size_t{8} << 20))
        (*shapes)[i] = in[i];
    }
}

// The total bytes the call's outputs would take, from the op's shape and
// dtype inference; 0 when inference fails (the call itself reports that).
// Shape functions may rely on the input count every caller checks first.
uint64_t OutputBytes(const op::NodeAttrs& attrs, const std::vector<NDArray>& inputs) {
  static const auto& fshape = op::Op::GetAttr<op::FInferShape>("FInferShape");
  const op::FInferShape* f = fshape.find(attrs.op);
  if (!f || inputs.size() != attrs.op->NumInputs(attrs)) return 0;
  const uint32_t n_out = attrs.op->NumOutputs(attrs);
  std::vector<Shape> in, out(n_out);
  for (const NDArray& a : inputs) in.push_back(a.shape());
  try {
    if (!(*f)(attrs, &in, &out)) return 0;
  } catch (const Error&) {
    return 0;
  }
  uint64_t total = 0;
  for (const Shape& s : out) {
    size_t bytes = 0;
    if (!FitsArray(s, DType::kFloat64, &bytes)) return UINT64_MAX;
    total += bytes;
  }
  return total;
}

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

TEST_CASE("op fuzz: any call returns or raises a tessera::Error") {
  const uint64_t seed = EnvOr("TESSERA_OP_FUZZ_SEED", 20);
  const uint64_t calls = EnvOr("TESSERA_OP_FUZZ_CALLS", 3000);
  MESSAGE("op fuzz: seed " << seed << ", " << calls << " calls "
                           << "(TESSERA_OP_FUZZ_SEED, TESSERA_OP_FUZZ_CALLS)");
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT}) std::signal(sig, OnFatalSignal);
  Watchdog watchdog;

  std::vector<const op::Op*> ops = op::Op::ListAll();
  REQUIRE(ops.size() > 100);
  const bool trace = EnvOr("TESSERA_OP_FUZZ_TRACE", 0) != 0;
  if (const char* skip = std::getenv("TESSERA_OP_FUZZ_SKIP")) {
    const std::string list = "," + std::string(skip) + ",";
    std::erase_if(ops, [&](const op::Op* op) {
      return list.find("," + op->name() + ",") != std::string::npos;
    });
  }
  Gen gen(seed);
  uint64_t results = 0, errors = 0, skipped = 0;
  std::set<const op::Op*> reached;  // ops that returned a result at least once
  for (uint64_t call = 0; call < calls; ++call) {
    const op::Op* op = gen.Pick(ops);
    op::ParamDict params;
    for (const op::FieldInfo& f : op->params())
      if (gen.Chance(f.required ? 0.9 : 0.4)) params[f.name] = gen.Value(f);
    if (gen.Chance(0.03)) params["no_such_parameter"] = "1";

    // Inputs: usually the count the op takes, all of one shape (so calls
    // get past the shape checks often), else anything.
    std::shared_ptr<const op::NodeAttrs> attrs;
    uint32_t n_in = static_cast<uint32_t>(gen.Below(4));
    try {
      attrs = MakeAttrs(op->name(), params);
      if (gen.Chance(0.85)) n_in = op->NumInputs(*attrs);
    } catch (const Error&) {
    }
    if (!op->key_var_num_args().empty() && gen.Chance(0.5)) {
      n_in = 1 + static_cast<uint32_t>(gen.Below(3));
      params[op->key_var_num_args()] = std::to_string(n_in);
    }
    n_in = std::min<uint32_t>(n_in, 8);
    // Shapes: all one random shape, all different, or (as binding a graph
    // does) the first one random and the others as the op infers them from
    // it, which gets weights and labels right and calls through to kernels.
    const double how = gen.Uniform();
    std::vector<Shape> shapes(n_in);
    for (Shape& sh : shapes) sh = how < 0.5 ? gen.AnyShape() : Shape();
    if (n_in && how >= 0.5) {
      shapes[0] = gen.AnyShape();
      if (how >= 0.8) {
        for (uint32_t i = 1; i < n_in; ++i) shapes[i] = shapes[0];
      } else if (attrs && n_in == attrs->op->NumInputs(*attrs)) {
        GuessShapes(*attrs, &shapes);
      }
    }
    const bool same_dtype = gen.Chance(0.7);
    const DType dtype0 = gen.AnyDType();
    std::vector<NDArray> inputs;
    std::string text;
    try {
      for (uint32_t i = 0; i < n_in; ++i)
        inputs.push_back(RandomArray(gen, shapes[i].known() ? shapes[i] : gen.AnyShape(),
                                     same_dtype ? dtype0 : gen.AnyDType()));
    } catch (const Error&) {
      ++errors;  // a shape with a zero dimension: arrays refuse it
      continue;
    }
    const bool is_train = gen.Chance(0.3);
    text = "seed " + std::to_string(seed) + ", call " + std::to_string(call) + ": " +
           Describe(op, params, inputs, is_train);
    SetCurrentCall(text);
    if (trace) std::fprintf(stderr, "op fuzz: %s\n", text.c_str());

    try {
      attrs = MakeAttrs(op->name(), params);
    } catch (const Error&) {
      ++errors;
      continue;
    } catch (const std::exception& e) {
      FAIL_CHECK(text << ": parsing raised " << typeid(e).name() << ": " << e.what());
      continue;
    }
    // Valid calls too large to run here (one_hot's depth, FullyConnected's
    // num_hidden) are left out: the fuzzer should not eat the machine.
    g_call_started_ms = NowMs();
    if (OutputBytes(*attrs, inputs) > (uint64_t{64} << 20)) {
      ++skipped;
      g_call_started_ms = 0;
      continue;
    }
    try {
      InvokeOptions opt;
      opt.is_train = is_train;
      std::vector<NDArray> out;
      Invoke(attrs, inputs, &out, opt);
      for (const NDArray& o : out) o.WaitToRead();
      for (const NDArray& in : inputs) in.WaitToRead();  // ops may write their inputs
      ++results;
      reached.insert(op);
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      FAIL_CHECK(text << ": raised " << typeid(e).name()
                      << " (not a tessera::Error): " << e.what());
    }
    g_call_started_ms = 0;
  }
  MESSAGE("op fuzz: " << results << " results, " << errors << " errors, " << skipped
                      << " skipped as too large; " << reached.size() << " of " << ops.size()
                      << " ops returned a result");
  if (trace)
    for (const op::Op* op : ops)
      if (!reached.count(op))
        std::fprintf(stderr, "op fuzz: no result from %s\n", op->name().c_str());
  CHECK(results > calls / 20);  // the generator still reaches the kernels
}

// What the fuzzer found, one call each: backward ops (reachable from symbol
// JSON and from Lua) read their output gradient, indices or statistics by
// the shapes the forward op would have given them, and read past the end
// of arrays shaped otherwise; a count from a parameter sized vectors before
// anything checked it.
TEST_CASE("op fuzz findings: inputs a forward op never makes are errors") {
  Gen gen(1);
  auto ones = [&gen](const Shape& s) { return RandomArray(gen, s, DType::kFloat32); };
  auto error = [](const char* op, const std::vector<NDArray>& in, op::ParamDict p = {}) {
    try {
      std::vector<NDArray> out = Invoke(op, in, std::move(p));
      for (const NDArray& o : out) o.WaitToRead();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const NDArray a23 = ones(Shape{2, 3}), a4 = ones(Shape{4}), a5 = ones(Shape{5});
  CHECK(!error("_backward_take", {ones(Shape{7, 3}), a23, a4}).empty());
  CHECK(!error("_backward_pick", {a5, a23, ones(Shape{2})}, {{"axis", "1"}}).empty());
  CHECK(!error("_backward_gather_nd", {a5, a23, ones(Shape{1, 2})}).empty());
  CHECK(!error("_backward_sort", {ones(Shape{4, 4}), ones(Shape{4, 4}), a23}).empty());
  CHECK(!error("_backward_linear_reg_out", {a5, a23}).empty());
  CHECK(!error("_backward_where", {a23, a5}).empty());
  CHECK(!error("_backward_slice_like", {ones(Shape{4, 4, 4}), a23}).empty());
  CHECK(!error("_backward_slice", {a5, a23}, {{"begin", "(0,0)"}, {"end", "(1,1)"}}).empty());
  CHECK(!error("_backward_dot", {a5, a23, ones(Shape{3, 4})}).empty());
  CHECK(!error("_backward_BatchNorm", {a23, a23, a5, a5, a5}).empty());
  CHECK(!error("_backward_LayerNorm", {a23, a23, a5}).empty());
  CHECK(!error("_backward_softmax_cross_entropy", {ones(Shape{1}), a23, a5}).empty());
  CHECK(error("split", {a4}, {{"num_outputs", "2147483647"}}) ==
        "split: these parameters give 1 input and 2147483647 outputs, more than the 65536 an "
        "operator may have");
  CHECK(Contains(error("add_n", {a4}, {{"num_args", "100000"}}), "more than the 65536"));
}
