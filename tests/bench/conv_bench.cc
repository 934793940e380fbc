// Convolution benchmark, float32, forward + backward (data, weights, bias):
// 3x3, 64 -> 64 channels, batch 32, 56x56, pad 1 (a large map, where the op
// runs oneDNN), and 3x3, 512 -> 512 channels, batch 16, 2x2, pad 1 (ResNet's
// last stage at 64x64 input, where the op times oneDNN against its batched
// GEMM and keeps the faster per pass). Tessera's Convolution and
// _backward_Convolution through Invoke (preallocated outputs, a wait after
// each step) against oneDNN called directly on the same plain-layout (nchw,
// oihw) buffers: primitives created once with `any` formats, reorders in and
// out where the primitive's layout differs. Prints `name: value unit` lines;
// medians of interleaved runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "engine/scheduler/engine.h"

using namespace tessera;

namespace {

using Clock = std::chrono::steady_clock;

struct Geom {
  const char* name;
  int64_t n, c, f, h, w, k;  // stride 1, pad (k - 1) / 2: the map keeps its size
};

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Direct {
  using memory = dnnl::memory;
  using Tag = memory::format_tag;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream s{eng};
  std::vector<float> x, w, b, y, dy, dx, dw, db;
  memory ux, uw, ub, uy, udy, udx, udw, udb;
  memory px, pw, py, bdy, bw, bdx, wx, wdy, wdw;
  std::unique_ptr<dnnl::convolution_forward::primitive_desc> fpd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_w;
  memory::desc bd_dx, bw_dw;

  explicit Direct(const Geom& g) {
    const int64_t N = g.n, C = g.c, F = g.f, H = g.h, W = g.w, K = g.k, P = (g.k - 1) / 2;
    x.assign(N * C * H * W, 0.5f);
    w.assign(F * C * K * K, 0.01f);
    b.assign(F, 0.1f);
    y.resize(N * F * H * W);
    dy.assign(N * F * H * W, 0.25f);
    dx.resize(x.size());
    dw.resize(w.size());
    db.resize(F);
    const auto f32 = memory::data_type::f32;
    memory::dims sx{N, C, H, W}, sw{F, C, K, K}, sy{N, F, H, W}, st{1, 1}, dl{0, 0}, pd{P, P};
    memory::desc mx(sx, f32, Tag::nchw), mw(sw, f32, Tag::oihw), my(sy, f32, Tag::nchw),
        mb({F}, f32, Tag::x);
    ux = memory(mx, eng, x.data());
    uw = memory(mw, eng, w.data());
    ub = memory(mb, eng, b.data());
    uy = memory(my, eng, y.data());
    udy = memory(my, eng, dy.data());
    udx = memory(mx, eng, dx.data());
    udw = memory(mw, eng, dw.data());
    udb = memory(mb, eng, db.data());
    memory::desc ax(sx, f32, Tag::any), aw(sw, f32, Tag::any), ay(sy, f32, Tag::any);
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::convolution_direct, ax, aw, mb, ay, st, dl,
                                       pd, pd);
    fpd = std::make_unique<dnnl::convolution_forward::primitive_desc>(fd, eng);
    fwd = dnnl::convolution_forward(*fpd);
    px = memory(fpd->src_desc(), eng);
    pw = memory(fpd->weights_desc(), eng);
    py = memory(fpd->dst_desc(), eng);
    dnnl::convolution_backward_data::desc dd(dnnl::algorithm::convolution_direct, ax, aw, ay, st,
                                             dl, pd, pd);
    dnnl::convolution_backward_data::primitive_desc dpd(dd, eng, *fpd);
    bwd_data = dnnl::convolution_backward_data(dpd);
    bdy = memory(dpd.diff_dst_desc(), eng);
    bw = memory(dpd.weights_desc(), eng);
    bdx = memory(dpd.diff_src_desc(), eng);
    dnnl::convolution_backward_weights::desc wd(dnnl::algorithm::convolution_direct, ax, aw, mb, ay,
                                                st, dl, pd, pd);
    dnnl::convolution_backward_weights::primitive_desc wpd(wd, eng, *fpd);
    bwd_w = dnnl::convolution_backward_weights(wpd);
    wx = memory(wpd.src_desc(), eng);
    wdy = memory(wpd.diff_dst_desc(), eng);
    wdw = memory(wpd.diff_weights_desc(), eng);
  }

  // Reorder when the layouts differ, else use the user memory itself.
  memory In(const memory& user, const memory& prim) {
    if (user.get_desc() == prim.get_desc()) return user;
    dnnl::reorder(user, prim).execute(s, const_cast<memory&>(user), const_cast<memory&>(prim));
    return prim;
  }

  void Forward() {
    memory sx = In(ux, px), sw = In(uw, pw);
    const bool ry = uy.get_desc() != py.get_desc();
    memory dst = ry ? py : uy;
    fwd.execute(
        s, {{DNNL_ARG_SRC, sx}, {DNNL_ARG_WEIGHTS, sw}, {DNNL_ARG_BIAS, ub}, {DNNL_ARG_DST, dst}});
    if (ry) dnnl::reorder(py, uy).execute(s, py, uy);
    s.wait();
  }
  void Backward() {
    memory sdy = In(udy, bdy), sw = In(uw, bw);
    const bool rx = udx.get_desc() != bdx.get_desc();
    memory ddx = rx ? bdx : udx;
    bwd_data.execute(s,
                     {{DNNL_ARG_DIFF_DST, sdy}, {DNNL_ARG_WEIGHTS, sw}, {DNNL_ARG_DIFF_SRC, ddx}});
    if (rx) dnnl::reorder(bdx, udx).execute(s, bdx, udx);
    memory sx = In(ux, wx), sdy2 = In(udy, wdy);
    const bool rw = udw.get_desc() != wdw.get_desc();
    memory ddw = rw ? wdw : udw;
    bwd_w.execute(s, {{DNNL_ARG_SRC, sx},
                      {DNNL_ARG_DIFF_DST, sdy2},
                      {DNNL_ARG_DIFF_WEIGHTS, ddw},
                      {DNNL_ARG_DIFF_BIAS, udb}});
    if (rw) dnnl::reorder(wdw, udw).execute(s, wdw, udw);
    s.wait();
  }
};

std::string Dims(std::initializer_list<int64_t> d) {
  std::string s = "(";
  for (int64_t v : d) s += std::to_string(v) + ",";
  s.back() = ')';
  return s;
}

void Bench(const Geom& gm) {
  const int threads = engine::Engine::Get()->OpThreads();
  Direct d(gm);
  const int64_t N = gm.n, C = gm.c, F = gm.f, H = gm.h, W = gm.w, K = gm.k, P = (gm.k - 1) / 2;
  NDArray x = Invoke("_ones", {}, {{"shape", Dims({N, C, H, W})}})[0];
  NDArray w = Invoke("_ones", {}, {{"shape", Dims({F, C, K, K})}})[0];
  NDArray b = Invoke("_zeros", {}, {{"shape", Dims({F})}})[0];
  NDArray dy = Invoke("_ones", {}, {{"shape", Dims({N, F, H, W})}})[0];
  op::ParamDict p{
      {"kernel", Dims({K, K})}, {"num_filter", std::to_string(F)}, {"pad", Dims({P, P})}};
  auto fwd_attrs = MakeAttrs("Convolution", p);
  auto bwd_attrs = MakeAttrs("_backward_Convolution", p);
  std::vector<NDArray> y{NDArray(Shape{N, F, H, W}, Context::CPU())};
  std::vector<NDArray> g{NDArray(Shape{N, C, H, W}, Context::CPU()),
                         NDArray(Shape{F, C, K, K}, Context::CPU()),
                         NDArray(Shape{F}, Context::CPU())};
  auto ours_fwd = [&] {
    Invoke(fwd_attrs, {x, w, b}, &y);
    engine::Engine::Get()->WaitForAll();
  };
  auto ours_bwd = [&] {
    Invoke(bwd_attrs, {dy, x, w}, &g);
    engine::Engine::Get()->WaitForAll();
  };
  // oneDNN runs on the op's thread count, as the op does.
  auto direct = [&](auto fn) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    fn();
    omp_set_num_threads(saved);
  };
  // Warm up (primitive creation, first-touch).
  ours_fwd();
  ours_bwd();
  direct([&] { d.Forward(); });
  direct([&] { d.Backward(); });
  const int reps = std::getenv("CONV_BENCH_REPS") ? std::atoi(std::getenv("CONV_BENCH_REPS")) : 7;
  std::vector<double> of, ob, df, db;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    ours_fwd();
    of.push_back(Seconds(t0));
    t0 = Clock::now();
    ours_bwd();
    ob.push_back(Seconds(t0));
    t0 = Clock::now();
    direct([&] { d.Forward(); });
    df.push_back(Seconds(t0));
    t0 = Clock::now();
    direct([&] { d.Backward(); });
    db.push_back(Seconds(t0));
  }
  const double mof = Median(of), mob = Median(ob), mdf = Median(df), mdb = Median(db);
  std::printf("%s_forward_tessera: %.3f ms\n", gm.name, mof * 1e3);
  std::printf("%s_forward_onednn: %.3f ms\n", gm.name, mdf * 1e3);
  std::printf("%s_backward_tessera: %.3f ms\n", gm.name, mob * 1e3);
  std::printf("%s_backward_onednn: %.3f ms\n", gm.name, mdb * 1e3);
  std::printf("%s_fwd_bwd_ratio: %.3f x\n", gm.name, (mof + mob) / (mdf + mdb));
}

}  // namespace

int main() {
  Bench({"conv3x3_64_b32_56", 32, 64, 64, 56, 56, 3});
  Bench({"conv3x3_512_b16_2", 16, 512, 512, 2, 2, 3});
  return 0;
}
