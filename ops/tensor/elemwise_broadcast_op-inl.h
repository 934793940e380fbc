// Broadcasting binary operators (broadcast_add, ...; NumPy's rules: shapes
// align from the right and a dimension of 1 stretches) and their gradients,
// which sum the output gradient over the broadcast axes back to each input's
// shape.
//
// Every call first compacts the shapes into a BroadcastPlan: dimensions of
// size 1 in the output are dropped and neighbours that broadcast the same way
// merge, so (64,1,1,8) + (64,3,5,8) becomes (64,15,8) with lhs strides
// (8,0,1). Fast paths follow from the plan: one dimension left means equal
// shapes or a scalar-like operand (the contiguous, vectorised kernels); on the
// CPU the general kernel walks rows, so row and column broadcasts run an
// unstrided inner loop; only the GPU decomposes each index.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "ops/tensor/elemwise_binary_op-inl.h"

namespace tessera::op {

// The compacted iteration space of out = f(lhs, rhs): its dims and each
// operand's element strides (0 along broadcast dims). Passed by value to
// GPU kernels.
struct BroadcastPlan {
  static constexpr int kMax = Shape::kMaxNdim;
  int ndim = 0;
  int64_t shape[kMax] = {};
  int64_t stride[2][kMax] = {};  // [0]: lhs, [1]: rhs

  TS_XINLINE int64_t Size() const {
    int64_t n = 1;
    for (int k = 0; k < ndim; ++k) n *= shape[k];
    return n;
  }
  // Offsets of output element i in lhs and rhs.
  TS_XINLINE void Offsets(int64_t i, int64_t* l, int64_t* r) const {
    int64_t lo = 0, ro = 0;
    for (int k = ndim - 1; k >= 0; --k) {
      const int64_t c = i % shape[k];
      i /= shape[k];
      lo += c * stride[0][k];
      ro += c * stride[1][k];
    }
    *l = lo;
    *r = ro;
  }
  // True when operand `side` has every element of the output (no broadcast).
  bool Full(int side) const {
    for (int k = 0; k < ndim; ++k)
      if (stride[side][k] == 0) return false;
    return true;
  }
};

// The dimension of `s` aligned to output dimension d of an ndim-dim output.
inline int64_t AlignedDim(const Shape& s, int ndim, int d) {
  const int k = d - (ndim - s.ndim());
  return k < 0 ? 1 : s[k];
}

// NumPy broadcasting of two shapes (dims may be 0 = unknown); an error names
// the op and both shapes.
Shape BroadcastShapes(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs);

inline BroadcastPlan MakeBroadcastPlan(const Shape& lhs, const Shape& rhs, const Shape& out) {
  BroadcastPlan p;
  const int nd = out.ndim();
  bool full[2][BroadcastPlan::kMax] = {};
  for (int d = 0; d < nd; ++d) {
    const int64_t od = out[d];
    if (od == 1) continue;
    const bool lf = AlignedDim(lhs, nd, d) == od, rf = AlignedDim(rhs, nd, d) == od;
    if (p.ndim > 0 && full[0][p.ndim - 1] == lf && full[1][p.ndim - 1] == rf) {
      p.shape[p.ndim - 1] *= od;
    } else {
      full[0][p.ndim] = lf;
      full[1][p.ndim] = rf;
      p.shape[p.ndim++] = od;
    }
  }
  if (p.ndim == 0) {  // a single element
    full[0][0] = full[1][0] = true;
    p.shape[p.ndim++] = 1;
  }
  for (int side = 0; side < 2; ++side) {
    int64_t s = 1;
    for (int k = p.ndim - 1; k >= 0; --k) {
      p.stride[side][k] = full[side][k] ? s : 0;
      if (full[side][k]) s *= p.shape[k];
    }
  }
  return p;
}

// The gradient of operand `side`: its own elements (the dims where it is
// full, "kept") and the broadcast dims summed over ("reduced"), with the
// output's and the other operand's strides along each.
struct BroadcastReducePlan {
  static constexpr int kMax = Shape::kMaxNdim;
  int nkept = 0, nred = 0;
  int64_t kept_shape[kMax] = {}, kept_out[kMax] = {}, kept_other[kMax] = {};
  int64_t red_shape[kMax] = {}, red_out[kMax] = {}, red_other[kMax] = {};
  int64_t red_size = 1;

  // Output and other-operand offsets of position i in the kept (or reduced) dims.
  TS_XINLINE static void Offsets(int n, const int64_t* shape, const int64_t* os, const int64_t* ts,
                                 int64_t i, int64_t* o, int64_t* t) {
    int64_t oo = 0, to = 0;
    for (int k = n - 1; k >= 0; --k) {
      const int64_t c = i % shape[k];
      i /= shape[k];
      oo += c * os[k];
      to += c * ts[k];
    }
    *o = oo;
    *t = to;
  }
  TS_XINLINE void KeptOffsets(int64_t j, int64_t* o, int64_t* t) const {
    Offsets(nkept, kept_shape, kept_out, kept_other, j, o, t);
  }
  TS_XINLINE void ReducedOffsets(int64_t r, int64_t* o, int64_t* t) const {
    Offsets(nred, red_shape, red_out, red_other, r, o, t);
  }
};

inline BroadcastReducePlan MakeReducePlan(const BroadcastPlan& p, int side) {
  BroadcastReducePlan rp;
  int64_t out_stride[BroadcastPlan::kMax];
  int64_t s = 1;
  for (int k = p.ndim - 1; k >= 0; --k) {
    out_stride[k] = s;
    s *= p.shape[k];
  }
  for (int k = 0; k < p.ndim; ++k) {
    if (p.stride[side][k] != 0) {
      rp.kept_shape[rp.nkept] = p.shape[k];
      rp.kept_out[rp.nkept] = out_stride[k];
      rp.kept_other[rp.nkept++] = p.stride[1 - side][k];
    } else {
      rp.red_shape[rp.nred] = p.shape[k];
      rp.red_out[rp.nred] = out_stride[k];
      rp.red_other[rp.nred++] = p.stride[1 - side][k];
      rp.red_size *= p.shape[k];
    }
  }
  return rp;
}

// --- element kernels (the GPU's, and the CPU's where noted) ---

// OP(lhs[i], rhs[0]) (kScalarSide 1) or OP(lhs[0], rhs[i]) (kScalarSide 0).
template <typename OP, int kScalarSide, int req>
struct binary_one_scalar_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* a, const T* b) {
    using A = AccType<T>;
    const int64_t ai = kScalarSide == 0 ? 0 : i, bi = kScalarSide == 1 ? 0 : i;
    AssignReq<req>(out[i], OP::Map(static_cast<A>(a[ai]), static_cast<A>(b[bi])));
  }
};

template <typename OP, int req>
struct broadcast_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* a, const T* b, BroadcastPlan p) {
    using A = AccType<T>;
    int64_t ai, bi;
    p.Offsets(i, &ai, &bi);
    AssignReq<req>(out[i], OP::Map(static_cast<A>(a[ai]), static_cast<A>(b[bi])));
  }
};

// The gradient of an operand that has the output's shape: no sum.
template <typename G, int req>
struct broadcast_grad_full_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* gx, const T* g, const T* a, const T* b,
                             BroadcastPlan p) {
    using A = AccType<T>;
    int64_t ai, bi;
    p.Offsets(i, &ai, &bi);
    AssignReq<req>(gx[i],
                   static_cast<A>(g[i]) * G::Map(static_cast<A>(a[ai]), static_cast<A>(b[bi])));
  }
};

// The GPU reduction (elemwise_broadcast_op.cu): gx[j] (req)= sum over the
// broadcast positions of g * G(a, b), one thread block per element j.
template <typename G, int side, int req, typename T>
void BroadcastReduceGpu(const RunContext& ctx, T* gx, const T* g, const T* x, const T* other,
                        const BroadcastReducePlan& rp, int64_t nx);

// --- CPU kernels ---

// out[i] (req)= value(i, lhs offset, rhs offset) over the plan: threads take
// contiguous ranges; each walks rows of the last dimension, where every
// operand's stride is 0 or 1, so the inner loop is a plain vector loop.
template <int req, typename T, typename F>
void CpuBroadcastMap(const RunContext& rctx, T* out, const BroadcastPlan& p, const F& value) {
  const int64_t n = p.Size();
  const int nd = p.ndim;
  const int64_t len_last = p.shape[nd - 1];
  const int64_t ls = p.stride[0][nd - 1], rs = p.stride[1][nd - 1];
  auto range = [&](int64_t b, int64_t e) {
    int64_t idx[BroadcastPlan::kMax];
    int64_t ao = 0, bo = 0, rest = b;
    for (int k = nd - 1; k >= 0; --k) {
      idx[k] = rest % p.shape[k];
      rest /= p.shape[k];
      ao += idx[k] * p.stride[0][k];
      bo += idx[k] * p.stride[1][k];
    }
    int64_t i = b;
    while (i < e) {
      const int64_t len = std::min(len_last - idx[nd - 1], e - i);
      T* o = out + i;
      const int64_t oi = i, a0 = ao, b0 = bo;
      if (ls && rs)
        detail::MapRangeSimd<req>(o, 0, len,
                                  [&](int64_t j) { return value(oi + j, a0 + j, b0 + j); });
      else if (ls)
        detail::MapRangeSimd<req>(o, 0, len, [&](int64_t j) { return value(oi + j, a0 + j, b0); });
      else
        detail::MapRangeSimd<req>(o, 0, len, [&](int64_t j) { return value(oi + j, a0, b0 + j); });
      i += len;
      ao += len * ls;
      bo += len * rs;
      idx[nd - 1] += len;
      if (idx[nd - 1] < len_last) continue;
      // Carry into the outer dimensions.
      idx[nd - 1] = 0;
      ao -= len_last * ls;
      bo -= len_last * rs;
      for (int k = nd - 2; k >= 0; --k) {
        ao += p.stride[0][k];
        bo += p.stride[1][k];
        if (++idx[k] < p.shape[k]) break;
        ao -= p.shape[k] * p.stride[0][k];
        bo -= p.shape[k] * p.stride[1][k];
        idx[k] = 0;
      }
    }
  };
  const int threads = CpuThreads(rctx, n);
  if (threads <= 1) return range(0, n);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    const int t = OmpThreadIndex(), nt = OmpThreadCount();
    const int64_t chunk = ((n + nt - 1) / nt + 15) / 16 * 16;
    const int64_t b = std::min<int64_t>(n, t * chunk), e = std::min<int64_t>(n, b + chunk);
    if (b < e) range(b, e);
  }
}

// gx[j] (req)= sum over the reduced positions of value(out offset, other
// offset, j), in parallel over j; the innermost reduced dimension is a loop
// with fixed strides.
template <int req, typename T, typename F>
void CpuBroadcastReduce(const RunContext& rctx, T* gx, const BroadcastReducePlan& rp, int64_t nx,
                        const F& value) {
  using A = AccType<T>;
  const int64_t inner = rp.red_shape[rp.nred - 1];
  const int64_t so = rp.red_out[rp.nred - 1], st = rp.red_other[rp.nred - 1];
  const int64_t outer = rp.red_size / inner;
  auto element = [&](int64_t j) {
    int64_t ko, kt;
    rp.KeptOffsets(j, &ko, &kt);
    A acc = A(0);
    for (int64_t q = 0; q < outer; ++q) {
      int64_t ro, rt;
      BroadcastReducePlan::Offsets(rp.nred - 1, rp.red_shape, rp.red_out, rp.red_other, q, &ro,
                                   &rt);
      const int64_t o0 = ko + ro, t0 = kt + rt;
      for (int64_t r = 0; r < inner; ++r) acc += value(o0 + r * so, t0 + r * st, j);
    }
    AssignReq<req>(gx[j], acc);
  };
  const int threads = CpuThreads(rctx, nx * rp.red_size);
  if (threads <= 1 || nx == 1) {
    for (int64_t j = 0; j < nx; ++j) element(j);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
  for (int64_t j = 0; j < nx; ++j) element(j);
}

// --- FCompute ---

template <typename xpu, typename OP>
void BroadcastCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  // Operands of the output's shape (every scalar among them) need no plan.
  const bool same = in[0].shape() == out[0].shape() && in[1].shape() == out[0].shape();
  const BroadcastPlan p =
      same ? BroadcastPlan{} : MakeBroadcastPlan(in[0].shape(), in[1].shape(), out[0].shape());
  SwitchElemwiseDType<OP::kTypes>(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = AccType<T>;
        const T* a = in[0].dptr<T>();
        const T* b = in[1].dptr<T>();
        T* o = out[0].dptr<T>();
        const int64_t n = out[0].Size();
        if (same) return BinarySameLaunch<xpu, OP, T>(ctx, req[0], out[0], a, b);
        const bool lf = p.Full(0), rf = p.Full(1);
        if (lf && rf) return BinarySameLaunch<xpu, OP, T>(ctx, req[0], out[0], a, b);
        SwitchReq(req[0], [&](auto r) {
          if constexpr (std::is_same_v<xpu, cpu>) {
            if (p.ndim == 1 && lf) {
              const A bv = static_cast<A>(b[0]);
              CpuMap<r.value>(ctx.run_ctx, o, n,
                              [=](int64_t i) { return OP::Map(static_cast<A>(a[i]), bv); });
            } else if (p.ndim == 1 && rf) {
              const A av = static_cast<A>(a[0]);
              CpuMap<r.value>(ctx.run_ctx, o, n,
                              [=](int64_t i) { return OP::Map(av, static_cast<A>(b[i])); });
            } else {
              CpuBroadcastMap<r.value>(ctx.run_ctx, o, p, [=](int64_t, int64_t ai, int64_t bi) {
                return OP::Map(static_cast<A>(a[ai]), static_cast<A>(b[bi]));
              });
            }
          } else {
            if (p.ndim == 1 && lf)
              Kernel<binary_one_scalar_kernel<OP, 1, r.value>, xpu>::Launch(ctx.run_ctx, n, o, a,
                                                                            b);
            else if (p.ndim == 1 && rf)
              Kernel<binary_one_scalar_kernel<OP, 0, r.value>, xpu>::Launch(ctx.run_ctx, n, o, a,
                                                                            b);
            else
              Kernel<broadcast_kernel<OP, r.value>, xpu>::Launch(ctx.run_ctx, n, o, a, b, p);
          }
        });
      },
      attrs.op->name().c_str());
}

// One operand's gradient: g * G(a, b), summed to the operand's shape.
template <typename xpu, typename G, int side, typename T>
void BroadcastGradLaunch(const OpContext& ctx, OpReqType req, const TBlob& gx_blob, const T* g,
                         const T* a, const T* b, const BroadcastPlan& p) {
  using A = AccType<T>;
  T* gx = gx_blob.dptr<T>();
  SwitchReq(req, [&](auto r) {
    if (p.Full(side)) {
      if constexpr (std::is_same_v<xpu, cpu>) {
        CpuBroadcastMap<r.value>(ctx.run_ctx, gx, p, [=](int64_t i, int64_t ai, int64_t bi) {
          return static_cast<A>(g[i]) * G::Map(static_cast<A>(a[ai]), static_cast<A>(b[bi]));
        });
      } else {
        Kernel<broadcast_grad_full_kernel<G, r.value>, xpu>::Launch(ctx.run_ctx, p.Size(), gx, g, a,
                                                                    b, p);
      }
      return;
    }
    const BroadcastReducePlan rp = MakeReducePlan(p, side);
    const int64_t nx = gx_blob.Size();
    const T* x = side == 0 ? a : b;
    const T* other = side == 0 ? b : a;
    if constexpr (std::is_same_v<xpu, cpu>) {
      CpuBroadcastReduce<r.value>(ctx.run_ctx, gx, rp, nx, [=](int64_t oi, int64_t ti, int64_t j) {
        const A xv = static_cast<A>(x[j]), tv = static_cast<A>(other[ti]);
        return static_cast<A>(g[oi]) * (side == 0 ? G::Map(xv, tv) : G::Map(tv, xv));
      });
    } else {
      BroadcastReduceGpu<G, side, r.value, T>(ctx.run_ctx, gx, g, x, other, rp, nx);
    }
  });
}

// Backward of a broadcasting op: inputs (out_grad, lhs, rhs), outputs
// (lhs_grad, rhs_grad) of the shapes of lhs and rhs.
template <typename xpu, typename LG, typename RG>
void BroadcastGradCompute(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  const BroadcastPlan p = MakeBroadcastPlan(in[1].shape(), in[2].shape(), in[0].shape());
  SwitchElemwiseDType<LG::kTypes>(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* g = in[0].dptr<T>();
        const T* a = in[1].dptr<T>();
        const T* b = in[2].dptr<T>();
        if (p.Full(0) && p.Full(1)) {
          BinaryGradSameLaunch<xpu, LG, T>(ctx, req[0], out[0], g, a, b);
          BinaryGradSameLaunch<xpu, RG, T>(ctx, req[1], out[1], g, a, b);
          return;
        }
        BroadcastGradLaunch<xpu, LG, 0, T>(ctx, req[0], out[0], g, a, b, p);
        BroadcastGradLaunch<xpu, RG, 1, T>(ctx, req[1], out[1], g, a, b, p);
      },
      attrs.op->name().c_str());
}

// The broadcasting ops with a gradient: (suffix, functor, lhs derivative,
// rhs derivative), and those whose gradient is zero (comparisons, logic).
// clang-format off
#define TS_BROADCAST_GRAD_OPS(X)                                                                  \
  X(add, add, one, one)                                                                           \
  X(sub, sub, one, minus_one)                                                                     \
  X(mul, mul, mul_lgrad, mul_rgrad) X(div, div, div_lgrad, div_rgrad) X(mod, mod, one, mod_rgrad) \
      X(power, power, power_lgrad, power_rgrad) X(maximum, maximum, maximum_lgrad, maximum_rgrad) \
          X(minimum, minimum, minimum_lgrad, minimum_rgrad)                                       \
              X(hypot, hypot, hypot_lgrad, hypot_rgrad)
#define TS_BROADCAST_LOGIC_OPS(X)                                                    \
  X(equal)                                                                           \
  X(not_equal)                                                                       \
  X(greater) X(greater_equal) X(lesser) X(lesser_equal) X(logical_and) X(logical_or) \
      X(logical_xor)
// clang-format on

}  // namespace tessera::op
