// The element kernels of the ops that resample (image, channel) planes of
// h x w into planes of oh x ow, each output element a weighted sum over its
// input plane (AdaptiveAvgPooling2D, BilinearResize2D). The forward is a
// thread per output element; the backward (the adjoint) a thread per plane,
// spreading the plane's output gradient in order, so no atomics. Sampler
// gives the weights for the op's geometry G (h, w, oh, ow, and what else it
// needs):
//   Sample(g, plane, i, j): output (i, j) of an input plane, in double;
//   Spread(g, plane, i, j, d): adds output (i, j)'s gradient d into a
//     gradient plane.
#pragma once

#include <cstdint>

#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

template <typename Sampler>
struct ResampleForwardKernel {
  template <typename G, typename T>
  TS_XINLINE static void Map(int64_t o, G g, const T* x, T* y, OpReqType req) {
    const int64_t j = o % g.ow, i = o / g.ow % g.oh, p = o / (g.ow * g.oh);
    const double v = Sampler::Sample(g, x + p * g.h * g.w, i, j);
    y[o] = T(req == kAddTo ? double(y[o]) + v : v);
  }
};

template <typename Sampler>
struct ResampleBackwardPlane {
  template <typename G, typename T>
  TS_XINLINE static void Map(int64_t p, G g, const T* dy, T* dx, OpReqType req) {
    T* plane = GradPlane(dx, p, g.h * g.w, req);
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j)
        Sampler::Spread(g, plane, i, j, double(dy[(p * g.oh + i) * g.ow + j]));
  }
};

}  // namespace tessera::op
