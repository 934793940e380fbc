// Random operator calls for the tests that sweep the registry: a generator
// of parameter values, shapes, dtypes and array contents, and helpers that
// read an op's shape inference to make its inputs fit. Used by the op
// fuzzer (tests/cpp/op_fuzz_test.cc, which wants odd values) and the
// CPU/GPU consistency sweep (tests/cpp/gpu_consistency_test.cc, which wants
// ordinary ones).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/base/array_bytes.h"
#include "engine/base/error.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"

namespace tessera::test {

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
  // The share of parameter values that are ill-typed text.
  double junk_chance = 0.08;

  std::string Value(const op::FieldInfo& f) {
    if (Chance(junk_chance)) return Junk();
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

  // The share of array elements drawn from NaN, infinities and extremes.
  double odd_chance = 0.03;

  double Element(DType t) {
    if (Chance(odd_chance)) {
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
inline NDArray RandomArray(Gen& gen, const Shape& shape, DType dtype) {
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

inline std::string Describe(const op::Op* op, const op::ParamDict& params,
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
inline void GuessShapes(const op::NodeAttrs& attrs, std::vector<Shape>* shapes) {
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
inline uint64_t OutputBytes(const op::NodeAttrs& attrs, const std::vector<NDArray>& inputs) {
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

// The unsigned integer in environment variable `name`, else `fallback`.
inline uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace tessera::test
