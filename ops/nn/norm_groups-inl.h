// The kernels LayerNorm, InstanceNorm and GroupNorm share: normalise groups
// of n elements to zero mean and unit variance, then scale and shift.
//
// A group is (o, i) over the elements x[(o * n + k) * inner + i], k < n.
// LayerNorm: the axis is k, gamma/beta are indexed by k. InstanceNorm: the
// spatial positions are k (inner = 1), one group per (sample, channel), and
// gamma/beta are indexed by the channel, o % channels. GroupNorm: a group is
// (sample, group of channels), its n elements the channels' spatial
// positions one channel after another (span of them each): gamma/beta are
// indexed by the channel, (o % groups) * (n / span) + k / span.
//
// The backward recomputes each group's statistics from x (one more pass over
// the data, no saved state), then, with x^ = (x - mean) / std and
// h = dy * gamma:
//   dx = (h - mean_k(h) - x^ * mean_k(h * x^)) / std
//   dgamma[j] = sum of dy * x^ over the elements of index j, dbeta likewise of dy.
#pragma once

#include <cmath>
#include <vector>

#include "engine/base/host_device.h"
#include "engine/base/tblob.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"

namespace tessera::op::norm {

struct Geom {
  int64_t outer = 1, n = 1, inner = 1;
  bool per_group = false;  // gamma by channel within the group instead of by k
  int64_t channels = 1;    // per_group: groups per sample (channels for InstanceNorm)
  int64_t span = 1;        // per_group: elements per channel within a group
  TS_XINLINE int64_t groups() const { return outer * inner; }
  TS_XINLINE int64_t index(int64_t o, int64_t k, int64_t i) const {
    return (o * n + k) * inner + i;
  }
  TS_XINLINE int64_t affine(int64_t o, int64_t k) const {
    return per_group ? (o % channels) * (n / span) + k / span : k;
  }
};

template <typename T, typename A>
void Store(OpReqType req, T* dst, A v) {
  if (req == kNullOp) return;
  *dst = static_cast<T>(req == kAddTo ? static_cast<A>(*dst) + v : v);
}

template <typename T, typename A>
void Stats(const Geom& g, const T* x, int64_t o, int64_t i, A* mean, A* stdev, double eps) {
  A s = 0;
  for (int64_t k = 0; k < g.n; ++k) s += static_cast<A>(x[g.index(o, k, i)]);
  const A m = s / static_cast<A>(g.n);
  A v = 0;
  for (int64_t k = 0; k < g.n; ++k) {
    const A d = static_cast<A>(x[g.index(o, k, i)]) - m;
    v += d * d;
  }
  *mean = m;
  *stdev = std::sqrt(v / static_cast<A>(g.n) + static_cast<A>(eps));
}

// y (req)= gamma * x^ + beta; mean/std per group when given (written).
template <typename T>
void Forward(const RunContext& rctx, const Geom& g, const T* x, const T* gamma, const T* beta,
             double eps, T* y, OpReqType req, T* mean_out, T* std_out) {
  using A = AccType<T>;
  const int64_t groups = g.groups();
  [[maybe_unused]] const int threads = CpuThreads(rctx, groups * g.n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t gi = 0; gi < groups; ++gi) {
    const int64_t o = gi / g.inner, i = gi % g.inner;
    A mean, stdev;
    Stats(g, x, o, i, &mean, &stdev, eps);
    if (mean_out) mean_out[gi] = static_cast<T>(mean);
    if (std_out) std_out[gi] = static_cast<T>(stdev);
    for (int64_t k = 0; k < g.n; ++k) {
      const int64_t at = g.index(o, k, i), j = g.affine(o, k);
      const A xh = (static_cast<A>(x[at]) - mean) / stdev;
      Store<T, A>(req, y + at, static_cast<A>(gamma[j]) * xh + static_cast<A>(beta[j]));
    }
  }
}

template <typename T>
void Backward(const RunContext& rctx, const Geom& g, const T* dy, const T* x, const T* gamma,
              double eps, T* dx, OpReqType rx, T* dgamma, OpReqType rg, T* dbeta, OpReqType rb,
              int64_t n_affine) {
  using A = AccType<T>;
  const int64_t groups = g.groups();
  [[maybe_unused]] const int threads = CpuThreads(rctx, groups * g.n);
  std::vector<A> mean(static_cast<size_t>(groups)), stdev(static_cast<size_t>(groups));
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t gi = 0; gi < groups; ++gi) {
    const int64_t o = gi / g.inner, i = gi % g.inner;
    Stats(g, x, o, i, &mean[gi], &stdev[gi], eps);
    if (rx == kNullOp) continue;
    A m1 = 0, m2 = 0;
    for (int64_t k = 0; k < g.n; ++k) {
      const int64_t at = g.index(o, k, i);
      const A h = static_cast<A>(dy[at]) * static_cast<A>(gamma[g.affine(o, k)]);
      m1 += h;
      m2 += h * (static_cast<A>(x[at]) - mean[gi]) / stdev[gi];
    }
    m1 /= static_cast<A>(g.n);
    m2 /= static_cast<A>(g.n);
    for (int64_t k = 0; k < g.n; ++k) {
      const int64_t at = g.index(o, k, i);
      const A xh = (static_cast<A>(x[at]) - mean[gi]) / stdev[gi];
      const A h = static_cast<A>(dy[at]) * static_cast<A>(gamma[g.affine(o, k)]);
      Store<T, A>(rx, dx + at, (h - m1 - xh * m2) / stdev[gi]);
    }
  }
  if (rg == kNullOp && rb == kNullOp) return;
  // The affine gradients reduce across groups: one serial pass.
  std::vector<A> sg(static_cast<size_t>(n_affine), A(0)), sb(static_cast<size_t>(n_affine), A(0));
  for (int64_t gi = 0; gi < groups; ++gi) {
    const int64_t o = gi / g.inner, i = gi % g.inner;
    for (int64_t k = 0; k < g.n; ++k) {
      const int64_t at = g.index(o, k, i), j = g.affine(o, k);
      const A d = static_cast<A>(dy[at]);
      sg[j] += d * (static_cast<A>(x[at]) - mean[gi]) / stdev[gi];
      sb[j] += d;
    }
  }
  for (int64_t j = 0; j < n_affine; ++j) {
    Store<T, A>(rg, dgamma + j, sg[j]);
    Store<T, A>(rb, dbeta + j, sb[j]);
  }
}

// The device's kernels: Kernels<cpu> here, Kernels<gpu> in layer_norm.cu.
template <typename xpu>
struct Kernels;

template <>
struct Kernels<cpu> {
  template <typename T>
  static void Forward(const OpContext& ctx, const Geom& g, const T* x, const T* gamma,
                      const T* beta, double eps, T* y, OpReqType req, T* mean_out, T* std_out) {
    norm::Forward<T>(ctx.run_ctx, g, x, gamma, beta, eps, y, req, mean_out, std_out);
  }
  template <typename T>
  static void Backward(const OpContext& ctx, const Geom& g, const T* dy, const T* x, const T* gamma,
                       double eps, T* dx, OpReqType rx, T* dgamma, OpReqType rg, T* dbeta,
                       OpReqType rb, int64_t n_affine) {
    norm::Backward<T>(ctx.run_ctx, g, dy, x, gamma, eps, dx, rx, dgamma, rg, dbeta, rb, n_affine);
  }
};

}  // namespace tessera::op::norm
