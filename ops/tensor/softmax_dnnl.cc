// softmax and log_softmax on oneDNN: float32, plain layout, no temperature.
// Measured on 2 threads (tests/bench/nn_dnnl_bench.cc) oneDNN's vectorised
// kernels ran 4-13x ahead of the portable loops on the forward and 2-3x on
// the backward from a few tens of thousands of elements; below that an
// OpenMP team's wake-up costs more than the whole plain kernel.
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/nn/dnnl_util.h"
#include "ops/tensor/softmax_op-inl.h"

namespace tessera::op {
namespace {

using dnnl::memory;

struct SoftmaxPrims {
  memory::desc data;
  std::unique_ptr<dnnl::softmax_v2_forward> fwd;
  std::unique_ptr<dnnl::softmax_v2_backward> bwd;
};

// The (outer, len, inner) view: 2-D when the axis is the last, so oneDNN
// sees a dense row.
memory::desc DataDesc(const SoftmaxGeom& g) {
  if (g.inner == 1)
    return memory::desc({g.outer, g.len}, memory::data_type::f32, memory::format_tag::ab);
  return memory::desc({g.outer, g.len, g.inner}, memory::data_type::f32, memory::format_tag::abc);
}

// Primitives cached per geometry and algorithm, built on first use.
std::shared_ptr<SoftmaxPrims> Prims(const SoftmaxGeom& g, bool log, bool backward) {
  using Key = std::tuple<int64_t, int64_t, int64_t, bool>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<SoftmaxPrims>> cache;
  std::lock_guard<std::mutex> lock(mu);
  const Key key{g.outer, g.len, g.inner, log};
  if (cache.size() >= 64 && !cache.count(key)) cache.clear();  // callers keep theirs alive
  auto& p = cache[key];
  if (!p) {
    p = std::make_shared<SoftmaxPrims>();
    p->data = DataDesc(g);
  }
  const auto alg = log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
  const auto& eng = nn_dnnl::CpuEngine();
  if (!p->fwd || (backward && !p->bwd)) {
    dnnl::softmax_v2_forward::desc fd(dnnl::prop_kind::forward_training, alg, p->data, p->data, 1);
    dnnl::softmax_v2_forward::primitive_desc fpd(fd, eng);
    if (!p->fwd) p->fwd = std::make_unique<dnnl::softmax_v2_forward>(fpd);
    if (backward) {
      dnnl::softmax_v2_backward::desc bd(alg, p->data, p->data, p->data, 1);
      p->bwd = std::make_unique<dnnl::softmax_v2_backward>(
          dnnl::softmax_v2_backward::primitive_desc(bd, eng, fpd));
    }
  }
  return p;
}

}  // namespace

bool DnnlSoftmaxForward(const SoftmaxGeom& g, bool log, const float* x, float* y, int threads) {
  try {
    auto p = Prims(g, log, false);
    nn_dnnl::ScopedOmpThreads scoped(threads);
    const auto& eng = nn_dnnl::CpuEngine();
    dnnl::stream s(eng);
    memory src(p->data, eng, const_cast<float*>(x)), dst(p->data, eng, y);
    p->fwd->execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    s.wait();
  } catch (const dnnl::error&) {
    return false;  // the portable loop does it
  }
  return true;
}

bool DnnlSoftmaxBackward(const SoftmaxGeom& g, bool log, const float* gy, const float* y, float* gx,
                         int threads) {
  try {
    auto p = Prims(g, log, true);
    nn_dnnl::ScopedOmpThreads scoped(threads);
    const auto& eng = nn_dnnl::CpuEngine();
    dnnl::stream s(eng);
    memory dst(p->data, eng, const_cast<float*>(y)), ddst(p->data, eng, const_cast<float*>(gy)),
        dsrc(p->data, eng, gx);
    p->bwd->execute(s, {{DNNL_ARG_DST, dst}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_SRC, dsrc}});
    s.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

}  // namespace tessera::op
