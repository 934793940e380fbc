// oneDNN called directly against Tessera's float32 nn layers: the measurement
// behind which of them run on oneDNN (LRN forward, softmax and pooling
// backward other than 2x2 stride 2 do; BatchNorm does not: its own loops were
// faster). Forward and backward, training mode,
// on typical CNN shapes:
//   - max pooling 2x2 stride 2 and 3x3 stride 2 pad 1: Pooling in training
//     against forward_training (forward_inference timed beside it) and
//     _backward_Pooling, on the workspace its forward kept, against
//     pooling_backward on forward_training's workspace;
//   - BatchNorm with batch statistics (fix_gamma=False) and _backward_BatchNorm
//     against batch_normalization_forward (training, use_scale_shift) and
//     backward (prop_kind::backward: data, scale and shift);
//   - LRN across channels, nsize 5, and _backward_LRN against lrn_forward
//     (training) and lrn_backward;
//   - softmax along the last axis and _backward_softmax against
//     softmax_forward (training) and softmax_backward.
// Tessera's ops run through Invoke on preallocated NDArrays, a wait after
// each call. oneDNN runs on the same plain (nchw, nc) data: primitives
// created once, on the plain layout (`onednn`) and, for the 4-D ops, on the
// blocked nChw16c layout with reorders in and out counted (`onednn_blocked`),
// both on the op's thread count. Interleaved repetitions, medians; calls
// that take less than ~2 ms are repeated inside one sample and reported per
// call. Prints `name: value unit` lines (ratio: tessera / onednn; fwd_bwd:
// forward plus backward, the cost of a training step); the
// chosen oneDNN implementations and the largest differences between the two
// results go to stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "engine/scheduler/engine.h"

using namespace tessera;

namespace {

using Clock = std::chrono::steady_clock;
using memory = dnnl::memory;
using Tag = memory::format_tag;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;

int g_threads = 1;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const dnnl::engine& Eng() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& Stream() {
  static dnnl::stream s(Eng());
  return s;
}

std::string DimsName(const Dims& d) {
  std::string r;
  for (size_t i = 0; i < d.size(); ++i) r += (i ? "x" : "") + std::to_string(d[i]);
  return r;
}

int64_t Numel(const Dims& d) {
  int64_t n = 1;
  for (auto v : d) n *= v;
  return n;
}

std::vector<float> Random(int64_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = u(gen);
  return v;
}

NDArray FromHost(const Dims& d, const std::vector<float>& v) {
  NDArray a(Shape(std::vector<int64_t>(d.begin(), d.end())), Context::CPU());
  a.SyncCopyFromCPU(v.data(), v.size());
  return a;
}

NDArray Empty(const Dims& d) {
  return NDArray(Shape(std::vector<int64_t>(d.begin(), d.end())), Context::CPU());
}

void Wait() {
  engine::Engine::Get()->WaitForAll();
}

// Largest |tessera - onednn| over an output, to stderr: both sides compute
// the same thing.
void Compare(const std::string& what, const NDArray& ours, const std::vector<float>& theirs) {
  std::vector<float> h(theirs.size());
  ours.SyncCopyToCPU(h.data(), h.size());
  double m = 0;
  for (size_t i = 0; i < h.size(); ++i) m = std::max(m, double(std::fabs(h[i] - theirs[i])));
  std::fprintf(stderr, "check %s: max |tessera - onednn| = %.3g\n", what.c_str(), m);
}

void Impl(const std::string& what, const dnnl::primitive_desc_base& pd) {
  std::fprintf(stderr, "impl %s: %s, workspace %zu bytes\n", what.c_str(), pd.impl_info_str(),
               pd.workspace_desc().get_size());
}

// A user (plain) buffer and the memory a primitive wants for it: the same
// memory when the layouts agree, else a second buffer and the reorders.
struct Port {
  memory user, prim;
  dnnl::reorder to_prim, to_user;
  bool same = true;
  Port() = default;
  Port(const memory& u, const memory::desc& want) : user(u) {
    same = u.get_desc() == want;
    if (same) {
      prim = u;
      return;
    }
    prim = memory(want, Eng());
    to_prim = dnnl::reorder(user, prim);
    to_user = dnnl::reorder(prim, user);
  }
  const memory& In() {
    if (!same) to_prim.execute(Stream(), user, prim);
    return prim;
  }
  void Out() {
    if (!same) to_user.execute(Stream(), prim, user);
  }
};

memory UserMem(const Dims& d, Tag tag, std::vector<float>& v) {
  return memory(memory::desc(d, kF32, tag), Eng(), v.data());
}

// One row of figures: Tessera's call and oneDNN's variants (plain, blocked).
struct Item {
  std::string name;
  std::function<void()> tessera;                                        // may be empty
  std::vector<std::pair<std::string, std::function<void()>>> variants;  // suffix, call
};

void RunOnednn(const std::function<void()>& fn) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(g_threads);
  fn();
  Stream().wait();
  omp_set_num_threads(saved);
}

// Warm-up, then `reps` interleaved samples per call; each sample runs the
// call `inner` times, chosen so that a sample takes >= ~2 ms.
void Run(const std::string& prefix, std::vector<Item>& items, int reps) {
  struct Slot {
    std::string name;
    std::function<void()> fn;
    int inner = 1;
    std::vector<double> t;
  };
  std::vector<std::vector<Slot>> slots;
  for (auto& it : items) {
    std::vector<Slot> row;
    if (it.tessera)
      row.push_back({prefix + "_" + it.name + "_tessera",
                     [f = it.tessera] {
                       f();
                       Wait();
                     },
                     1,
                     {}});
    for (auto& [suffix, f] : it.variants)
      row.push_back(
          {prefix + "_" + it.name + "_onednn" + suffix, [f = f] { RunOnednn(f); }, 1, {}});
    for (auto& s : row) {
      s.fn();
      auto t0 = Clock::now();
      s.fn();
      const double t = Seconds(t0);
      s.inner = std::clamp(static_cast<int>(2e-3 / std::max(t, 1e-7)), 1, 1000);
    }
    slots.push_back(std::move(row));
  }
  for (int r = 0; r < reps; ++r)
    for (auto& row : slots)
      for (auto& s : row) {
        auto t0 = Clock::now();
        for (int i = 0; i < s.inner; ++i) s.fn();
        s.t.push_back(Seconds(t0) / s.inner);
      }
  for (size_t k = 0; k < items.size(); ++k) {
    auto& row = slots[k];
    for (auto& s : row) std::printf("%s: %.4g ms\n", s.name.c_str(), Median(s.t) * 1e3);
    if (!items[k].tessera) continue;
    const double ours = Median(row[0].t);
    for (size_t j = 1; j < row.size(); ++j)
      std::printf("%s_%s_ratio%s: %.3f x\n", prefix.c_str(), items[k].name.c_str(),
                  items[k].variants[j - 1].first.c_str(), ours / Median(row[j].t));
  }
  // A training step: forward (oneDNN's forward_training) plus backward.
  std::vector<double> ours(2, -1), theirs[2];
  for (size_t k = 0; k < items.size(); ++k) {
    const int at = items[k].name == "forward" ? 0 : items[k].name == "backward" ? 1 : -1;
    if (at < 0 || !items[k].tessera) continue;
    ours[at] = Median(slots[k][0].t);
    for (size_t j = 1; j < slots[k].size(); ++j) theirs[at].push_back(Median(slots[k][j].t));
  }
  if (ours[0] >= 0 && ours[1] >= 0)
    for (size_t j = 0; j < theirs[0].size(); ++j)
      std::printf("%s_fwd_bwd_ratio%s: %.3f x\n", prefix.c_str(),
                  items[0].variants[j].first.c_str(),
                  (ours[0] + ours[1]) / (theirs[0][j] + theirs[1][j]));
  std::fflush(stdout);
}

// ---- pooling ----

struct PoolSpec {
  Dims x;
  int64_t k, s, p;
};

struct PoolDnnl {
  Port x, y, dy, dx;
  memory ws;
  dnnl::pooling_forward train, infer;
  dnnl::pooling_backward bwd;
  PoolDnnl(const PoolSpec& sp, const Dims& yd, Tag fmt, std::vector<float>& hx,
           std::vector<float>& hy, std::vector<float>& hdy, std::vector<float>& hdx,
           const std::string& label) {
    const int64_t oh = yd[2], ow = yd[3];
    const int64_t pr_h = (oh - 1) * sp.s + sp.k - sp.x[2] - sp.p;
    const int64_t pr_w = (ow - 1) * sp.s + sp.k - sp.x[3] - sp.p;
    const Dims st{sp.s, sp.s}, ke{sp.k, sp.k}, pl{sp.p, sp.p}, pr{pr_h, pr_w};
    const memory::desc mx(sp.x, kF32, fmt), my(yd, kF32, fmt);
    const auto alg = dnnl::algorithm::pooling_max;
    dnnl::pooling_forward::primitive_desc tpd(
        {dnnl::prop_kind::forward_training, alg, mx, my, st, ke, pl, pr}, Eng());
    dnnl::pooling_forward::primitive_desc ipd(
        {dnnl::prop_kind::forward_inference, alg, mx, my, st, ke, pl, pr}, Eng());
    dnnl::pooling_backward::primitive_desc bpd({alg, mx, my, st, ke, pl, pr}, Eng(), tpd);
    Impl(label + " forward_training", tpd);
    Impl(label + " backward", bpd);
    train = dnnl::pooling_forward(tpd);
    infer = dnnl::pooling_forward(ipd);
    bwd = dnnl::pooling_backward(bpd);
    ws = memory(tpd.workspace_desc(), Eng());
    x = Port(UserMem(sp.x, Tag::nchw, hx), tpd.src_desc());
    y = Port(UserMem(yd, Tag::nchw, hy), tpd.dst_desc());
    dy = Port(UserMem(yd, Tag::nchw, hdy), bpd.diff_dst_desc());
    dx = Port(UserMem(sp.x, Tag::nchw, hdx), bpd.diff_src_desc());
  }
  void ForwardTraining() {
    train.execute(Stream(),
                  {{DNNL_ARG_SRC, x.In()}, {DNNL_ARG_DST, y.prim}, {DNNL_ARG_WORKSPACE, ws}});
    y.Out();
  }
  void ForwardInference() {
    infer.execute(Stream(), {{DNNL_ARG_SRC, x.In()}, {DNNL_ARG_DST, y.prim}});
    y.Out();
  }
  void Backward() {
    bwd.execute(
        Stream(),
        {{DNNL_ARG_DIFF_DST, dy.In()}, {DNNL_ARG_DIFF_SRC, dx.prim}, {DNNL_ARG_WORKSPACE, ws}});
    dx.Out();
  }
};

void BenchPool(const PoolSpec& sp, int reps) {
  const int64_t oh = (sp.x[2] + 2 * sp.p - sp.k) / sp.s + 1,
                ow = (sp.x[3] + 2 * sp.p - sp.k) / sp.s + 1;
  const Dims yd{sp.x[0], sp.x[1], oh, ow};
  const std::string prefix =
      "pool_max" + std::to_string(sp.k) + "x" + std::to_string(sp.k) +
      (sp.p ? "_s" + std::to_string(sp.s) + "p" + std::to_string(sp.p) : "") + "_" + DimsName(sp.x);
  auto hx = Random(Numel(sp.x), 1), hdy = Random(Numel(yd), 2);
  std::vector<float> hy(hdy.size()), hdx(hx.size());
  PoolDnnl plain(sp, yd, Tag::nchw, hx, hy, hdy, hdx, prefix + " nchw");
  PoolDnnl blocked(sp, yd, Tag::nChw16c, hx, hy, hdy, hdx, prefix + " nChw16c");

  const std::string k = std::to_string(sp.k), s = std::to_string(sp.s), p = std::to_string(sp.p);
  op::ParamDict params{{"kernel", "(" + k + "," + k + ")"},
                       {"stride", "(" + s + "," + s + ")"},
                       {"pad", "(" + p + "," + p + ")"},
                       {"pool_type", "max"}};
  auto fattrs = MakeAttrs("Pooling", params);
  auto battrs = MakeAttrs("_backward_Pooling", params);
  InvokeOptions train;
  train.is_train = true;
  NDArray x = FromHost(sp.x, hx), dy = FromHost(yd, hdy);
  // The forward's outputs: the pooled data and the hidden workspace that
  // the backward reads (made by the first call, reused after).
  std::vector<NDArray> y, dx{Empty(sp.x)};
  Invoke(fattrs, {x}, &y, train);
  auto ours_fwd = [&] { Invoke(fattrs, {x}, &y, train); };
  auto ours_bwd = [&] { Invoke(battrs, {dy, x, y[0], y[1]}, &dx, train); };
  ours_fwd();
  ours_bwd();
  Wait();
  RunOnednn([&] { plain.ForwardTraining(); });
  Compare(prefix + " forward (nchw)", y[0], hy);
  RunOnednn([&] { plain.Backward(); });
  Compare(prefix + " backward (nchw)", dx[0], hdx);
  RunOnednn([&] { blocked.ForwardTraining(); });
  RunOnednn([&] { blocked.Backward(); });
  Compare(prefix + " backward (nChw16c)", dx[0], hdx);

  std::vector<Item> items;
  items.push_back(
      {"forward", ours_fwd, {{"", [&] { plain.ForwardTraining(); }}, {"_blocked", [&] {
                                                                        blocked.ForwardTraining();
                                                                      }}}});
  items.push_back({"forward_inference", nullptr, {{"", [&] { plain.ForwardInference(); }}}});
  items.push_back({"backward", ours_bwd, {{"", [&] { plain.Backward(); }}, {"_blocked", [&] {
                                                                              blocked.Backward();
                                                                            }}}});
  Run(prefix, items, reps);
}

// ---- BatchNorm ----

struct BnDnnl {
  Port x, y, dy, dx;
  memory mean, var, ss, dss;
  dnnl::batch_normalization_forward fwd;
  dnnl::batch_normalization_backward bwd;
  BnDnnl(const Dims& d, Tag fmt, float eps, std::vector<float>& hx, std::vector<float>& hy,
         std::vector<float>& hdy, std::vector<float>& hdx, std::vector<float>& hss,
         std::vector<float>& hdss, const std::string& label) {
    const memory::desc md(d, kF32, fmt);
    const auto flags = dnnl::normalization_flags::use_scale_shift;
    dnnl::batch_normalization_forward::primitive_desc fpd(
        {dnnl::prop_kind::forward_training, md, eps, flags}, Eng());
    dnnl::batch_normalization_backward::primitive_desc bpd(
        {dnnl::prop_kind::backward, md, md, eps, flags}, Eng(), fpd);
    Impl(label + " forward_training", fpd);
    Impl(label + " backward", bpd);
    fwd = dnnl::batch_normalization_forward(fpd);
    bwd = dnnl::batch_normalization_backward(bpd);
    mean = memory(fpd.mean_desc(), Eng());
    var = memory(fpd.variance_desc(), Eng());
    ss = memory(fpd.weights_desc(), Eng(), hss.data());
    dss = memory(bpd.diff_weights_desc(), Eng(), hdss.data());
    x = Port(UserMem(d, Tag::nchw, hx), fpd.src_desc());
    y = Port(UserMem(d, Tag::nchw, hy), fpd.dst_desc());
    dy = Port(UserMem(d, Tag::nchw, hdy), bpd.diff_dst_desc());
    dx = Port(UserMem(d, Tag::nchw, hdx), bpd.diff_src_desc());
  }
  void Forward() {
    fwd.execute(Stream(), {{DNNL_ARG_SRC, x.In()},
                           {DNNL_ARG_DST, y.prim},
                           {DNNL_ARG_MEAN, mean},
                           {DNNL_ARG_VARIANCE, var},
                           {DNNL_ARG_SCALE_SHIFT, ss}});
    y.Out();
  }
  void Backward() {
    bwd.execute(Stream(), {{DNNL_ARG_SRC, x.In()},
                           {DNNL_ARG_DIFF_DST, dy.In()},
                           {DNNL_ARG_MEAN, mean},
                           {DNNL_ARG_VARIANCE, var},
                           {DNNL_ARG_SCALE_SHIFT, ss},
                           {DNNL_ARG_DIFF_SRC, dx.prim},
                           {DNNL_ARG_DIFF_SCALE_SHIFT, dss}});
    dx.Out();
  }
};

void BenchBatchNorm(const Dims& d, int reps) {
  const std::string prefix = "batchnorm_train_" + DimsName(d);
  const int64_t c = d[1];
  const float eps = 1e-3f;
  auto hx = Random(Numel(d), 3, -1.f, 3.f), hdy = Random(Numel(d), 4);
  auto hgamma = Random(c, 5, 0.5f, 1.5f), hbeta = Random(c, 6);
  std::vector<float> hy(hx.size()), hdx(hx.size()), hss(2 * c), hdss(2 * c);
  std::copy(hgamma.begin(), hgamma.end(), hss.begin());
  std::copy(hbeta.begin(), hbeta.end(), hss.begin() + c);
  BnDnnl plain(d, Tag::nchw, eps, hx, hy, hdy, hdx, hss, hdss, prefix + " nchw");
  BnDnnl blocked(d, Tag::nChw16c, eps, hx, hy, hdy, hdx, hss, hdss, prefix + " nChw16c");

  op::ParamDict params{{"fix_gamma", "False"}, {"eps", "0.001"}};
  auto fattrs = MakeAttrs("BatchNorm", params);
  auto battrs = MakeAttrs("_backward_BatchNorm", params);
  InvokeOptions train;
  train.is_train = true;
  const Dims cd{c};
  NDArray x = FromHost(d, hx), dy = FromHost(d, hdy), gamma = FromHost(cd, hgamma),
          beta = FromHost(cd, hbeta), mm = FromHost(cd, std::vector<float>(c, 0.f)),
          mv = FromHost(cd, std::vector<float>(c, 1.f));
  std::vector<NDArray> outs{Empty(d), Empty(cd), Empty(cd)};
  std::vector<NDArray> grads{Empty(d), Empty(cd), Empty(cd)};
  auto ours_fwd = [&] { Invoke(fattrs, {x, gamma, beta, mm, mv}, &outs, train); };
  auto ours_bwd = [&] { Invoke(battrs, {dy, x, gamma, outs[1], outs[2]}, &grads, train); };
  ours_fwd();
  ours_bwd();
  Wait();
  RunOnednn([&] { plain.Forward(); });
  Compare(prefix + " forward (nchw)", outs[0], hy);
  RunOnednn([&] { plain.Backward(); });
  Compare(prefix + " backward data (nchw)", grads[0], hdx);
  Compare(prefix + " backward gamma (nchw)", grads[1],
          std::vector<float>(hdss.begin(), hdss.begin() + c));
  Compare(prefix + " backward beta (nchw)", grads[2],
          std::vector<float>(hdss.begin() + c, hdss.end()));
  RunOnednn([&] { blocked.Forward(); });
  Compare(prefix + " forward (nChw16c)", outs[0], hy);
  RunOnednn([&] { blocked.Backward(); });
  Compare(prefix + " backward data (nChw16c)", grads[0], hdx);

  std::vector<Item> items;
  items.push_back({"forward", ours_fwd, {{"", [&] { plain.Forward(); }}, {"_blocked", [&] {
                                                                            blocked.Forward();
                                                                          }}}});
  items.push_back({"backward", ours_bwd, {{"", [&] { plain.Backward(); }}, {"_blocked", [&] {
                                                                              blocked.Backward();
                                                                            }}}});
  Run(prefix, items, reps);
}

// ---- LRN ----

struct LrnDnnl {
  Port x, y, dy, dx;
  memory ws;
  dnnl::lrn_forward train, infer;
  dnnl::lrn_backward bwd;
  LrnDnnl(const Dims& d, Tag fmt, int64_t n, float alpha, float beta, float k,
          std::vector<float>& hx, std::vector<float>& hy, std::vector<float>& hdy,
          std::vector<float>& hdx, const std::string& label) {
    const memory::desc md(d, kF32, fmt);
    const auto alg = dnnl::algorithm::lrn_across_channels;
    dnnl::lrn_forward::primitive_desc tpd(
        {dnnl::prop_kind::forward_training, alg, md, n, alpha, beta, k}, Eng());
    dnnl::lrn_forward::primitive_desc ipd(
        {dnnl::prop_kind::forward_inference, alg, md, n, alpha, beta, k}, Eng());
    dnnl::lrn_backward::primitive_desc bpd({alg, md, md, n, alpha, beta, k}, Eng(), tpd);
    Impl(label + " forward_training", tpd);
    Impl(label + " backward", bpd);
    train = dnnl::lrn_forward(tpd);
    infer = dnnl::lrn_forward(ipd);
    bwd = dnnl::lrn_backward(bpd);
    ws = memory(tpd.workspace_desc(), Eng());
    x = Port(UserMem(d, Tag::nchw, hx), tpd.src_desc());
    y = Port(UserMem(d, Tag::nchw, hy), tpd.dst_desc());
    dy = Port(UserMem(d, Tag::nchw, hdy), bpd.diff_dst_desc());
    dx = Port(UserMem(d, Tag::nchw, hdx), bpd.diff_src_desc());
  }
  void ForwardTraining() {
    train.execute(Stream(),
                  {{DNNL_ARG_SRC, x.In()}, {DNNL_ARG_DST, y.prim}, {DNNL_ARG_WORKSPACE, ws}});
    y.Out();
  }
  void ForwardInference() {
    infer.execute(Stream(), {{DNNL_ARG_SRC, x.In()}, {DNNL_ARG_DST, y.prim}});
    y.Out();
  }
  void Backward() {
    bwd.execute(Stream(), {{DNNL_ARG_SRC, x.In()},
                           {DNNL_ARG_DIFF_DST, dy.In()},
                           {DNNL_ARG_WORKSPACE, ws},
                           {DNNL_ARG_DIFF_SRC, dx.prim}});
    dx.Out();
  }
};

void BenchLrn(const Dims& d, int reps) {
  const std::string prefix = "lrn_across5_" + DimsName(d);
  const int64_t n = 5;
  const float alpha = 1e-4f, beta = 0.75f, k = 2.f;
  auto hx = Random(Numel(d), 7, -3.f, 3.f), hdy = Random(Numel(d), 8);
  std::vector<float> hy(hx.size()), hdx(hx.size());
  LrnDnnl plain(d, Tag::nchw, n, alpha, beta, k, hx, hy, hdy, hdx, prefix + " nchw");
  LrnDnnl blocked(d, Tag::nChw16c, n, alpha, beta, k, hx, hy, hdy, hdx, prefix + " nChw16c");

  op::ParamDict params{{"nsize", "5"}, {"alpha", "0.0001"}, {"beta", "0.75"}, {"knorm", "2"}};
  auto fattrs = MakeAttrs("LRN", params);
  auto battrs = MakeAttrs("_backward_LRN", params);
  InvokeOptions train;
  train.is_train = true;
  NDArray x = FromHost(d, hx), dy = FromHost(d, hdy);
  std::vector<NDArray> y{Empty(d)}, dx{Empty(d)};
  auto ours_fwd = [&] { Invoke(fattrs, {x}, &y, train); };
  auto ours_bwd = [&] { Invoke(battrs, {dy, x}, &dx, train); };
  ours_fwd();
  ours_bwd();
  Wait();
  RunOnednn([&] { plain.ForwardTraining(); });
  Compare(prefix + " forward (nchw)", y[0], hy);
  RunOnednn([&] { plain.Backward(); });
  Compare(prefix + " backward (nchw)", dx[0], hdx);
  RunOnednn([&] { blocked.ForwardTraining(); });
  Compare(prefix + " forward (nChw16c)", y[0], hy);
  RunOnednn([&] { blocked.Backward(); });
  Compare(prefix + " backward (nChw16c)", dx[0], hdx);

  std::vector<Item> items;
  items.push_back(
      {"forward", ours_fwd, {{"", [&] { plain.ForwardTraining(); }}, {"_blocked", [&] {
                                                                        blocked.ForwardTraining();
                                                                      }}}});
  items.push_back({"forward_inference",
                   nullptr,
                   {{"", [&] { plain.ForwardInference(); }},
                    {"_blocked", [&] { blocked.ForwardInference(); }}}});
  items.push_back({"backward", ours_bwd, {{"", [&] { plain.Backward(); }}, {"_blocked", [&] {
                                                                              blocked.Backward();
                                                                            }}}});
  Run(prefix, items, reps);
}

// ---- softmax ----

void BenchSoftmax(const Dims& d, int reps) {
  const std::string prefix = "softmax_lastaxis_" + DimsName(d);
  auto hx = Random(Numel(d), 9, -4.f, 4.f), hdy = Random(Numel(d), 10);
  std::vector<float> hy(hx.size()), hdx(hx.size());
  const memory::desc md(d, kF32, Tag::nc);
  const int axis = static_cast<int>(d.size()) - 1;
  dnnl::softmax_forward::primitive_desc fpd({dnnl::prop_kind::forward_training, md, axis}, Eng());
  dnnl::softmax_backward::primitive_desc bpd({md, md, axis}, Eng(), fpd);
  Impl(prefix + " forward_training", fpd);
  Impl(prefix + " backward", bpd);
  dnnl::softmax_forward fwd(fpd);
  dnnl::softmax_backward bwd(bpd);
  memory mx(md, Eng(), hx.data()), my(md, Eng(), hy.data()), mdy(md, Eng(), hdy.data()),
      mdx(md, Eng(), hdx.data());
  auto dnnl_fwd = [&] { fwd.execute(Stream(), {{DNNL_ARG_SRC, mx}, {DNNL_ARG_DST, my}}); };
  auto dnnl_bwd = [&] {
    bwd.execute(Stream(), {{DNNL_ARG_DST, my}, {DNNL_ARG_DIFF_DST, mdy}, {DNNL_ARG_DIFF_SRC, mdx}});
  };

  auto fattrs = MakeAttrs("softmax", {});
  auto battrs = MakeAttrs("_backward_softmax", {});
  InvokeOptions train;
  train.is_train = true;
  NDArray x = FromHost(d, hx), dy = FromHost(d, hdy);
  std::vector<NDArray> y{Empty(d)}, dx{Empty(d)};
  auto ours_fwd = [&] { Invoke(fattrs, {x}, &y, train); };
  auto ours_bwd = [&] { Invoke(battrs, {dy, y[0]}, &dx, train); };
  ours_fwd();
  ours_bwd();
  Wait();
  RunOnednn(dnnl_fwd);
  Compare(prefix + " forward", y[0], hy);
  RunOnednn(dnnl_bwd);
  Compare(prefix + " backward", dx[0], hdx);

  std::vector<Item> items;
  items.push_back({"forward", ours_fwd, {{"", dnnl_fwd}}});
  items.push_back({"backward", ours_bwd, {{"", dnnl_bwd}}});
  Run(prefix, items, reps);
}

}  // namespace

int main() {
  g_threads = engine::Engine::Get()->OpThreads();
  const int reps =
      std::getenv("NN_DNNL_BENCH_REPS") ? std::atoi(std::getenv("NN_DNNL_BENCH_REPS")) : 7;
  std::printf(
      "nn_dnnl_bench: float32 fwd/bwd (training) Tessera CPU ops vs oneDNN %d.%d.%d on plain nchw "
      "(`onednn`) and nChw16c with reorders (`onednn_blocked`), %d threads, median of %d "
      "interleaved reps, ms per call, ratio = tessera / onednn\n",
      dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch, g_threads, reps);
  BenchPool({{64, 20, 24, 24}, 2, 2, 0}, reps);
  BenchPool({{32, 64, 56, 56}, 2, 2, 0}, reps);
  BenchPool({{32, 64, 56, 56}, 3, 2, 1}, reps);
  BenchBatchNorm({32, 64, 56, 56}, reps);
  BenchBatchNorm({64, 20, 24, 24}, reps);
  BenchLrn({32, 64, 56, 56}, reps);
  BenchSoftmax({100, 10}, reps);
  BenchSoftmax({64, 1000}, reps);
  BenchSoftmax({1024, 1024}, reps);
  return 0;
}
