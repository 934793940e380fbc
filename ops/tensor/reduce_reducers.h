// The reductions as (identity, map, combine, finalize) functors, shared by
// the CPU and GPU drivers. Each names two accumulator types:
//   Inner<T>: what a short contiguous block is reduced in (vectorises);
//   Outer<T>: what block results and long strided reductions accumulate in.
// For sums of float32 the inner blocks (64 elements in 8 float lanes) are
// float and the outer total double. Measured on 16M uniform floats (one
// core): relative error ~5e-11 at the speed of a plain 8-lane float loop
// (within noise), where a single float accumulator gave 7.5e-5 at half the
// speed, 8 double lanes ran ~30% slower and Kahan 4-5x slower. The worst
// case is a constant input, where block rounding errors add up: 7e-8 for
// 2^20 copies of 0.1f, about the float32 result's own rounding (256-element
// blocks gave 3e-7). Long strided reductions (leading axes) accumulate in
// double directly. 16-bit floats accumulate in float, integers in int64.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "engine/base/dtype.h"
#include "engine/base/host_device.h"
#include "engine/base/tblob.h"
#include "ops/tensor/reduce_utils.h"

namespace tessera::op::reduce {

template <typename T>
TS_XINLINE bool IsNaN(T x) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return x != x;  // NOLINT: true only for NaN
  }
}

TS_XINLINE float Sqrt(float x) {
  return ::sqrtf(x);
}
TS_XINLINE double Sqrt(double x) {
  return ::sqrt(x);
}
template <typename A>
TS_XINLINE A Abs(A x) {
  if constexpr (std::is_unsigned_v<A>) {
    return x;
  } else {
    return x < A(0) ? A(-x) : x;
  }
}

// The largest and smallest values of each accumulator type (device-usable,
// unlike std::numeric_limits without relaxed constexpr).
template <typename A>
struct Limits;
template <>
struct Limits<float> {
  static TS_XINLINE float Lowest() { return -INFINITY; }
  static TS_XINLINE float Highest() { return INFINITY; }
};
template <>
struct Limits<double> {
  static TS_XINLINE double Lowest() { return -static_cast<double>(INFINITY); }
  static TS_XINLINE double Highest() { return static_cast<double>(INFINITY); }
};
template <>
struct Limits<bool> {
  static TS_XINLINE bool Lowest() { return false; }
  static TS_XINLINE bool Highest() { return true; }
};
template <>
struct Limits<uint8_t> {
  static TS_XINLINE uint8_t Lowest() { return 0; }
  static TS_XINLINE uint8_t Highest() { return 255; }
};
template <>
struct Limits<int8_t> {
  static TS_XINLINE int8_t Lowest() { return -128; }
  static TS_XINLINE int8_t Highest() { return 127; }
};
template <>
struct Limits<int32_t> {
  static TS_XINLINE int32_t Lowest() { return -2147483647 - 1; }
  static TS_XINLINE int32_t Highest() { return 2147483647; }
};
template <>
struct Limits<int64_t> {
  static TS_XINLINE int64_t Lowest() { return -9223372036854775807LL - 1; }
  static TS_XINLINE int64_t Highest() { return 9223372036854775807LL; }
};

// Accumulators of the sum-like reductions (sum, mean, prod, norms).
template <typename T>
using SumInner = std::conditional_t<std::is_integral_v<T>, int64_t, AccType<T>>;
template <typename T>
using SumOuter = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

// The value of x as accumulator type A (16-bit floats through float).
template <typename A, typename T>
TS_XINLINE A Load(T x) {
  return static_cast<A>(static_cast<AccType<T>>(x));
}

struct SumLike {
  template <typename T>
  using Inner = SumInner<T>;
  template <typename T>
  using Outer = SumOuter<T>;
  template <typename A>
  static TS_XINLINE A Identity() {
    return A(0);
  }
  template <typename A>
  static TS_XINLINE A Combine(A a, A b) {
    return a + b;
  }
  template <typename A>
  static TS_XINLINE A Finalize(A a, int64_t) {
    return a;
  }
};

struct Sum : SumLike {
  template <typename A, typename T>
  static TS_XINLINE A Map(T x) {
    return Load<A>(x);
  }
};

// Integers divide with truncation toward zero (the result keeps the input
// dtype, as in MXNet).
struct Mean : Sum {
  template <typename A>
  static TS_XINLINE A Finalize(A a, int64_t n) {
    return a / static_cast<A>(n);
  }
};

struct NanSum : SumLike {
  template <typename A, typename T>
  static TS_XINLINE A Map(T x) {
    return IsNaN(x) ? A(0) : Load<A>(x);
  }
};

struct Prod : SumLike {
  template <typename A>
  static TS_XINLINE A Identity() {
    return A(1);
  }
  template <typename A>
  static TS_XINLINE A Combine(A a, A b) {
    return a * b;
  }
  template <typename A, typename T>
  static TS_XINLINE A Map(T x) {
    return Load<A>(x);
  }
};

struct NanProd : Prod {
  template <typename A, typename T>
  static TS_XINLINE A Map(T x) {
    return IsNaN(x) ? A(1) : Load<A>(x);
  }
};

struct NormL1 : SumLike {
  template <typename A, typename T>
  static TS_XINLINE A Map(T x) {
    return Abs(Load<A>(x));
  }
};

struct NormL2 : SumLike {
  template <typename A, typename T>
  static TS_XINLINE A Map(T x) {
    const A v = Load<A>(x);
    return v * v;
  }
  template <typename A>
  static TS_XINLINE A Finalize(A a, int64_t) {
    return Sqrt(a);
  }
};

// max/min: NaN propagates as in NumPy (once the accumulator is NaN, nothing
// compares greater and it stays NaN).
struct MinMaxLike {
  template <typename T>
  using Inner = AccType<T>;
  template <typename T>
  using Outer = AccType<T>;
  template <typename A, typename T>
  static TS_XINLINE A Map(T x) {
    return Load<A>(x);
  }
  template <typename A>
  static TS_XINLINE A Finalize(A a, int64_t) {
    return a;
  }
};

struct Max : MinMaxLike {
  template <typename A>
  static TS_XINLINE A Identity() {
    return Limits<A>::Lowest();
  }
  template <typename A>
  static TS_XINLINE A Combine(A a, A b) {
    return (b > a || IsNaN(b)) ? b : a;
  }
};

struct Min : MinMaxLike {
  template <typename A>
  static TS_XINLINE A Identity() {
    return Limits<A>::Highest();
  }
  template <typename A>
  static TS_XINLINE A Combine(A a, A b) {
    return (b < a || IsNaN(b)) ? b : a;
  }
};

// argmax/argmin: whether `v` at a later position replaces `best`: strictly
// better, or the first NaN (NumPy returns the first NaN's index).
struct ArgMax {
  template <typename A>
  static TS_XINLINE bool Better(A v, A best) {
    return v > best || (IsNaN(v) && !IsNaN(best));
  }
};
struct ArgMin {
  template <typename A>
  static TS_XINLINE bool Better(A v, A best) {
    return v < best || (IsNaN(v) && !IsNaN(best));
  }
};

// Writes a reduced value according to a runtime request (one store per
// output, so the branch costs nothing next to the reduction).
template <typename O, typename V>
TS_XINLINE void StoreReq(O& out, V v, OpReqType req) {
  if (req == kAddTo) {
    if constexpr (std::is_same_v<O, bool>) {
      out = out || static_cast<bool>(v);
    } else {
      out = static_cast<O>(static_cast<AccType<O>>(out) + static_cast<AccType<O>>(v));
    }
  } else if (req != kNullOp) {
    out = static_cast<O>(v);
  }
}

// The gradient of prod/nanprod without dividing by x (exact with zeros):
// for each output, exclusive prefix products go to tmp (indexed like x),
// then a backward sweep multiplies in the suffix products. kIgnoreNaN:
// NaN elements count as 1 and get gradient 0 (nanprod).
template <bool kIgnoreNaN, typename T, typename Acc>
TS_XINLINE void ProdGradOne(const ReducePlan& p, int64_t o, const T* x, const T* g, T* gx, Acc* tmp,
                            OpReqType req) {
  const int64_t base = p.OutBase(o);
  Acc run = Acc(1);
  for (int64_t r = 0; r < p.red_size; ++r) {
    const int64_t i = base + p.RedOffset(r);
    tmp[i] = run;
    if (!(kIgnoreNaN && IsNaN(x[i]))) run *= Load<Acc>(x[i]);
  }
  const Acc go = Load<Acc>(g[o]);
  Acc suffix = Acc(1);
  for (int64_t r = p.red_size - 1; r >= 0; --r) {
    const int64_t i = base + p.RedOffset(r);
    const bool skip = kIgnoreNaN && IsNaN(x[i]);
    StoreReq(gx[i], skip ? Acc(0) : go * tmp[i] * suffix, req);
    if (!skip) suffix *= Load<Acc>(x[i]);
  }
}

}  // namespace tessera::op::reduce
