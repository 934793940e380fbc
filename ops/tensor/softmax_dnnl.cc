// softmax and log_softmax on oneDNN: float32, plain layout, no temperature.
// Measured on 2 threads (tests/bench/nn_dnnl_bench.cc) oneDNN's vectorised
// kernels ran 4-13x ahead of the portable loops on the forward and 2-3x on
// the backward from a few tens of thousands of elements; below that an
// OpenMP team's wake-up costs more than the whole plain kernel.
#include <memory>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/tensor/dnnl_util.h"
#include "ops/tensor/softmax_op-inl.h"

namespace tessera::op {
namespace {

using dnnl::memory;

// The (outer, len, inner) view: 2-D when the axis is the last, so oneDNN
// sees a dense row.
memory::desc DataDesc(const SoftmaxGeom& g) {
  if (g.inner == 1)
    return memory::desc({g.outer, g.len}, memory::data_type::f32, memory::format_tag::ab);
  return memory::desc({g.outer, g.len, g.inner}, memory::data_type::f32, memory::format_tag::abc);
}

struct SoftmaxPrims {
  memory::desc data;
  dnnl::softmax_v2_forward fwd;
  dnnl::softmax_v2_backward bwd;
};

std::shared_ptr<SoftmaxPrims> Prims(const SoftmaxGeom& g, bool log, int threads) {
  using Key = std::tuple<int64_t, int64_t, int64_t, bool>;
  static nn_dnnl::PrimitiveCache<Key, SoftmaxPrims> cache;
  return cache.Get(Key{g.outer, g.len, g.inner, log}, threads, [&] {
    const auto alg = log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
    const auto& eng = nn_dnnl::CpuEngine();
    auto p = std::make_shared<SoftmaxPrims>();
    p->data = DataDesc(g);
    dnnl::softmax_v2_forward::primitive_desc fpd(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_training, alg, p->data, p->data, 1),
        eng);
    p->fwd = dnnl::softmax_v2_forward(fpd);
    p->bwd = dnnl::softmax_v2_backward(dnnl::softmax_v2_backward::primitive_desc(
        dnnl::softmax_v2_backward::desc(alg, p->data, p->data, p->data, 1), eng, fpd));
    return p;
  });
}

}  // namespace

bool DnnlSoftmaxForward(const SoftmaxGeom& g, bool log, const float* x, float* y, int threads) {
  if (!nn_dnnl::Available()) return false;
  try {
    auto p = Prims(g, log, threads);
    const auto& eng = nn_dnnl::CpuEngine();
    nn_dnnl::RunPrimitive(p->fwd,
                          {{DNNL_ARG_SRC, memory(p->data, eng, const_cast<float*>(x))},
                           {DNNL_ARG_DST, memory(p->data, eng, y)}},
                          threads);
  } catch (const dnnl::error&) {
    return false;  // the portable loop does it
  }
  return true;
}

bool DnnlSoftmaxBackward(const SoftmaxGeom& g, bool log, const float* gy, const float* y, float* gx,
                         int threads) {
  if (!nn_dnnl::Available()) return false;
  try {
    auto p = Prims(g, log, threads);
    const auto& eng = nn_dnnl::CpuEngine();
    nn_dnnl::RunPrimitive(p->bwd,
                          {{DNNL_ARG_DST, memory(p->data, eng, const_cast<float*>(y))},
                           {DNNL_ARG_DIFF_DST, memory(p->data, eng, const_cast<float*>(gy))},
                           {DNNL_ARG_DIFF_SRC, memory(p->data, eng, gx)}},
                          threads);
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

}  // namespace tessera::op
