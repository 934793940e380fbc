// Pooling on oneDNN (float32, the plain ncw/nchw layout or the blocked
// nChw16c one), forward and
// backward, primitives cached per geometry. Only where oneDNN's semantics are
// MXNet's: the calls return false otherwise, and the plain kernels of
// pooling.cc do the work.
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "ops/nn/pooling-inl.h"
#include "ops/tensor/dnnl_util.h"

namespace tessera::op {

namespace {

using PoolKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t, int, bool>;

PoolKey MakePoolKey(const PoolGeom& g, int64_t n, int64_t c, int64_t prh, int64_t prw,
                    dnnl::algorithm alg) {
  return {g.spatial, n,    c,    g.h, g.w, g.kh,     g.kw,     g.sh,
          g.sw,      g.ph, g.pw, prh, prw, int(alg), g.blocked};
}

// oneDNN's algorithm and right padding for `g`, or false where its semantics
// differ from MXNet's (or oneDNN is not loaded).
bool DnnlPoolAlg(const PoolGeom& g, dnnl::algorithm* alg, int64_t* prh, int64_t* prw) {
  if (!nn_dnnl::Available()) return false;
  if (g.type == pool::kSumPool || g.type == pool::kLpPool || g.ph >= g.kh || g.pw >= g.kw)
    return false;
  *prh = (g.oh - 1) * g.sh + g.kh - g.h - g.ph;
  *prw = (g.ow - 1) * g.sw + g.kw - g.w - g.pw;
  if (*prh < 0 || *prw < 0) return false;
  *alg = dnnl::algorithm::pooling_max;
  if (g.type == pool::kAvgPool) {
    if (g.include_pad && (*prh > g.ph || *prw > g.pw)) return false;
    *alg = g.include_pad ? dnnl::algorithm::pooling_avg_include_padding
                         : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  return true;
}

// A spatial pair (height, width) as oneDNN's dims: (w) alone in 1-D.
dnnl::memory::dims Spatial(const PoolGeom& g, int64_t h, int64_t w) {
  return g.spatial == 2 ? dnnl::memory::dims{h, w} : dnnl::memory::dims{w};
}

// Descriptors of the input and output of `g`, plain or blocked.
std::pair<dnnl::memory::desc, dnnl::memory::desc> PoolDescs(const PoolGeom& g, int64_t n,
                                                            int64_t c) {
  using dnnl::memory;
  using Dims = memory::dims;
  const bool d2 = g.spatial == 2;
  const auto tag = g.blocked ? memory::format_tag::nChw16c
                   : d2      ? memory::format_tag::nchw
                             : memory::format_tag::ncw;
  return {
      memory::desc(d2 ? Dims{n, c, g.h, g.w} : Dims{n, c, g.w}, memory::data_type::f32, tag),
      memory::desc(d2 ? Dims{n, c, g.oh, g.ow} : Dims{n, c, g.ow}, memory::data_type::f32, tag)};
}

dnnl::pooling_forward::desc PoolForwardDesc(const PoolGeom& g, dnnl::prop_kind kind,
                                            dnnl::algorithm alg, const dnnl::memory::desc& src,
                                            const dnnl::memory::desc& dst, int64_t prh,
                                            int64_t prw) {
  return dnnl::pooling_forward::desc(kind, alg, src, dst, Spatial(g, g.sh, g.sw),
                                     Spatial(g, g.kh, g.kw), Spatial(g, g.ph, g.pw),
                                     Spatial(g, prh, prw));
}

// The training forward (max only: it makes the workspace) and the backward
// of one geometry, built together: the backward's descriptor hints at the
// forward's.
struct TrainPrims {
  dnnl::memory::desc src, dst, ws;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward bwd;
};

std::shared_ptr<TrainPrims> TrainingPrims(const PoolGeom& g, int64_t n, int64_t c,
                                          dnnl::algorithm alg, int64_t prh, int64_t prw,
                                          int threads) {
  static nn_dnnl::PrimitiveCache<PoolKey, TrainPrims> cache;
  return cache.Get(MakePoolKey(g, n, c, prh, prw, alg), threads, [&] {
    auto made = std::make_shared<TrainPrims>();
    std::tie(made->src, made->dst) = PoolDescs(g, n, c);
    const auto& eng = nn_dnnl::CpuEngine();
    dnnl::pooling_forward::primitive_desc fpd(
        PoolForwardDesc(g, dnnl::prop_kind::forward_training, alg, made->src, made->dst, prh, prw),
        eng);
    if (alg == dnnl::algorithm::pooling_max) {
      made->fwd = dnnl::pooling_forward(fpd);
      made->ws = fpd.workspace_desc();
    }
    made->bwd = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
        dnnl::pooling_backward::desc(alg, made->src, made->dst, Spatial(g, g.sh, g.sw),
                                     Spatial(g, g.kh, g.kw), Spatial(g, g.ph, g.pw),
                                     Spatial(g, prh, prw)),
        eng, fpd));
    return made;
  });
}

// The max-pooling training primitives of `g`, or null where oneDNN does not
// serve it or its workspace would not fit in `ws_bytes`.
std::shared_ptr<TrainPrims> MaxTrainingPrims(const PoolGeom& g, int64_t n, int64_t c,
                                             int64_t ws_bytes, int threads) {
  dnnl::algorithm alg;
  int64_t prh, prw;
  if (!DnnlPoolAlg(g, &alg, &prh, &prw) || alg != dnnl::algorithm::pooling_max) return nullptr;
  auto p = TrainingPrims(g, n, c, alg, prh, prw, threads);
  return p->ws.get_size() <= size_t(ws_bytes) ? p : nullptr;
}

void RunMaxForward(const TrainPrims& p, const float* in, void* out, void* ws, int threads) {
  using dnnl::memory;
  const auto& eng = nn_dnnl::CpuEngine();
  nn_dnnl::RunPrimitive(p.fwd,
                        {{DNNL_ARG_SRC, memory(p.src, eng, const_cast<float*>(in))},
                         {DNNL_ARG_DST, memory(p.dst, eng, out)},
                         {DNNL_ARG_WORKSPACE, memory(p.ws, eng, ws)}},
                        threads);
}

void RunBackward(const TrainPrims& p, const float* ograd, float* gin, const void* ws, int threads) {
  using dnnl::memory;
  const auto& eng = nn_dnnl::CpuEngine();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_DIFF_DST, memory(p.dst, eng, const_cast<float*>(ograd))},
      {DNNL_ARG_DIFF_SRC, memory(p.src, eng, gin)}};
  if (ws) args.emplace(DNNL_ARG_WORKSPACE, memory(p.ws, eng, const_cast<void*>(ws)));
  nn_dnnl::RunPrimitive(p.bwd, args, threads);
}

bool DnnlPoolInference(const PoolGeom& g, int64_t n, int64_t c, const float* in, float* out,
                       int threads) {
  dnnl::algorithm alg;
  int64_t prh, prw;
  if (!DnnlPoolAlg(g, &alg, &prh, &prw)) return false;
  struct Prim {
    dnnl::memory::desc src, dst;
    dnnl::pooling_forward fwd;
  };
  static nn_dnnl::PrimitiveCache<PoolKey, Prim> cache;
  auto p = cache.Get(MakePoolKey(g, n, c, prh, prw, alg), threads, [&] {
    auto made = std::make_shared<Prim>();
    std::tie(made->src, made->dst) = PoolDescs(g, n, c);
    made->fwd = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(
        PoolForwardDesc(g, dnnl::prop_kind::forward_inference, alg, made->src, made->dst, prh, prw),
        nn_dnnl::CpuEngine()));
    return made;
  });
  const auto& eng = nn_dnnl::CpuEngine();
  nn_dnnl::RunPrimitive(p->fwd,
                        {{DNNL_ARG_SRC, dnnl::memory(p->src, eng, const_cast<float*>(in))},
                         {DNNL_ARG_DST, dnnl::memory(p->dst, eng, out)}},
                        threads);
  return true;
}

}  // namespace

bool DnnlPoolForward(const PoolGeom& g, int64_t n, int64_t c, const float* in, float* out,
                     OpReqType req, int threads, uint8_t* ws, int64_t ws_bytes) {
  if (req != kWriteTo && req != kWriteInplace) return false;
  try {
    if (!ws) return DnnlPoolInference(g, n, c, in, out, threads);
    auto p = MaxTrainingPrims(g, n, c, ws_bytes, threads);
    if (!p) return false;
    RunMaxForward(*p, in, out, ws, threads);
  } catch (const dnnl::error&) {
    return false;  // the plain kernel does it
  }
  return true;
}

bool DnnlPoolBackwardFromWorkspace(const PoolGeom& g, int64_t n, int64_t c, const float* ograd,
                                   float* gin, OpReqType req, int threads, const uint8_t* ws,
                                   int64_t ws_bytes) {
  if (req != kWriteTo) return false;
  try {
    auto p = MaxTrainingPrims(g, n, c, ws_bytes, threads);
    if (!p) return false;
    RunBackward(*p, ograd, gin, ws, threads);
  } catch (const dnnl::error&) {
    return false;  // the loop does it
  }
  return true;
}

// Without a kept workspace, max pooling's backward runs the training forward
// into temp space first. Measured on 2 threads (tests/bench/nn_dnnl_bench.cc)
// the pair ran 1.8x ahead of the loop for 3x3 windows with stride 2 and broke
// even on 2x2 windows with stride 2, which keep their own loop (the caller
// does not come here for them).
bool DnnlPoolBackward(const PoolGeom& g, int64_t n, int64_t c, const float* ograd, const float* in,
                      float* gin, OpReqType req, int threads, const Resource& temp) {
  if (req != kWriteTo) return false;
  dnnl::algorithm alg;
  int64_t prh, prw;
  if (!DnnlPoolAlg(g, &alg, &prh, &prw)) return false;
  try {
    auto p = TrainingPrims(g, n, c, alg, prh, prw, threads);
    if (alg != dnnl::algorithm::pooling_max) {
      RunBackward(*p, ograd, gin, nullptr, threads);
      return true;
    }
    nn_dnnl::Carver carve;
    const size_t at_dst = carve.Add(p->dst.get_size()), at_ws = carve.Add(p->ws.get_size());
    char* tmp = static_cast<char*>(temp.get_space(carve.Total()));
    RunMaxForward(*p, in, tmp + at_dst, tmp + at_ws, threads);
    RunBackward(*p, ograd, gin, tmp + at_ws, threads);
  } catch (const dnnl::error&) {
    return false;  // the loop does it
  }
  return true;
}

}  // namespace tessera::op
