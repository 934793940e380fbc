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
#include "tests/cpp/op_call_gen.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::test;

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
