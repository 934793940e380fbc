// Creation ops: _zeros, _ones, _full, _empty, _arange, _eye, _linspace. They
// take no inputs; the output shape and dtype come from parameters (and, in a
// graph, from whatever is known about the output: `shape` may be partial).
// Shared by the CPU (.cc) and GPU (.cu) registrations.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "ops/tensor/fill_kernel.h"

namespace tessera::op {

// Parses a Params struct, then runs its cross-field checks (P::Check), so a
// bad combination of parameters fails at the call, not inside the kernel.
template <typename P>
void CheckedParamParser(NodeAttrs* attrs) {
  ParamParser<P>(attrs);
  ParamsOf<P>(*attrs).Check(OpLabel(*attrs));
}

// The value a double converts to in element type T: bool is "nonzero",
// integers saturate at their range (NaN gives 0), so no parameter value makes
// the conversion undefined.
template <typename T>
TS_XINLINE T SaturatingCast(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    constexpr int kValueBits = 8 * int(sizeof(T)) - (std::is_signed_v<T> ? 1 : 0);
    constexpr uint64_t kMax = (uint64_t{1} << kValueBits) - 1;
    constexpr double kLimit = double(uint64_t{1} << kValueBits);  // exact: a power of two
    if (!(v == v)) return T(0);
    if (v >= kLimit) return static_cast<T>(kMax);
    if (std::is_signed_v<T> ? v < -kLimit : v < 0) {
      if constexpr (std::is_signed_v<T>) return static_cast<T>(-static_cast<int64_t>(kMax) - 1);
      return T(0);
    }
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<AccType<T>>(v));
  }
}

// ---- Parameters.

// The documented fields of P with the type names of its std::optional fields
// spelled out: ValueTypeName<std::optional<T>>::value is initialised at
// start-up in no fixed order relative to the registrations that copy it, so
// it may still be empty when these ops register.
template <typename P>
std::vector<FieldInfo> DocumentedFields(
    std::initializer_list<std::pair<const char*, const char*>> optional_types) {
  std::vector<FieldInfo> fields = P::Fields();
  for (FieldInfo& f : fields)
    for (const auto& [name, type] : optional_types)
      if (f.name == name) f.type = type;
  return fields;
}

// The fields every creation op has: shape (where it is a parameter), ctx, dtype.
template <typename P>
void DeclareShapeField(ParamDecl<P>& d) {
  d.field("shape", &P::shape)
      .set_default(Shape())
      .describe(
          "Shape of the output. A 0 dimension (or an empty shape) is unknown and is filled "
          "from the graph.");
}
template <typename P>
void DeclareCtxDtypeFields(ParamDecl<P>& d) {
  d.field("ctx", &P::ctx)
      .set_default(std::string())
      .describe("Device of the output, e.g. 'cpu(0)' or 'gpu(1)'; empty: cpu(0).");
  d.field("dtype", &P::dtype).set_default(DType::kFloat32).describe("Element type of the output.");
}

struct InitParam : Params<InitParam> {
  Shape shape;
  std::string ctx;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<InitParam>& d) {
    DeclareShapeField(d);
    DeclareCtxDtypeFields(d);
  }
  void Check(const std::string&) const {}
};

struct FullParam : Params<FullParam> {
  Shape shape;
  std::string ctx;
  DType dtype = DType::kFloat32;
  double value = 0;
  static void Declare(ParamDecl<FullParam>& d) {
    DeclareShapeField(d);
    DeclareCtxDtypeFields(d);
    d.field("value", &FullParam::value).describe("Value of every element.");
  }
  void Check(const std::string&) const {}
};

struct ArangeParam : Params<ArangeParam> {
  double start = 0;
  std::optional<double> stop;
  double step = 1;
  int repeat = 1;
  bool infer_range = false;
  std::string ctx;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<ArangeParam>& d) {
    d.field("start", &ArangeParam::start)
        .describe("Start of the interval (included); the end when `stop` is None.");
    d.field("stop", &ArangeParam::stop)
        .set_default(std::nullopt)
        .describe("End of the interval (excluded). None: the interval is [0, start).");
    d.field("step", &ArangeParam::step).set_default(1.0).describe("Spacing between values.");
    d.field("repeat", &ArangeParam::repeat)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Times each value is repeated: repeat=2 gives 0, 0, 1, 1, ...");
    d.field("infer_range", &ArangeParam::infer_range)
        .set_default(false)
        .describe(
            "When `stop` is None, take the number of values from the output shape (in a "
            "graph) instead of from [0, start).");
    DeclareCtxDtypeFields(d);
  }
  void Check(const std::string& op) const {
    TS_CHECK(step != 0) << op << ": parameter 'step' must not be 0";
    TS_CHECK(std::isfinite(start) && std::isfinite(step) && (!stop || std::isfinite(*stop)))
        << op << ": start, stop and step must be finite";
    if (!StopUnknown()) (void)Count(op);
  }
  // The output length is taken from the graph.
  bool StopUnknown() const { return infer_range && !stop; }
  // Number of distinct values (before repeating); an error when the range is empty.
  int64_t Count(const std::string& op) const {
    const double lo = stop ? start : 0, hi = stop ? *stop : start;
    const double n = std::ceil((hi - lo) / step);
    TS_CHECK(n > 0 && n * repeat < 9.0e15)
        << op << ": invalid range start=" << lo << ", stop=" << hi << ", step=" << step
        << " (it has " << (n > 0 ? "too many" : "no") << " elements)";
    return static_cast<int64_t>(n);
  }
  // With infer_range the values start at `start` and the graph gives the count.
  double First() const { return stop || infer_range ? start : 0; }
};

struct EyeParam : Params<EyeParam> {
  int64_t N = 0, M = 0, k = 0;
  std::string ctx;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<EyeParam>& d) {
    d.field("N", &EyeParam::N).set_lower_bound(1).describe("Number of rows of the output.");
    d.field("M", &EyeParam::M)
        .set_default(0)
        .set_lower_bound(0)
        .describe("Number of columns of the output; 0 means N.");
    d.field("k", &EyeParam::k)
        .set_default(0)
        .describe(
            "Index of the diagonal of ones: 0 the main diagonal, positive above it, negative "
            "below it.");
    DeclareCtxDtypeFields(d);
  }
  void Check(const std::string&) const {}
  int64_t Cols() const { return M > 0 ? M : N; }
};

struct LinspaceParam : Params<LinspaceParam> {
  double start = 0, stop = 0;
  int num = 0;
  bool endpoint = true;
  std::string ctx;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<LinspaceParam>& d) {
    d.field("start", &LinspaceParam::start).describe("First value.");
    d.field("stop", &LinspaceParam::stop)
        .describe("End of the interval: the last value when `endpoint` is true.");
    d.field("num", &LinspaceParam::num).set_lower_bound(1).describe("Number of values.");
    d.field("endpoint", &LinspaceParam::endpoint)
        .set_default(true)
        .describe("Whether `stop` is the last value (else the interval is half-open).");
    DeclareCtxDtypeFields(d);
  }
  void Check(const std::string& op) const {
    TS_CHECK(std::isfinite(start) && std::isfinite(stop))
        << op << ": start and stop must be finite";
  }
  double Step() const {
    const int div = endpoint ? num - 1 : num;
    return div > 0 ? (stop - start) / div : 0.0;
  }
};

// ---- Inference.

// The output takes the `shape` parameter (merged with what the graph knows).
template <typename P>
bool InitShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, ParamsOf<P>(attrs).shape, "output");
  return (*out)[0].known();
}

template <typename P>
bool InitType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  AssignType(attrs, out, 0, ParamsOf<P>(attrs).dtype, "output");
  return true;
}

inline bool ArangeShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  const auto& p = ParamsOf<ArangeParam>(attrs);
  if (p.StopUnknown()) {
    AssignShape(attrs, out, 0, Shape{0}, "output");
  } else {
    AssignShape(attrs, out, 0, Shape{p.Count(OpLabel(attrs)) * p.repeat}, "output");
  }
  return (*out)[0].known();
}

inline bool EyeShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  const auto& p = ParamsOf<EyeParam>(attrs);
  AssignShape(attrs, out, 0, Shape{p.N, p.Cols()}, "output");
  return true;
}

inline bool LinspaceShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape{ParamsOf<LinspaceParam>(attrs).num}, "output");
  return true;
}

// ---- Kernels.

// out[i] = start + (i / repeat) * step, computed in double.
template <int req>
struct init_arange {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, double start, double step, int64_t repeat) {
    AssignReq<req>(out[i], SaturatingCast<T>(start + static_cast<double>(i / repeat) * step));
  }
};

// Ones where column - row == k in a row-major (rows, cols) matrix.
template <int req>
struct init_eye {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, int64_t cols, int64_t k) {
    const int64_t row = i / cols, col = i - row * cols;
    AssignReq<req>(out[i], SaturatingCast<T>(col - row == k ? 1.0 : 0.0));
  }
};

// out[i] = start + i * step; the last value is exactly `last` (NumPy's rule
// for endpoint=True, so rounding never moves the end of the interval).
template <int req>
struct init_linspace {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, int64_t n, double start, double step,
                             bool exact_last, double last) {
    const double v = exact_last && i == n - 1 ? last : start + static_cast<double>(i) * step;
    AssignReq<req>(out[i], SaturatingCast<T>(v));
  }
};

template <typename xpu, int kValue>
void FillConstantCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>&,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<fill_value_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                      SaturatingCast<T>(kValue));
    });
  });
}

template <typename xpu>
void FullCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const double value = ParamsOf<FullParam>(attrs).value;
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<fill_value_kernel<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                      SaturatingCast<T>(value));
    });
  });
}

// Leaves the memory as it is: that is what empty means. (kAddTo adds nothing.)
inline void EmptyCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>&,
                         const std::vector<OpReqType>&, const std::vector<TBlob>&) {}

template <typename xpu>
void ArangeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<ArangeParam>(attrs);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<init_arange<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                p.First(), p.step, int64_t{p.repeat});
    });
  });
}

template <typename xpu>
void EyeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<EyeParam>(attrs);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<init_eye<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), p.Cols(),
                                             p.k);
    });
  });
}

template <typename xpu>
void LinspaceCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<LinspaceParam>(attrs);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<init_linspace<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                                  out[0].Size(), p.start, p.Step(),
                                                  p.endpoint && p.num > 1, p.stop);
    });
  });
}

}  // namespace tessera::op
