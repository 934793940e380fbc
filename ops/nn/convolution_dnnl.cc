// Convolution on oneDNN (float32). Primitives are created once per geometry
// and kept in a small cache: the forward primitive with `any` formats (oneDNN
// picks its blocked layouts), the backward-data and backward-weights
// primitives on first backward, and the reorders between the user's plain
// layouts (ncw/nchw, oiw/oihw, goiw/goihw) and the primitives' layouts, only
// where they differ. Reordered copies, scratchpads and add-to results live in
// the op's temp space; nothing is created or allocated per call after the
// first.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "engine/base/error.h"
#include "ops/nn/convolution-inl.h"
#include "ops/tensor/dnnl_util.h"

namespace tessera::op {

namespace {

using dnnl::memory;
using nn_dnnl::Carver;
using nn_dnnl::CpuEngine;
using Tag = memory::format_tag;
using Dims = memory::dims;

// A reorder from one layout to another; empty when the layouts agree.
struct Reorder {
  std::unique_ptr<dnnl::reorder> prim;
  memory::desc from, to;
  explicit operator bool() const { return prim != nullptr; }
  static Reorder Make(const memory::desc& from, const memory::desc& to) {
    Reorder r;
    r.from = from;
    r.to = to;
    if (from != to)
      r.prim = std::make_unique<dnnl::reorder>(
          dnnl::reorder::primitive_desc(CpuEngine(), from, CpuEngine(), to));
    return r;
  }
};

struct ConvPrims {
  // The caller's arrays: plain, or channel-blocked where ConvGeom says so.
  memory::desc user_src, user_w, user_dst, user_bias, user_dsrc;
  Dims strides, dilates, pad_l, pad_r;
  // Forward.
  std::unique_ptr<dnnl::convolution_forward::primitive_desc> fwd_pd;
  std::unique_ptr<dnnl::convolution_forward> fwd;
  Reorder fwd_src, fwd_w, fwd_dst;
  // Backward, created on first use.
  std::once_flag bwd_once;
  std::unique_ptr<dnnl::convolution_backward_data> bwd_data;
  std::unique_ptr<dnnl::convolution_backward_weights> bwd_w;
  memory::desc bd_scratch, bw_scratch;
  Reorder bd_ddst, bd_w, bd_dsrc;  // diff_dst in, weights in, diff_src out
  Reorder bw_src, bw_ddst, bw_dw;  // src in, diff_dst in, diff_weights out
  memory::desc bw_dbias;
};

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

Key KeyOf(const ConvGeom& g) {
  return {g.spatial, g.n,  g.c,
          g.h,       g.w,  g.f,
          g.g,       g.kh, g.kw,
          g.sh,      g.sw, g.dh * 1000003 + g.dw,
          g.ph,      g.pw, g.blocked_bits(),
          g.bias};
}

Dims Spatial(const ConvGeom& g, int64_t a, int64_t b) {
  return g.spatial == 2 ? Dims{a, b} : Dims{b};
}

std::shared_ptr<ConvPrims> Create(const ConvGeom& g) {
  auto p = std::make_shared<ConvPrims>();
  const auto f32 = memory::data_type::f32;
  const bool d2 = g.spatial == 2;
  Dims src = d2 ? Dims{g.n, g.c, g.h, g.w} : Dims{g.n, g.c, g.w};
  Dims dst = d2 ? Dims{g.n, g.f, g.oh, g.ow} : Dims{g.n, g.f, g.ow};
  Dims w;
  Tag wtag;
  if (g.g == 1) {
    w = d2 ? Dims{g.f, g.c, g.kh, g.kw} : Dims{g.f, g.c, g.kw};
    wtag = d2 ? Tag::oihw : Tag::oiw;
  } else {
    w = d2 ? Dims{g.g, g.fg(), g.cg(), g.kh, g.kw} : Dims{g.g, g.fg(), g.cg(), g.kw};
    wtag = d2 ? Tag::goihw : Tag::goiw;
  }
  const Tag dtag = d2 ? Tag::nchw : Tag::ncw;
  auto tag = [&](bool blocked) { return blocked ? Tag::nChw16c : dtag; };
  p->user_src = memory::desc(src, f32, tag(g.src_blocked));
  p->user_dst = memory::desc(dst, f32, tag(g.dst_blocked));
  p->user_dsrc = memory::desc(src, f32, tag(g.dsrc_blocked));
  p->user_w = memory::desc(w, f32, wtag);
  p->user_bias = memory::desc({g.f}, f32, Tag::x);
  p->strides = Spatial(g, g.sh, g.sw);
  p->dilates = Spatial(g, g.dh - 1, g.dw - 1);
  p->pad_l = Spatial(g, g.ph, g.pw);
  // Symmetric padding: oneDNN rounds the output size down, as MXNet.
  p->pad_r = p->pad_l;

  const memory::desc any_src(src, f32, Tag::any), any_dst(dst, f32, Tag::any),
      any_w(w, f32, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto fd =
      g.bias ? dnnl::convolution_forward::desc(
                   dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any_src,
                   any_w, p->user_bias, any_dst, p->strides, p->dilates, p->pad_l, p->pad_r)
             : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                               dnnl::algorithm::convolution_direct, any_src, any_w,
                                               any_dst, p->strides, p->dilates, p->pad_l, p->pad_r);
  p->fwd_pd = std::make_unique<dnnl::convolution_forward::primitive_desc>(fd, attr, CpuEngine());
  p->fwd = std::make_unique<dnnl::convolution_forward>(*p->fwd_pd);
  p->fwd_src = Reorder::Make(p->user_src, p->fwd_pd->src_desc());
  p->fwd_w = Reorder::Make(p->user_w, p->fwd_pd->weights_desc());
  p->fwd_dst = Reorder::Make(p->fwd_pd->dst_desc(), p->user_dst);
  return p;
}

void CreateBackward(const ConvGeom& g, ConvPrims* p) {
  const auto f32 = memory::data_type::f32;
  const memory::desc any_src(p->user_src.dims(), f32, Tag::any),
      any_dst(p->user_dst.dims(), f32, Tag::any), any_w(p->user_w.dims(), f32, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_backward_data::desc dd(dnnl::algorithm::convolution_direct, any_src, any_w,
                                           any_dst, p->strides, p->dilates, p->pad_l, p->pad_r);
  dnnl::convolution_backward_data::primitive_desc dpd(dd, attr, CpuEngine(), *p->fwd_pd);
  p->bwd_data = std::make_unique<dnnl::convolution_backward_data>(dpd);
  p->bd_scratch = dpd.scratchpad_desc();
  p->bd_ddst = Reorder::Make(p->user_dst, dpd.diff_dst_desc());
  p->bd_w = Reorder::Make(p->user_w, dpd.weights_desc());
  p->bd_dsrc = Reorder::Make(dpd.diff_src_desc(), p->user_dsrc);

  auto wd = g.bias ? dnnl::convolution_backward_weights::desc(
                         dnnl::algorithm::convolution_direct, any_src, any_w, p->user_bias, any_dst,
                         p->strides, p->dilates, p->pad_l, p->pad_r)
                   : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct,
                                                              any_src, any_w, any_dst, p->strides,
                                                              p->dilates, p->pad_l, p->pad_r);
  dnnl::convolution_backward_weights::primitive_desc wpd(wd, attr, CpuEngine(), *p->fwd_pd);
  p->bwd_w = std::make_unique<dnnl::convolution_backward_weights>(wpd);
  p->bw_scratch = wpd.scratchpad_desc();
  p->bw_src = Reorder::Make(p->user_src, wpd.src_desc());
  p->bw_ddst = Reorder::Make(p->user_dst, wpd.diff_dst_desc());
  p->bw_dw = Reorder::Make(wpd.diff_weights_desc(), p->user_w);
  if (g.bias) p->bw_dbias = wpd.diff_bias_desc();
}

// The primitives of `g` on `threads` OpenMP threads; the backward ones are
// made on first backward, under the same count (the caller's scope).
std::shared_ptr<ConvPrims> Lookup(const ConvGeom& g, int threads) {
  static nn_dnnl::PrimitiveCache<Key, ConvPrims> cache;
  return cache.Get(KeyOf(g), threads, [&] { return Create(g); });
}

// Fails with a message naming the op and the geometry.
[[noreturn]] void Fail(const char* op, const ConvGeom& g, const dnnl::error& e) {
  TS_THROW << op << ": oneDNN failed (" << e.what() << ", status " << int(e.status)
           << ") for data (" << g.n << "," << g.c << "," << g.h << "," << g.w << "), " << g.f
           << " filters, kernel (" << g.kh << "," << g.kw << "), groups " << g.g;
}

// out (user layout) op= tmp: write or add.
void AddInto(float* out, const float* tmp, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] += tmp[i];
}

size_t Count(const memory::desc& d) {
  return d.get_size() / sizeof(float);
}

}  // namespace

void DnnlConvForward(const ConvGeom& g, const OpContext& ctx, const float* data,
                     const float* weight, const float* bias, float* out, OpReqType req) {
  if (req == kNullOp) return;
  TS_DCHECK(!(g.src_blocked || g.dst_blocked) || (nn_dnnl::Available() && g.spatial == 2));
  if (!nn_dnnl::Available() || g.spatial == 3)
    return RefConvForward<float>(g, data, weight, bias, out, req, ColSpace<float>(ctx, g),
                                 ctx.run_ctx.omp_threads);
  try {
    nn_dnnl::ScopedOmpThreads threads(ctx.run_ctx.omp_threads);
    std::shared_ptr<ConvPrims> p = Lookup(g, ctx.run_ctx.omp_threads);
    const auto& pd = *p->fwd_pd;
    const bool add = req == kAddTo;
    Carver carve;
    const size_t o_src = p->fwd_src ? carve.Add(pd.src_desc().get_size()) : 0;
    const size_t o_w = p->fwd_w ? carve.Add(pd.weights_desc().get_size()) : 0;
    // The primitive's dst: a copy when it is blocked or when adding.
    const bool dst_tmp = p->fwd_dst || add;
    const size_t o_dst = dst_tmp ? carve.Add(pd.dst_desc().get_size()) : 0;
    const size_t o_add = (p->fwd_dst && add) ? carve.Add(p->user_dst.get_size()) : 0;
    const size_t o_scr = carve.Add(pd.scratchpad_desc().get_size());
    char* tmp = static_cast<char*>(ctx.requested[0].get_space(carve.Total()));

    dnnl::stream s(CpuEngine());
    const auto& eng = CpuEngine();
    memory src_user(p->user_src, eng, const_cast<float*>(data));
    memory w_user(p->user_w, eng, const_cast<float*>(weight));
    memory src = src_user, w = w_user;
    if (p->fwd_src) {
      src = memory(pd.src_desc(), eng, tmp + o_src);
      p->fwd_src.prim->execute(s, src_user, src);
    }
    if (p->fwd_w) {
      w = memory(pd.weights_desc(), eng, tmp + o_w);
      p->fwd_w.prim->execute(s, w_user, w);
    }
    memory dst(pd.dst_desc(), eng, dst_tmp ? static_cast<void*>(tmp + o_dst) : out);
    memory scratch(pd.scratchpad_desc(), eng, tmp + o_scr);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_WEIGHTS, w},
                                         {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratch}};
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(p->user_bias, eng, const_cast<float*>(bias)));
    p->fwd->execute(s, args);
    if (p->fwd_dst) {
      float* user = add ? reinterpret_cast<float*>(tmp + o_add) : out;
      memory u(p->user_dst, eng, user);
      p->fwd_dst.prim->execute(s, dst, u);
    }
    s.wait();
    if (add) {
      const float* res = p->fwd_dst ? reinterpret_cast<const float*>(tmp + o_add)
                                    : reinterpret_cast<const float*>(tmp + o_dst);
      AddInto(out, res, Count(p->user_dst));
    }
  } catch (const dnnl::error& e) {
    Fail("Convolution", g, e);
  }
}

void DnnlConvBackward(const ConvGeom& g, const OpContext& ctx, const float* ograd,
                      const float* data, const float* weight, float* gdata, OpReqType req_data,
                      float* gweight, OpReqType req_weight, float* gbias, OpReqType req_bias) {
  TS_DCHECK(!(g.src_blocked || g.dst_blocked || g.dsrc_blocked) ||
            (nn_dnnl::Available() && g.spatial == 2));
  if (!nn_dnnl::Available() || g.spatial == 3)
    return RefConvBackward<float>(g, ograd, data, weight, gdata, req_data, gweight, req_weight,
                                  gbias, req_bias, ColSpace<float>(ctx, g),
                                  ctx.run_ctx.omp_threads);
  const bool want_data = req_data != kNullOp;
  const bool want_w = req_weight != kNullOp || (gbias && req_bias != kNullOp);
  if (!want_data && !want_w) return;
  try {
    nn_dnnl::ScopedOmpThreads threads(ctx.run_ctx.omp_threads);
    std::shared_ptr<ConvPrims> p = Lookup(g, ctx.run_ctx.omp_threads);
    std::call_once(p->bwd_once, [&] { CreateBackward(g, p.get()); });
    const auto& eng = CpuEngine();
    const size_t n_src = Count(p->user_src), n_w = Count(p->user_w);

    // Only the buffers of the passes that run.
    Carver carve;
    auto take = [&carve](bool need, size_t bytes) { return need ? carve.Add(bytes) : size_t{0}; };
    // Backward data.
    const bool d_add = req_data == kAddTo;
    const size_t o_ddst = take(want_data && p->bd_ddst, p->bd_ddst.to.get_size());
    const size_t o_bdw = take(want_data && p->bd_w, p->bd_w.to.get_size());
    const bool dsrc_tmp = p->bd_dsrc || d_add;
    const size_t o_dsrc =
        take(want_data && dsrc_tmp, std::max(p->user_dsrc.get_size(), p->bd_dsrc.from.get_size()));
    const size_t o_dadd = take(want_data && p->bd_dsrc && d_add, p->user_dsrc.get_size());
    const size_t o_bds = take(want_data, p->bd_scratch.get_size());
    // Backward weights.
    const bool w_write = req_weight != kNullOp;
    const size_t o_bsrc = take(want_w && p->bw_src, p->bw_src.to.get_size());
    // The weights pass reads the data pass's reordered ograd when both run
    // and want the same layout.
    const bool share_ddst = want_data && p->bd_ddst && p->bw_ddst && p->bd_ddst.to == p->bw_ddst.to;
    const size_t o_wddst = take(want_w && p->bw_ddst && !share_ddst, p->bw_ddst.to.get_size());
    const bool dw_tmp = p->bw_dw || req_weight == kAddTo || req_weight == kNullOp;
    const size_t o_dw =
        take(want_w && dw_tmp, std::max(p->bw_dw.from.get_size(), p->user_w.get_size()));
    const size_t o_dwadd = take(want_w && p->bw_dw && req_weight == kAddTo, p->user_w.get_size());
    const size_t o_db = take(want_w && g.bias, size_t(g.f) * sizeof(float));
    const size_t o_bws = take(want_w, p->bw_scratch.get_size());
    char* tmp = static_cast<char*>(ctx.requested[0].get_space(carve.Total()));

    dnnl::stream s(eng);
    memory ddst_user(p->user_dst, eng, const_cast<float*>(ograd));

    if (want_data) {
      memory ddst = ddst_user, w(p->user_w, eng, const_cast<float*>(weight));
      if (p->bd_ddst) {
        ddst = memory(p->bd_ddst.to, eng, tmp + o_ddst);
        p->bd_ddst.prim->execute(s, ddst_user, ddst);
      }
      if (p->bd_w) {
        memory wu = w;
        w = memory(p->bd_w.to, eng, tmp + o_bdw);
        p->bd_w.prim->execute(s, wu, w);
      }
      memory dsrc(p->bd_dsrc.from, eng, dsrc_tmp ? static_cast<void*>(tmp + o_dsrc) : gdata);
      p->bwd_data->execute(s, {{DNNL_ARG_DIFF_DST, ddst},
                               {DNNL_ARG_WEIGHTS, w},
                               {DNNL_ARG_DIFF_SRC, dsrc},
                               {DNNL_ARG_SCRATCHPAD, memory(p->bd_scratch, eng, tmp + o_bds)}});
      if (p->bd_dsrc) {
        memory u(p->user_dsrc, eng, d_add ? static_cast<void*>(tmp + o_dadd) : gdata);
        p->bd_dsrc.prim->execute(s, dsrc, u);
      }
    }
    if (want_w) {
      memory src(p->user_src, eng, const_cast<float*>(data)), ddst = ddst_user;
      if (p->bw_src) {
        memory su = src;
        src = memory(p->bw_src.to, eng, tmp + o_bsrc);
        p->bw_src.prim->execute(s, su, src);
      }
      if (share_ddst) {
        ddst = memory(p->bw_ddst.to, eng, tmp + o_ddst);
      } else if (p->bw_ddst) {
        ddst = memory(p->bw_ddst.to, eng, tmp + o_wddst);
        p->bw_ddst.prim->execute(s, ddst_user, ddst);
      }
      memory dw(p->bw_dw.from, eng, dw_tmp ? static_cast<void*>(tmp + o_dw) : gweight);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, src},
          {DNNL_ARG_DIFF_DST, ddst},
          {DNNL_ARG_DIFF_WEIGHTS, dw},
          {DNNL_ARG_SCRATCHPAD, memory(p->bw_scratch, eng, tmp + o_bws)}};
      if (g.bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(p->bw_dbias, eng, tmp + o_db));
      p->bwd_w->execute(s, args);
      if (p->bw_dw && w_write) {
        const bool w_add = req_weight == kAddTo;
        memory u(p->user_w, eng, w_add ? static_cast<void*>(tmp + o_dwadd) : gweight);
        p->bw_dw.prim->execute(s, dw, u);
      }
    }
    s.wait();

    if (want_data && d_add)
      AddInto(gdata, reinterpret_cast<const float*>(tmp + (p->bd_dsrc ? o_dadd : o_dsrc)), n_src);
    if (w_write && req_weight == kAddTo)
      AddInto(gweight, reinterpret_cast<const float*>(tmp + (p->bw_dw ? o_dwadd : o_dw)), n_w);
    if (gbias && req_bias != kNullOp) {
      const float* db = reinterpret_cast<const float*>(tmp + o_db);
      if (req_bias == kAddTo)
        AddInto(gbias, db, size_t(g.f));
      else
        std::memcpy(gbias, db, size_t(g.f) * sizeof(float));
    }
  } catch (const dnnl::error& e) {
    Fail("_backward_Convolution", g, e);
  }
}

}  // namespace tessera::op
