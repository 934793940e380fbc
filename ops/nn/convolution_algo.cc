// Choosing the kernels of a float32 convolution pass: oneDNN's blocked
// kernels or the batched im2col + GEMM (convolution_gemm.cc). oneDNN wins
// wherever the images are large; the GEMM can win where each image has few
// output positions and the weights are large, because oneDNN reorders every
// weight into its blocked layout on every call and, for the weight gradient,
// reduces a copy of it per thread. Measured on this project's development
// machine (2 cores, AVX-512; ResNet-18 at 64x64, batch 16; ms, oneDNN with
// its reorders / GEMM):
//
//   3x3, 512 -> 512 on 2x2     forward 1.43 / 1.28   data 1.33 / 1.54   weights 4.36 / 1.27
//   3x3, 256 -> 512 on 4x4, /2 forward 0.92 / 0.68   data 1.13 / 0.88   weights 1.84 / 0.64
//   3x3, 256 -> 256 on 4x4     forward 0.91 / 1.45   data 0.86 / 1.51   weights 1.12 / 1.36
//   3x3, 64 -> 64 on 16x16     forward 0.95 / 2.67   data 0.95 / 2.49   weights 0.93 / 3.20
//
// No rule of thumb separates these cleanly, so the GEMM is a candidate only
// where its K (channels x kernel) is at least its N (batch x output
// positions), i.e. the weights outweigh the output: there both are timed on
// the first call for the geometry and pass that writes its outputs, on that
// call's own arrays (no buffers of its own), and the faster is kept (as
// MXNet's cudnn_tune). Elsewhere oneDNN runs without a measurement.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "ops/nn/convolution-inl.h"

namespace tessera::op {

namespace {

ConvAlgo ReadConvAlgoEnv() {
  const std::string s = EnvString("TESSERA_CONV_ALGO", "auto");
  if (s == "auto") return ConvAlgo::kAuto;
  if (s == "onednn") return ConvAlgo::kOneDnn;
  if (s == "gemm") return ConvAlgo::kGemm;
  if (s == "reference") return ConvAlgo::kReference;
  TS_THROW << "environment variable TESSERA_CONV_ALGO='" << s
           << "' is not auto, onednn, gemm or reference";
}

// -1: follow the environment; otherwise a ConvAlgo set by SetConvAlgo.
std::atomic<int> g_forced{-1};

ConvAlgo Forced() {
  const int f = g_forced.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<ConvAlgo>(f);
  // A throwing initialiser is retried, so a malformed value fails every call.
  static const ConvAlgo from_env = ReadConvAlgoEnv();
  return from_env;
}

// TESSERA_CONV_LOG=1 prints each measured choice.
bool LogChoices() {
  static const bool on = EnvBool("TESSERA_CONV_LOG", false);
  return on;
}

bool GemmIsCandidate(const ConvGeom& g) {
  return g.spatial <= 2 && g.cg() * g.ksize() >= g.n * g.out_size();
}

using Key = std::array<int64_t, 18>;

// Blocked arrays change what each algorithm costs: measured apart.
Key KeyOf(const ConvGeom& g) {
  return {g.spatial,
          g.n,
          g.c,
          g.h,
          g.w,
          g.f,
          g.g,
          g.kh,
          g.kw,
          g.sh,
          g.sw,
          g.dh,
          g.dw,
          g.ph,
          g.pw,
          g.oh,
          int64_t(g.bias),
          g.blocked_bits()};
}

// Per pass: kAuto until measured. Two threads may measure the same
// geometry at once; each writes only its own op's outputs, and either
// result is a fine choice.
struct Choice {
  std::array<std::atomic<ConvAlgo>, 3> algo{ConvAlgo::kAuto, ConvAlgo::kAuto, ConvAlgo::kAuto};
};

std::mutex g_choices_mu;

// Made on first use, not by this library's (deferred) static initialisers.
std::map<Key, std::shared_ptr<Choice>>& Choices() {
  static auto* choices = new std::map<Key, std::shared_ptr<Choice>>();
  return *choices;
}

std::shared_ptr<Choice> ChoiceFor(const ConvGeom& g) {
  std::lock_guard<std::mutex> lock(g_choices_mu);
  auto& choices = Choices();
  // Bounded like the primitive caches: a shape-changing workload starts over.
  if (choices.size() >= 256) choices.clear();
  auto& c = choices[KeyOf(g)];
  if (!c) c = std::make_shared<Choice>();
  return c;
}

// The best of three timed runs after a warm-up (which also builds oneDNN's
// primitives), in seconds.
double BestTime(const std::function<void(ConvAlgo)>& trial, ConvAlgo algo) {
  using Clock = std::chrono::steady_clock;
  trial(algo);
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    trial(algo);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

const char* PassName(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return "forward";
    case ConvPass::kBackwardData:
      return "backward (data)";
    case ConvPass::kBackwardWeights:
      return "backward (weights)";
  }
  return "?";
}

}  // namespace

const char* ConvAlgoName(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::kAuto:
      return "auto";
    case ConvAlgo::kOneDnn:
      return "onednn";
    case ConvAlgo::kGemm:
      return "gemm";
    case ConvAlgo::kReference:
      return "reference";
  }
  return "?";
}

ConvAlgo ForcedConvAlgo() {
  return Forced();
}

ConvAlgo SetConvAlgo(ConvAlgo algo) {
  const ConvAlgo old = Forced();
  g_forced.store(static_cast<int>(algo), std::memory_order_relaxed);
  return old;
}

ConvAlgo ConvAlgoFor(const ConvGeom& g, ConvPass pass) {
  const ConvAlgo forced = Forced();
  if (forced == ConvAlgo::kGemm && g.spatial > 2) return ConvAlgo::kReference;
  if (forced != ConvAlgo::kAuto) return forced;
  if (!GemmIsCandidate(g)) return ConvAlgo::kOneDnn;
  return ChoiceFor(g)->algo[static_cast<size_t>(pass)].load(std::memory_order_relaxed);
}

ConvAlgo MeasureConvAlgo(const ConvGeom& g, ConvPass pass,
                         const std::function<void(ConvAlgo)>& trial) {
  const double onednn = BestTime(trial, ConvAlgo::kOneDnn);
  const double gemm = BestTime(trial, ConvAlgo::kGemm);
  const ConvAlgo pick = gemm < onednn ? ConvAlgo::kGemm : ConvAlgo::kOneDnn;
  ChoiceFor(g)->algo[static_cast<size_t>(pass)].store(pick, std::memory_order_relaxed);
  if (LogChoices())
    std::fprintf(stderr,
                 "Convolution (%lld,%lld,%lld,%lld), %lld filters, kernel (%lld,%lld), stride "
                 "(%lld,%lld), groups %lld, %s: %s (oneDNN %.3f ms, GEMM %.3f ms)\n",
                 (long long)g.n, (long long)g.c, (long long)g.h, (long long)g.w, (long long)g.f,
                 (long long)g.kh, (long long)g.kw, (long long)g.sh, (long long)g.sw, (long long)g.g,
                 PassName(pass), ConvAlgoName(pick), onednn * 1e3, gemm * 1e3);
  return pick;
}

}  // namespace tessera::op
