// Convolution and Deconvolution, and their gradients, on the GPU through
// cuDNN. A deconvolution is the data gradient of the convolution
// DeconvGeom describes (deconvolution.cc), so it runs that convolution's
// passes with the roles swapped: forward = backward-data, data gradient =
// forward, weight gradient = backward-filter with data and output gradient
// exchanged; its bias is per channel of the convolution's data. For each shape (the
// geometry, dtype, device, cudnn_tune and workspace limit) a plan holds the
// descriptors and the algorithm of each pass, chosen once and kept for the
// process's life, as MXNet's cudnn_tune keeps them: measured by cuDNN's Find
// ('limited_workspace', the default, and 'fastest'), or its heuristic
// ('off'). The backward's algorithms are chosen at the first backward, so
// inference never tunes them. Workspace comes from the op's temp space.
//
// float32 is float32-exact (only FMA algorithms) unless
// TESSERA_CUDA_ALLOW_TENSOR_CORE=1 allows TF32; float16 and bfloat16 run on
// tensor cores, summing in float32; float64 in float64. TESSERA_CUDNN_LOG=1
// prints each algorithm chosen.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "engine/base/cuda_utils.h"
#include "engine/resource/cublas_library.h"
#include "engine/resource/cudnn_library.h"
#include "ops/nn/convolution-inl.h"
#include "ops/nn/deconvolution-inl.h"

namespace tessera::op {
namespace {

using resource::Cudnn;
using resource::CudnnApi;

// ---- Types.

struct CudnnTypes {
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
  bool exact_float32;  // accept FMA algorithms only
};

CudnnTypes TypesFor(DType t, const char* who) {
  switch (t) {
    case DType::kFloat32: {
      const bool tf32 = resource::CublasAllowTensorCores();
      return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH,
              !tf32};
    }
    case DType::kFloat64:
      return {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, false};
    case DType::kFloat16:
      return {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false};
    case DType::kBFloat16:
      return {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false};
    default:
      TS_THROW << who << " on the GPU: dtype " << DTypeName(t)
               << " is not supported (float32, float64, float16, bfloat16)";
  }
}

// alpha and beta: double for float64 data, float otherwise.
struct Scalars {
  float f[2];
  double d[2];
  const void* one(bool dbl) const { return dbl ? static_cast<const void*>(&d[1]) : &f[1]; }
  const void* zero(bool dbl) const { return dbl ? static_cast<const void*>(&d[0]) : &f[0]; }
};
constexpr Scalars kScalars{{0.f, 1.f}, {0.0, 1.0}};

const void* Beta(OpReqType req, bool dbl) {
  return req == kAddTo ? kScalars.one(dbl) : kScalars.zero(dbl);
}

// ---- Descriptors, destroyed with the plan.

struct Descriptors {
  const CudnnApi* api = nullptr;
  // b: a bias over y's channels (Convolution's), bx over x's (Deconvolution's).
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr, bx = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  // One per pass: each carries the math type of its own algorithm, so two
  // streams running different passes of one plan never write a shared one.
  cudnnConvolutionDescriptor_t fwd = nullptr, bwd_data = nullptr, bwd_filter = nullptr;
  ~Descriptors() {
    if (!api) return;
    for (cudnnTensorDescriptor_t t : {x, y, b, bx})
      if (t) api->cudnnDestroyTensorDescriptor(t);
    if (w) api->cudnnDestroyFilterDescriptor(w);
    for (cudnnConvolutionDescriptor_t c : {fwd, bwd_data, bwd_filter})
      if (c) api->cudnnDestroyConvolutionDescriptor(c);
  }
};

void SetTensor(const CudnnApi& api, cudnnTensorDescriptor_t d, cudnnDataType_t t,
               std::vector<int> dims, const char* who) {
  std::vector<int> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  TS_CUDNN_CALL(api,
                api.cudnnSetTensorNdDescriptor(d, t, static_cast<int>(dims.size()), dims.data(),
                                               strides.data()),
                who);
}

// cuDNN's shapes of the geometry: 1-D data is 2-D of height one.
std::vector<int> Dims(const ConvGeom& g, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) {
  auto i = [](int64_t v) { return static_cast<int>(v); };
  if (g.spatial == 3) return {i(n), i(c), i(d), i(h), i(w)};
  return {i(n), i(c), i(h), i(w)};
}

void SetConv(const CudnnApi& api, cudnnConvolutionDescriptor_t conv, const ConvGeom& g,
             const CudnnTypes& t, const char* who) {
  auto i = [](int64_t v) { return static_cast<int>(v); };
  std::vector<int> pad{i(g.ph), i(g.pw)}, stride{i(g.sh), i(g.sw)}, dil{i(g.dh), i(g.dw)};
  if (g.spatial == 3) {
    pad.insert(pad.begin(), i(g.pd));
    stride.insert(stride.begin(), i(g.sd));
    dil.insert(dil.begin(), i(g.dd));
  }
  TS_CUDNN_CALL(api,
                api.cudnnSetConvolutionNdDescriptor(conv, static_cast<int>(pad.size()), pad.data(),
                                                    stride.data(), dil.data(),
                                                    CUDNN_CROSS_CORRELATION, t.compute),
                who);
  TS_CUDNN_CALL(api, api.cudnnSetConvolutionGroupCount(conv, static_cast<int>(g.g)), who);
  TS_CUDNN_CALL(api, api.cudnnSetConvolutionMathType(conv, t.math), who);
}

// ---- Plans.

enum class Tune { kOff, kLimited, kFastest };

struct Pass {
  int algo = -1;
  size_t workspace = 0;
};

struct ConvPlan {
  Descriptors d;
  CudnnTypes types{};
  bool dbl = false;
  Pass fwd, bwd_data, bwd_filter;  // algo -1: not chosen yet
  std::mutex choose;               // one thread chooses the backward's algorithms
};

// What Convolution and Deconvolution say of cuDNN.
struct CudnnChoice {
  std::optional<std::string> tune;
  int64_t workspace_mb;
};

Tune TuneOf(const CudnnChoice& p, const char* who) {
  if (!p.tune || *p.tune == "limited_workspace") return Tune::kLimited;
  if (*p.tune == "off") return Tune::kOff;
  if (*p.tune == "fastest") return Tune::kFastest;
  TS_THROW << who << ": cudnn_tune must be 'off', 'limited_workspace' or 'fastest', got '"
           << *p.tune << "'";
}

// TESSERA_CUDNN_LOG=1 prints each choice (what MXNet logs when it tunes).
bool LogChoices() {
  static const bool on = [] {
    const char* v = std::getenv("TESSERA_CUDNN_LOG");
    return v && std::string(v) == "1";
  }();
  return on;
}

// The first result cuDNN ranks best that succeeded, fits the workspace
// limit and keeps float32 exact; then the pass's descriptor takes its math
// type, as cuDNN asks.
template <typename Perf>
Pass Pick(const CudnnApi& api, const Perf* perf, int count, const ConvPlan& plan, size_t limit,
          cudnnConvolutionDescriptor_t conv, const char* pass, const char* who) {
  for (int i = 0; i < count; ++i) {
    const Perf& r = perf[i];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > limit) continue;
    if (plan.types.exact_float32 && r.mathType != CUDNN_FMA_MATH) continue;
    TS_CUDNN_CALL(api, api.cudnnSetConvolutionMathType(conv, r.mathType), who);
    if (LogChoices())
      std::fprintf(stderr,
                   "%s on the GPU: %s algorithm %d (%.3f ms, %zu MB, math type %d; %d of %d "
                   "results)\n",
                   who, pass, static_cast<int>(r.algo), static_cast<double>(r.time), r.memory >> 20,
                   static_cast<int>(r.mathType), i + 1, count);
    return {static_cast<int>(r.algo), r.memory};
  }
  TS_THROW << who << " on the GPU: cuDNN has no " << pass << " algorithm for this shape within "
           << (limit >> 20) << " MB of workspace"
           << (plan.types.exact_float32
                   ? " in exact float32 (TESSERA_CUDA_ALLOW_TENSOR_CORE=1 allows TF32)"
                   : "");
}

constexpr int kMaxAlgos = 16;

// The templates below call cuDNN through a pointer, so their errors name the
// entry point they were given rather than the call's text.
void CheckCudnnPass(const CudnnApi& api, cudnnStatus_t st, const char* call, const char* who) {
  if (st != CUDNN_STATUS_SUCCESS)
    TS_THROW << who << " on the GPU: " << call << " failed: " << api.cudnnGetErrorString(st);
}
// An entry point of the api and its name, for those templates.
#define TS_CUDNN_ENTRY(api, fn) (api).fn, #fn

// A pass's ranking entry points, cuDNN's heuristic (_v7) and its
// measurement (Find), which take the same arguments.
template <typename DescA, typename DescB, typename DescOut, typename Perf>
using CudnnRankFn = cudnnStatus_t (*)(cudnnHandle_t, DescA, DescB, cudnnConvolutionDescriptor_t,
                                      DescOut, int, int*, Perf*);

// The pass's algorithms into perf, best first, ranked by the heuristic
// (tune 'off') or measured; returns how many.
template <typename DescA, typename DescB, typename DescOut, typename Perf>
int Rank(const CudnnApi& api, cudnnHandle_t h, Tune tune,
         CudnnRankFn<DescA, DescB, DescOut, Perf> heuristic, const char* heuristic_name,
         CudnnRankFn<DescA, DescB, DescOut, Perf> measure, const char* measure_name, DescA a,
         DescB b, cudnnConvolutionDescriptor_t conv, DescOut out, Perf* perf, const char* who) {
  int n = 0;
  const bool off = tune == Tune::kOff;
  CheckCudnnPass(api, (off ? heuristic : measure)(h, a, b, conv, out, kMaxAlgos, &n, perf),
                 off ? heuristic_name : measure_name, who);
  return n;
}

void ChooseForward(const CudnnApi& api, cudnnHandle_t h, ConvPlan& plan, Tune tune, size_t limit,
                   const char* who) {
  cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
  const int n = Rank(api, h, tune, TS_CUDNN_ENTRY(api, cudnnGetConvolutionForwardAlgorithm_v7),
                     TS_CUDNN_ENTRY(api, cudnnFindConvolutionForwardAlgorithm), plan.d.x, plan.d.w,
                     plan.d.fwd, plan.d.y, perf, who);
  plan.fwd = Pick(api, perf, n, plan, limit, plan.d.fwd, "forward", who);
}

void ChooseBackward(const CudnnApi& api, cudnnHandle_t h, ConvPlan& plan, Tune tune, size_t limit,
                    const char* who) {
  cudnnConvolutionBwdDataAlgoPerf_t dperf[kMaxAlgos];
  cudnnConvolutionBwdFilterAlgoPerf_t fperf[kMaxAlgos];
  const int nd =
      Rank(api, h, tune, TS_CUDNN_ENTRY(api, cudnnGetConvolutionBackwardDataAlgorithm_v7),
           TS_CUDNN_ENTRY(api, cudnnFindConvolutionBackwardDataAlgorithm), plan.d.w, plan.d.y,
           plan.d.bwd_data, plan.d.x, dperf, who);
  const int nf =
      Rank(api, h, tune, TS_CUDNN_ENTRY(api, cudnnGetConvolutionBackwardFilterAlgorithm_v7),
           TS_CUDNN_ENTRY(api, cudnnFindConvolutionBackwardFilterAlgorithm), plan.d.x, plan.d.y,
           plan.d.bwd_filter, plan.d.w, fperf, who);
  plan.bwd_data = Pick(api, dperf, nd, plan, limit, plan.d.bwd_data, "backward-data", who);
  plan.bwd_filter = Pick(api, fperf, nf, plan, limit, plan.d.bwd_filter, "backward-filter", who);
}

std::unique_ptr<ConvPlan> MakePlan(const CudnnApi& api, const ConvGeom& g, DType t,
                                   const char* who) {
  auto plan = std::make_unique<ConvPlan>();
  plan->types = TypesFor(t, who);
  plan->dbl = t == DType::kFloat64;
  Descriptors& d = plan->d;
  d.api = &api;
  TS_CUDNN_CALL(api, api.cudnnCreateTensorDescriptor(&d.x), who);
  TS_CUDNN_CALL(api, api.cudnnCreateTensorDescriptor(&d.y), who);
  TS_CUDNN_CALL(api, api.cudnnCreateTensorDescriptor(&d.b), who);
  TS_CUDNN_CALL(api, api.cudnnCreateTensorDescriptor(&d.bx), who);
  TS_CUDNN_CALL(api, api.cudnnCreateFilterDescriptor(&d.w), who);
  TS_CUDNN_CALL(api, api.cudnnCreateConvolutionDescriptor(&d.fwd), who);
  TS_CUDNN_CALL(api, api.cudnnCreateConvolutionDescriptor(&d.bwd_data), who);
  TS_CUDNN_CALL(api, api.cudnnCreateConvolutionDescriptor(&d.bwd_filter), who);
  const cudnnDataType_t dt = plan->types.data;
  SetTensor(api, d.x, dt, Dims(g, g.n, g.c, g.d, g.h, g.w), who);
  SetTensor(api, d.y, dt, Dims(g, g.n, g.f, g.od, g.oh, g.ow), who);
  SetTensor(api, d.b, dt, Dims(g, 1, g.f, 1, 1, 1), who);
  SetTensor(api, d.bx, dt, Dims(g, 1, g.c, 1, 1, 1), who);
  const std::vector<int> wdims = Dims(g, g.f, g.cg(), g.kd, g.kh, g.kw);
  TS_CUDNN_CALL(api,
                api.cudnnSetFilterNdDescriptor(d.w, dt, CUDNN_TENSOR_NCHW,
                                               static_cast<int>(wdims.size()), wdims.data()),
                who);
  for (cudnnConvolutionDescriptor_t c : {d.fwd, d.bwd_data, d.bwd_filter})
    SetConv(api, c, g, plan->types, who);
  return plan;
}

// The plan for this shape on the current device, made on first use.
ConvPlan& PlanFor(const ConvGeom& g, DType t, const CudnnChoice& p, const char* who) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ConvPlan>> plans;
  int device = 0;
  TS_CUDA_CALL(cudaGetDevice(&device));
  std::ostringstream key;
  key << device << ' ' << static_cast<int>(t) << ' ' << g.spatial << ' ' << g.n << ' ' << g.c << ' '
      << g.d << ' ' << g.h << ' ' << g.w << ' ' << g.f << ' ' << g.g << ' ' << g.kd << ' ' << g.kh
      << ' ' << g.kw << ' ' << g.sd << ' ' << g.sh << ' ' << g.sw << ' ' << g.dd << ' ' << g.dh
      << ' ' << g.dw << ' ' << g.pd << ' ' << g.ph << ' ' << g.pw << ' ' << p.tune.value_or("")
      << ' ' << p.workspace_mb;
  const std::string k = key.str();
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(k);
    if (it != plans.end()) return *it->second;
  }
  std::unique_ptr<ConvPlan> plan = MakePlan(Cudnn(), g, t, who);
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = plans.try_emplace(k, std::move(plan));
  return *it->second;
}

size_t WorkspaceLimit(const CudnnChoice& p, Tune tune) {
  return tune == Tune::kFastest ? SIZE_MAX : static_cast<size_t>(p.workspace_mb) << 20;
}

void* Workspace(const OpContext& ctx, size_t bytes) {
  return ctx.requested.at(0).get_space(std::max<size_t>(bytes, 1));
}

// The op's cuDNN settings; cudnn_off is an error: cuDNN is the only GPU
// (de)convolution this build has.
template <typename Param>
CudnnChoice CheckCudnnOn(const NodeAttrs& attrs, const char* who) {
  const auto& p = ParamsOf<Param>(attrs);
  TS_CHECK(!p.cudnn_off) << who << " on the GPU: cudnn_off=True, and cuDNN is the only GPU "
                         << "convolution this build has";
  return {p.cudnn_tune, p.workspace};
}

// The plan's algorithms for the passes a call runs, chosen on first need.
void EnsureChosen(ConvPlan& plan, cudnnHandle_t h, const CudnnChoice& p, bool fwd, bool bwd,
                  const char* who) {
  const Tune tune = TuneOf(p, who);
  std::lock_guard<std::mutex> lock(plan.choose);
  if (fwd && plan.fwd.algo < 0) ChooseForward(Cudnn(), h, plan, tune, WorkspaceLimit(p, tune), who);
  if (bwd && plan.bwd_data.algo < 0)
    ChooseBackward(Cudnn(), h, plan, tune, WorkspaceLimit(p, tune), who);
}

// One call's cuDNN: the library, the handle on the op's stream, and the
// geometry's plan with the algorithms of the passes the call runs chosen.
struct CudnnCall {
  const CudnnApi& api;
  cudnnHandle_t h;
  ConvPlan& plan;
  bool dbl;
};

CudnnCall BeginCall(const OpContext& ctx, const ConvGeom& g, DType t, const CudnnChoice& p,
                    bool fwd, bool bwd, const char* who) {
  const CudnnApi& api = Cudnn();
  cudnnHandle_t h = resource::CudnnHandle(ctx.run_ctx.get_stream<cudaStream_t>());
  ConvPlan& plan = PlanFor(g, t, p, who);
  EnsureChosen(plan, h, p, fwd, bwd, who);
  return {api, h, plan, plan.dbl};
}

// A cuDNN pass's entry point: out = fn(a, b) over the descriptors da, db
// and dout, with the pass's convolution descriptor and algorithm (cuDNN's
// forward, backward-data and backward-filter all take this form).
template <typename DescA, typename DescB, typename Algo, typename DescOut>
using CudnnPassFn = cudnnStatus_t (*)(cudnnHandle_t, const void*, DescA, const void*, DescB,
                                      const void*, cudnnConvolutionDescriptor_t, Algo, void*,
                                      size_t, const void*, DescOut, void*);

// One pass with its chosen algorithm and workspace; req picks beta (kAddTo
// adds into the result).
template <typename DescA, typename DescB, typename Algo, typename DescOut>
void RunPass(const CudnnCall& c, CudnnPassFn<DescA, DescB, Algo, DescOut> fn, const char* name,
             const Pass& pass, cudnnConvolutionDescriptor_t conv, DescA da, const void* a, DescB db,
             const void* b, void* ws, OpReqType req, DescOut dout, void* out, const char* who) {
  CheckCudnnPass(c.api,
                 fn(c.h, kScalars.one(c.dbl), da, a, db, b, conv, static_cast<Algo>(pass.algo), ws,
                    pass.workspace, Beta(req, c.dbl), dout, out),
                 name, who);
}

// The convolution's passes on the plan's descriptors (x its data, w its
// filter, y its output), in the deconvolution too with the roles exchanged.
void RunForward(const CudnnCall& c, const void* x, const void* w, void* ws, OpReqType req, void* y,
                const char* who) {
  const Descriptors& d = c.plan.d;
  RunPass(c, TS_CUDNN_ENTRY(c.api, cudnnConvolutionForward), c.plan.fwd, d.fwd, d.x, x, d.w, w, ws,
          req, d.y, y, who);
}

void RunBackwardData(const CudnnCall& c, const void* w, const void* dy, void* ws, OpReqType req,
                     void* dx, const char* who) {
  const Descriptors& d = c.plan.d;
  RunPass(c, TS_CUDNN_ENTRY(c.api, cudnnConvolutionBackwardData), c.plan.bwd_data, d.bwd_data, d.w,
          w, d.y, dy, ws, req, d.x, dx, who);
}

void RunBackwardFilter(const CudnnCall& c, const void* x, const void* dy, void* ws, OpReqType req,
                       void* dw, const char* who) {
  const Descriptors& d = c.plan.d;
  RunPass(c, TS_CUDNN_ENTRY(c.api, cudnnConvolutionBackwardFilter), c.plan.bwd_filter, d.bwd_filter,
          d.x, x, d.y, dy, ws, req, d.w, dw, who);
}

// The bias: added to the output of descriptor yd, and its gradient summed
// from the output gradient.
void AddBias(const CudnnCall& c, cudnnTensorDescriptor_t bd, const void* b,
             cudnnTensorDescriptor_t yd, void* y, const char* who) {
  TS_CUDNN_CALL(c.api,
                c.api.cudnnAddTensor(c.h, kScalars.one(c.dbl), bd, b, kScalars.one(c.dbl), yd, y),
                who);
}

void RunBackwardBias(const CudnnCall& c, cudnnTensorDescriptor_t yd, const void* dy, OpReqType req,
                     cudnnTensorDescriptor_t bd, void* db, const char* who) {
  TS_CUDNN_CALL(c.api,
                c.api.cudnnConvolutionBackwardBias(c.h, kScalars.one(c.dbl), yd, dy,
                                                   Beta(req, c.dbl), bd, db),
                who);
}

void ConvolutionGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const char* who = "Convolution";
  const CudnnChoice p = CheckCudnnOn<ConvolutionParam>(attrs, who);
  if (req[0] == kNullOp) return;
  const ConvGeom g = MakeConvGeom(attrs, in[0].shape());
  if (g.n == 0 || g.f == 0 || g.out_size() == 0) return;
  const CudnnCall c = BeginCall(ctx, g, out[0].dtype(), p, true, false, who);
  RunForward(c, in[0].dptr_, in[1].dptr_, Workspace(ctx, c.plan.fwd.workspace), req[0],
             out[0].dptr_, who);
  if (g.bias) AddBias(c, c.plan.d.b, in[2].dptr_, c.plan.d.y, out[0].dptr_, who);
}

// Inputs (ograd, data, weight); outputs (gdata, gweight[, gbias]).
void ConvolutionBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx,
                            const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                            const std::vector<TBlob>& out) {
  const char* who = "_backward_Convolution";
  const CudnnChoice p = CheckCudnnOn<ConvolutionParam>(attrs, who);
  const ConvGeom g = MakeConvGeom(attrs, in[1].shape());
  if (g.n == 0 || g.f == 0 || g.out_size() == 0) return;
  const CudnnCall c = BeginCall(ctx, g, in[0].dtype(), p, false, true, who);
  // One workspace for both passes: they run in turn on the op's stream.
  void* ws = Workspace(ctx, std::max(c.plan.bwd_data.workspace, c.plan.bwd_filter.workspace));
  if (req[0] != kNullOp)
    RunBackwardData(c, in[2].dptr_, in[0].dptr_, ws, req[0], out[0].dptr_, who);
  if (req[1] != kNullOp)
    RunBackwardFilter(c, in[1].dptr_, in[0].dptr_, ws, req[1], out[1].dptr_, who);
  if (g.bias && req[2] != kNullOp)
    RunBackwardBias(c, c.plan.d.y, in[0].dptr_, req[2], c.plan.d.b, out[2].dptr_, who);
}

// Deconvolution: inputs (data, weight[, bias]); the convolution's data
// gradient of our data, plus the bias per output channel.
void DeconvolutionGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const char* who = "Deconvolution";
  const CudnnChoice p = CheckCudnnOn<DeconvolutionParam>(attrs, who);
  if (req[0] == kNullOp) return;
  const ConvGeom g = DeconvGeom(attrs, in[0].shape());
  if (g.n == 0 || g.c == 0 || g.in_size() == 0 || g.out_size() == 0) return;
  const CudnnCall c = BeginCall(ctx, g, out[0].dtype(), p, false, true, who);
  RunBackwardData(c, in[1].dptr_, in[0].dptr_, Workspace(ctx, c.plan.bwd_data.workspace), req[0],
                  out[0].dptr_, who);
  if (!ParamsOf<DeconvolutionParam>(attrs).no_bias)
    AddBias(c, c.plan.d.bx, in[2].dptr_, c.plan.d.x, out[0].dptr_, who);
}

// Inputs (ograd, data, weight); outputs (gdata, gweight[, gbias]).
void DeconvolutionBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx,
                              const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                              const std::vector<TBlob>& out) {
  const char* who = "_backward_Deconvolution";
  const CudnnChoice p = CheckCudnnOn<DeconvolutionParam>(attrs, who);
  const ConvGeom g = DeconvGeom(attrs, in[1].shape());
  if (g.n == 0 || g.c == 0 || g.in_size() == 0 || g.out_size() == 0) return;
  const CudnnCall c =
      BeginCall(ctx, g, in[0].dtype(), p, req[0] != kNullOp, req[1] != kNullOp, who);
  // One workspace for both passes: they run in turn on the op's stream.
  void* ws = Workspace(ctx, std::max(c.plan.fwd.workspace, c.plan.bwd_filter.workspace));
  if (req[0] != kNullOp)  // our data gradient: the convolution of our output gradient
    RunForward(c, in[0].dptr_, in[2].dptr_, ws, req[0], out[0].dptr_, who);
  if (req[1] != kNullOp)  // the convolution's filter gradient, data and gradient exchanged
    RunBackwardFilter(c, in[0].dptr_, in[1].dptr_, ws, req[1], out[1].dptr_, who);
  if (!ParamsOf<DeconvolutionParam>(attrs).no_bias && req[2] != kNullOp)
    RunBackwardBias(c, c.plan.d.x, in[0].dptr_, req[2], c.plan.d.bx, out[2].dptr_, who);
}

}  // namespace

TS_REGISTER_OP(Convolution).set_attr<FCompute>(kFComputeGPU, ConvolutionGpu);
TS_REGISTER_OP(_backward_Convolution).set_attr<FCompute>(kFComputeGPU, ConvolutionBackwardGpu);
TS_REGISTER_OP(Deconvolution).set_attr<FCompute>(kFComputeGPU, DeconvolutionGpu);
TS_REGISTER_OP(_backward_Deconvolution).set_attr<FCompute>(kFComputeGPU, DeconvolutionBackwardGpu);

}  // namespace tessera::op
