// What the elementwise families (unary, binary, broadcast, scalar) share:
// the dtype classes an op accepts, type inference that rejects the others at
// the call, gradient-node helpers, and the CPU loop every contiguous
// elementwise kernel runs (OpenMP over threads, SIMD inside, non-temporal
// stores for outputs larger than the caches) with its device twin.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"

#if defined(__SSE2__) && !defined(__CUDACC__)
#include <immintrin.h>
#define TS_ELEMWISE_STREAM_STORES 1
#endif

namespace tessera::op {

// The dtypes an elementwise functor accepts (its static kTypes).
enum ElemwiseTypes : int {
  kFloatTypes,    // float16, bfloat16, float32, float64
  kNumericTypes,  // the float types and the integer types, not bool
  kAllTypes,      // every dtype, bool included
};

inline const char* ElemwiseTypesText(int types) {
  switch (types) {
    case kFloatTypes:
      return "float16, bfloat16, float32, float64";
    case kNumericTypes:
      return "every dtype but bool";
    default:
      return "every dtype";
  }
}

inline bool ElemwiseTypeAllowed(int types, DType t) {
  switch (types) {
    case kFloatTypes:
      return IsFloatingPoint(t);
    case kNumericTypes:
      return t != DType::kBool && t != DType::kUnknown;
    default:
      return t != DType::kUnknown;
  }
}

// SwitchDType restricted to a class; other dtypes raise `what` + the dtype.
template <int types, typename F>
decltype(auto) SwitchElemwiseDType(DType t, F&& fn, const char* what) {
  if constexpr (types == kFloatTypes)
    return SwitchFloatDType(t, std::forward<F>(fn), what);
  else if constexpr (types == kNumericTypes)
    return SwitchNumericDType(t, std::forward<F>(fn), what);
  else
    return SwitchDType(t, std::forward<F>(fn), what);
}

// One dtype for every input and output, and one the op supports: the error
// is raised at the call, naming the op and the dtype.
template <int types>
bool ElemwiseTypeOf(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool known = SameTypeAll(attrs, in, out);
  if (known) {
    const DType t = in->empty() ? (*out)[0] : (*in)[0];
    TS_CHECK(ElemwiseTypeAllowed(types, t))
        << OpLabel(attrs) << ": dtype " << DTypeName(t)
        << " is not supported (supported: " << ElemwiseTypesText(types) << ")";
  }
  return known;
}

// In-place pairs: every input may be overwritten by output 0.
template <int n_in>
std::vector<std::pair<int, int>> InplaceAllInputs(const NodeAttrs&) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < n_in; ++i) pairs.emplace_back(i, 0);
  return pairs;
}

// A gradient node running `op_name` with exactly `dict` (unlike MakeGradNode,
// which passes the forward op's parameters on: _copy or negative take none).
inline NodeEntry MakeGradOpNode(std::string_view op_name, const NodePtr& fwd,
                                std::vector<NodeEntry> inputs, ParamDict dict = {}) {
  NodeEntry e =
      MakeNode(op_name, fwd->attrs.name + "_backward", std::move(inputs), std::move(dict));
  e.node->control_deps.push_back(fwd);
  return e;
}

// The gradient of a one-input op that is another op applied to the output
// gradient alone (identity: _copy, negative: negative).
struct ElemwiseGradApply {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    return {MakeGradOpNode(op_name, n, {ograds[0]})};
  }
};

// --- The CPU loop -----------------------------------------------------------

// Outputs at least this large are written with non-temporal stores: they
// would evict the inputs from the cache and cost a read for ownership of
// every line they write.
inline constexpr int64_t kStreamStoreBytes = int64_t{4} << 20;

namespace detail {

// out[i] (req)= value(i) for i in [b, e), vectorised.
template <int req, typename T, typename F>
TS_XINLINE void MapRangeSimd(T* out, int64_t b, int64_t e, const F& value) {
#ifdef _OPENMP
#pragma omp simd
#endif
  for (int64_t i = b; i < e; ++i) AssignReq<req>(out[i], value(i));
}

#ifdef TS_ELEMWISE_STREAM_STORES
// out[i] = value(i) for i in [b, e), whole cache lines bypassing the cache:
// each line is computed into `line` (registers, in practice), then streamed
// out with 256-bit stores. Built for AVX2 whatever the build's baseline: the
// portable x86-64 build computes with 128-bit SSE, which measurably trails a
// 256-bit loop at streaming bandwidth (tests/bench/elemwise_bench).
template <typename T, typename F>
__attribute__((target("avx2"))) void MapRangeStream(T* out, int64_t b, int64_t e, const F& value) {
  constexpr int64_t kLine = 64 / sizeof(T);
  int64_t i = b;
  while (i < e && (reinterpret_cast<uintptr_t>(out + i) & 63) != 0) {
    out[i] = static_cast<T>(value(i));
    ++i;
  }
  for (; i + kLine <= e; i += kLine) {
    alignas(64) T line[kLine];
#ifdef _OPENMP
#pragma omp simd
#endif
    for (int64_t j = 0; j < kLine; ++j) line[j] = static_cast<T>(value(i + j));
    const __m256i* src = reinterpret_cast<const __m256i*>(line);
    __m256i* dst = reinterpret_cast<__m256i*>(out + i);
    _mm256_stream_si256(dst, _mm256_load_si256(src));
    _mm256_stream_si256(dst + 1, _mm256_load_si256(src + 1));
  }
  for (; i < e; ++i) out[i] = static_cast<T>(value(i));
  _mm_sfence();  // the engine may hand `out` to another thread next
}

// Streaming and the wide loop need AVX2 (every x86-64 CPU since 2013);
// older ones run the portable loop.
inline bool CpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

#ifdef TS_ELEMWISE_STREAM_STORES
// MapRangeSimd built for AVX2: 8 floats per instruction where the portable
// build does 4, which pays off for math-heavy functors (tanh, exp). Only the
// vector width changes: no FMA contraction, so results match bit for bit.
template <int req, typename T, typename F>
__attribute__((target("avx2"))) void MapRangeSimdAvx2(T* out, int64_t b, int64_t e,
                                                      const F& value) {
#ifdef _OPENMP
#pragma omp simd
#endif
  for (int64_t i = b; i < e; ++i) AssignReq<req>(out[i], value(i));
}
#endif

template <int req, typename T, typename F>
void MapRange(T* out, int64_t b, int64_t e, const F& value, bool stream) {
#ifdef TS_ELEMWISE_STREAM_STORES
  if (CpuHasAvx2()) {
    if constexpr (req == kWriteTo) {
      if (stream) return MapRangeStream(out, b, e, value);
    }
    return MapRangeSimdAvx2<req>(out, b, e, value);
  }
#endif
  (void)stream;
  MapRangeSimd<req>(out, b, e, value);
}

}  // namespace detail

// out[i] (req)= value(i) for i in [0, n) on the CPU: `value` is a lambda
// reading the inputs at i (contiguous, so the loop vectorises). Threads get
// contiguous cache-line-aligned ranges, when the loop is long enough to pay
// for them. kWriteInplace is a write: an
// elementwise kernel reads element i before writing it.
template <int req, typename T, typename F>
void CpuMap(const RunContext& rctx, T* out, int64_t n, const F& value) {
  if constexpr (req == kNullOp) return;
  constexpr int r = req == kWriteInplace ? int(kWriteTo) : req;
  const bool stream = n * int64_t(sizeof(T)) >= kStreamStoreBytes;
  // One cost per call site (F) and type: what an element costs decides
  // whether a team pays for itself (engine/op/launch_cost.h).
  static LaunchCost cost;
  const int threads = cost.Threads(rctx, n);
  LaunchTimer timer(cost, n, threads);
  if (threads <= 1) {
    detail::MapRange<r>(out, 0, n, value, stream);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    const int t = OmpThreadIndex(), nt = OmpThreadCount();
    constexpr int64_t kAlign = 64 / sizeof(T) > 0 ? 64 / sizeof(T) : 1;
    const int64_t chunk = ((n + nt - 1) / nt + kAlign - 1) / kAlign * kAlign;
    const int64_t b = std::min<int64_t>(n, t * chunk), e = std::min<int64_t>(n, b + chunk);
    if (b < e) detail::MapRange<r>(out, b, e, value, stream);
  }
}

// The device form of a map CpuMap runs on the CPU: out[i] (req)= V::Value(i,
// in...).
template <typename V, int req>
struct value_map_kernel {
  template <typename T, typename... In>
  TS_XINLINE static void Map(int64_t i, T* out, In... in) {
    AssignReq<req>(out[i], V::Value(i, in...));
  }
};

// out[i] (req)= V::Value(i, in...) for i in [0, n), V a functor that both
// the CPU and the device compile: on the CPU CpuMap's loop, on the device a
// Kernel. kVectorized, for a V that reads only element i of arrays of T:
// the device moves 16 bytes per load and store (Kernel::LaunchVectorized).
template <typename xpu, typename V, bool kVectorized = false, typename T, typename... In>
void SameShapeMap(const RunContext& rctx, OpReqType req, T* out, int64_t n, In... in) {
  SwitchReq(req, [&](auto r) {
    if constexpr (std::is_same_v<xpu, cpu>) {
      CpuMap<r.value>(rctx, out, n, [=](int64_t i) { return V::Value(i, in...); });
    } else if constexpr (kVectorized) {
      Kernel<value_map_kernel<V, r.value>, xpu>::template LaunchVectorized<r.value == kAddTo>(
          rctx, n, out, in...);
    } else {
      Kernel<value_map_kernel<V, r.value>, xpu>::Launch(rctx, n, out, in...);
    }
  });
}

}  // namespace tessera::op
