// Random ops: _random_uniform, _random_normal, _random_randint and _shuffle.
// Every draw comes from the op's RandomStream (FResourceRequest kRandom), and
// element i of an output depends only on (stream, i): results repeat after
// ResourceManager::SeedRandom whatever the thread count or device, and a
// float16 draw is the float32 draw rounded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/resource/random.h"
#include "engine/resource/random_gpu.h"
#include "engine/resource/random_stream.h"
#include "ops/tensor/init_op-inl.h"

namespace tessera::op {

using resource::PhiloxCounter;
using resource::RandomStream;

// ---- Parameters.

template <typename P>
void DeclareRandomOutputFields(ParamDecl<P>& d, const char* default_dtype) {
  DeclareShapeField(d);
  d.field("ctx", &P::ctx)
      .set_default(std::string())
      .describe("Device of the output, e.g. 'cpu(0)' or 'gpu(1)'; empty: cpu(0).");
  d.field("dtype", &P::dtype)
      .set_default(std::nullopt)
      .describe(std::string("Element type of the output. None: the type the graph expects, else ") +
                default_dtype + ".");
}

struct UniformParam : Params<UniformParam> {
  double low = 0, high = 1;
  Shape shape;
  std::string ctx;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<UniformParam>& d) {
    d.field("low", &UniformParam::low).set_default(0.0).describe("Lower bound (included).");
    d.field("high", &UniformParam::high).set_default(1.0).describe("Upper bound (excluded).");
    DeclareRandomOutputFields(d, "float32");
  }
  void Check(const std::string& op) const {
    TS_CHECK(low <= high) << op << ": low (" << low << ") must not exceed high (" << high << ")";
  }
};

struct NormalParam : Params<NormalParam> {
  double loc = 0, scale = 1;
  Shape shape;
  std::string ctx;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<NormalParam>& d) {
    d.field("loc", &NormalParam::loc).set_default(0.0).describe("Mean of the distribution.");
    d.field("scale", &NormalParam::scale)
        .set_default(1.0)
        .set_lower_bound(0.0)
        .describe("Standard deviation of the distribution.");
    DeclareRandomOutputFields(d, "float32");
  }
  void Check(const std::string&) const {}
};

struct RandIntParam : Params<RandIntParam> {
  int64_t low = 0, high = 0;
  Shape shape;
  std::string ctx;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<RandIntParam>& d) {
    d.field("low", &RandIntParam::low).describe("Smallest value (included).");
    d.field("high", &RandIntParam::high).describe("Bound of the values (excluded).");
    DeclareRandomOutputFields(d, "int32");
  }
  void Check(const std::string& op) const {
    TS_CHECK(low < high) << op << ": low (" << low << ") must be less than high (" << high << ")";
  }
};

// The output dtype: the parameter, else what the graph already knows, else
// `fallback`; `allowed` says which types the op can produce.
template <typename P>
bool RandomType(const NodeAttrs& attrs, std::vector<DType>* out, DType fallback,
                bool (*allowed)(DType), const char* expected) {
  const auto& p = ParamsOf<P>(attrs);
  if (p.dtype) AssignType(attrs, out, 0, *p.dtype, "output");
  if ((*out)[0] == DType::kUnknown) (*out)[0] = fallback;
  TS_CHECK(allowed((*out)[0])) << OpLabel(attrs) << ": dtype " << DTypeName((*out)[0])
                               << " is not supported (expected " << expected << ")";
  return true;
}

template <typename P>
bool FloatRandomType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  return RandomType<P>(attrs, out, DType::kFloat32, IsFloatingPoint, "a floating-point type");
}

inline bool RandIntType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  RandomType<RandIntParam>(
      attrs, out, DType::kInt32, [](DType t) { return t == DType::kInt32 || t == DType::kInt64; },
      "int32 or int64");
  const auto& p = ParamsOf<RandIntParam>(attrs);
  if ((*out)[0] == DType::kInt32) {
    constexpr int64_t kMin = INT32_MIN, kMax = INT32_MAX;
    TS_CHECK(p.low >= kMin && p.high - 1 <= kMax)
        << OpLabel(attrs) << ": [low, high) = [" << p.low << ", " << p.high
        << ") does not fit in int32 (use dtype='int64')";
  }
  return true;
}

// ---- Element generators. A block functor writes the elements one Philox
// block produces: 4 per block for 32-bit draws, 2 for 64-bit ones, in the
// layout of random_stream.h, so it matches resource::FillUniform/FillNormal.

TS_XINLINE uint64_t MulHi64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// 64 random bits for element i of a 64-bit-per-element draw.
TS_XINLINE uint64_t RandomBits64(const PhiloxCounter& r, int pair) {
  return (static_cast<uint64_t>(r.v[2 * pair]) << 32) | r.v[2 * pair + 1];
}

// G: the type the value is generated in (float, or double for float64 outputs).
template <int req, typename G>
struct uniform_block {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, T* out, int64_t n, RandomStream s, G lo, G scale) {
    const PhiloxCounter r = resource::RandomBlock(s, static_cast<uint64_t>(b));
    if constexpr (sizeof(G) == 4) {
      for (int lane = 0; lane < 4; ++lane) {
        const int64_t i = 4 * b + lane;
        if (i < n)
          AssignReq<req>(out[i], resource::MulAdd(resource::UnitFloat(r.v[lane]), scale, lo));
      }
    } else {
      for (int pair = 0; pair < 2; ++pair) {
        const int64_t i = 2 * b + pair;
        const G u = resource::UnitDouble(r.v[2 * pair], r.v[2 * pair + 1]);
        if (i < n) AssignReq<req>(out[i], resource::MulAdd(u, scale, lo));
      }
    }
  }
};

template <int req, typename G>
struct normal_block {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, T* out, int64_t n, RandomStream s, G mean, G stddev) {
    const PhiloxCounter r = resource::RandomBlock(s, static_cast<uint64_t>(b));
    if constexpr (sizeof(G) == 4) {
      float z[4];
      resource::BoxMuller(resource::UnitFloatNonZero(r.v[0]), resource::UnitFloat(r.v[1]), &z[0],
                          &z[1]);
      resource::BoxMuller(resource::UnitFloatNonZero(r.v[2]), resource::UnitFloat(r.v[3]), &z[2],
                          &z[3]);
      for (int lane = 0; lane < 4; ++lane) {
        const int64_t i = 4 * b + lane;
        if (i < n) AssignReq<req>(out[i], resource::MulAdd(z[lane], stddev, mean));
      }
    } else {
      double z[2];
      resource::BoxMuller(resource::UnitDoubleNonZero(r.v[0], r.v[1]),
                          resource::UnitDouble(r.v[2], r.v[3]), &z[0], &z[1]);
      for (int k = 0; k < 2; ++k) {
        const int64_t i = 2 * b + k;
        if (i < n) AssignReq<req>(out[i], resource::MulAdd(z[k], stddev, mean));
      }
    }
  }
};

// low + floor(x * range / 2^64) for 64 random bits x: uniform on [low, high)
// up to a bias below range / 2^64.
template <int req>
struct randint_block {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, T* out, int64_t n, RandomStream s, int64_t low,
                             uint64_t range) {
    const PhiloxCounter r = resource::RandomBlock(s, static_cast<uint64_t>(b));
    for (int pair = 0; pair < 2; ++pair) {
      const int64_t i = 2 * b + pair;
      const uint64_t offset = MulHi64(RandomBits64(r, pair), range);
      // Modular arithmetic in uint64: exact for every [low, high) of int64.
      if (i < n) AssignReq<req>(out[i], static_cast<T>(static_cast<uint64_t>(low) + offset));
    }
  }
};

// Fisher-Yates over the first axis with the stream's 64-bit draws; computed on
// the host for both devices, so CPU and GPU shuffle alike.
inline std::vector<int64_t> ShufflePermutation(const RandomStream& s, int64_t n) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    const PhiloxCounter r = resource::RandomBlock(s, static_cast<uint64_t>(i / 2));
    const auto j = static_cast<int64_t>(MulHi64(RandomBits64(r, int(i % 2)), uint64_t(i) + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

// out row k = in row perm[k], rows of `row` elements.
template <int req>
struct shuffle_gather {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, const int64_t* perm, int64_t row) {
    const int64_t k = i / row, c = i - k * row;
    AssignReq<req>(out[i], in[perm[k] * row + c]);
  }
};

// ---- Fills. The plain write of float32/float64 goes through storage's fills
// (the fastest path); every other dtype and request through the block functors.

inline void FillUniformOn(cpu, const OpContext&, const RandomStream& s, float* out, int64_t n,
                          float lo, float hi) {
  resource::FillUniform(s, out, static_cast<size_t>(n), lo, hi);
}
inline void FillUniformOn(cpu, const OpContext&, const RandomStream& s, double* out, int64_t n,
                          double lo, double hi) {
  resource::FillUniform(s, out, static_cast<size_t>(n), lo, hi);
}
inline void FillNormalOn(cpu, const OpContext&, const RandomStream& s, float* out, int64_t n,
                         float mean, float stddev) {
  resource::FillNormal(s, out, static_cast<size_t>(n), mean, stddev);
}
inline void FillNormalOn(cpu, const OpContext&, const RandomStream& s, double* out, int64_t n,
                         double mean, double stddev) {
  resource::FillNormal(s, out, static_cast<size_t>(n), mean, stddev);
}
#ifdef __CUDACC__
inline void FillUniformOn(gpu, const OpContext& ctx, const RandomStream& s, float* out, int64_t n,
                          float lo, float hi) {
  resource::FillUniformGpu(s, out, static_cast<size_t>(n), lo, hi, ctx.run_ctx.stream);
}
inline void FillUniformOn(gpu, const OpContext& ctx, const RandomStream& s, double* out, int64_t n,
                          double lo, double hi) {
  resource::FillUniformGpu(s, out, static_cast<size_t>(n), lo, hi, ctx.run_ctx.stream);
}
inline void FillNormalOn(gpu, const OpContext& ctx, const RandomStream& s, float* out, int64_t n,
                         float mean, float stddev) {
  resource::FillNormalGpu(s, out, static_cast<size_t>(n), mean, stddev, ctx.run_ctx.stream);
}
inline void FillNormalOn(gpu, const OpContext& ctx, const RandomStream& s, double* out, int64_t n,
                         double mean, double stddev) {
  resource::FillNormalGpu(s, out, static_cast<size_t>(n), mean, stddev, ctx.run_ctx.stream);
}
#endif

// Uniform (kNormal = false) or normal draws with parameters (a, b): (low,
// high) or (mean, stddev).
template <typename xpu, bool kNormal>
void RandomRealCompute(const OpContext& ctx, double a, double b, OpReqType req, const TBlob& out) {
  if (req == kNullOp) return;
  const RandomStream s = ctx.requested.at(0).get_random();
  const int64_t n = out.Size();
  SwitchFloatDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using G = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const G ga = static_cast<G>(a), gb = static_cast<G>(b);
    if constexpr (std::is_same_v<T, G>) {
      if (req != kAddTo) {
        if constexpr (kNormal)
          FillNormalOn(xpu(), ctx, s, out.dptr<T>(), n, ga, gb);
        else
          FillUniformOn(xpu(), ctx, s, out.dptr<T>(), n, ga, gb);
        return;
      }
    }
    const int64_t blocks =
        static_cast<int64_t>(resource::NumRandomBlocks(n, sizeof(G) == 4 ? 4 : 2));
    SwitchReq(req, [&](auto r) {
      if constexpr (kNormal)
        Kernel<normal_block<r.value, G>, xpu>::Launch(ctx.run_ctx, blocks, out.dptr<T>(), n, s, ga,
                                                      gb);
      else  // the scale as resource::FillUniform computes it: in G
        Kernel<uniform_block<r.value, G>, xpu>::Launch(ctx.run_ctx, blocks, out.dptr<T>(), n, s, ga,
                                                       static_cast<G>(gb - ga));
    });
  });
}

template <typename xpu>
void UniformCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<UniformParam>(attrs);
  RandomRealCompute<xpu, false>(ctx, p.low, p.high, req[0], out[0]);
}

template <typename xpu>
void NormalCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<NormalParam>(attrs);
  RandomRealCompute<xpu, true>(ctx, p.loc, p.scale, req[0], out[0]);
}

template <typename xpu>
void RandIntCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<RandIntParam>(attrs);
  const RandomStream s = ctx.requested.at(0).get_random();
  const int64_t n = out[0].Size();
  const auto range = static_cast<uint64_t>(p.high) - static_cast<uint64_t>(p.low);
  const auto blocks = static_cast<int64_t>(resource::NumRandomBlocks(n, 2));
  auto launch = [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<randint_block<r.value>, xpu>::Launch(ctx.run_ctx, blocks, out[0].dptr<T>(), n, s,
                                                  p.low, range);
    });
  };
  if (out[0].dtype() == DType::kInt64)
    launch(TypeTag<int64_t>{});
  else
    launch(TypeTag<int32_t>{});
}

// The gather of a shuffle, given the permutation in memory the device reads.
template <typename xpu>
void ShuffleGather(const OpContext& ctx, const TBlob& in, OpReqType req, const TBlob& out,
                   const int64_t* perm) {
  const int64_t row = in.Size() / in.shape()[0];
  SwitchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req, [&](auto r) {
      Kernel<shuffle_gather<r.value>, xpu>::Launch(ctx.run_ctx, out.Size(), out.dptr<T>(),
                                                   in.dptr<T>(), perm, row);
    });
  });
}

}  // namespace tessera::op
