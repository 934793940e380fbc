// Kernel<Op, xpu>::Launch(run_ctx, n, args...) calls Op::Map(i, args...) for
// i in [0, n): an OpenMP loop on the CPU, a CUDA grid-stride kernel on the GPU
// (kernel_launch_cuda.cuh, in .cu files). One element functor serves both:
//
//   template <int req>
//   struct quadratic_forward {
//     template <typename T>
//     TS_XINLINE static void Map(int64_t i, T* out, const T* in, float a, float b, float c) {
//       AssignReq<req>(out[i], in[i] * (a * in[i] + b) + c);
//     }
//   };
//   SwitchReq(req[0], [&](auto r) {
//     Kernel<quadratic_forward<r.value>, cpu>::Launch(ctx.run_ctx, n, out, in, a, b, c);
//   });
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "engine/base/context.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/host_device.h"
#include "engine/base/tblob.h"
#include "engine/op/launch_cost.h"

namespace tessera::op {

// Device tags.
struct cpu {
  static constexpr DeviceType kDevice = DeviceType::kCPU;
};
struct gpu {
  static constexpr DeviceType kDevice = DeviceType::kGPU;
};

// out (op)= v according to the request; 16-bit floats accumulate in float.
template <int req, typename T, typename V>
TS_XINLINE void AssignReq(T& out, V v) {
  if constexpr (req == kNullOp) {
  } else if constexpr (req == kAddTo) {
    out = static_cast<T>(static_cast<AccType<T>>(out) + static_cast<AccType<T>>(v));
  } else {
    out = static_cast<T>(v);
  }
}

// The same for a request only known at run time, for kernels that take it
// as an argument (a per-image pass writing several outputs, say).
template <typename T, typename V>
TS_XINLINE void AssignReqAt(T& out, V v, OpReqType req) {
  if (req == kAddTo)
    AssignReq<kAddTo>(out, v);
  else if (req != kNullOp)
    AssignReq<kWriteTo>(out, v);
}

// Calls fn(std::integral_constant<int, req>) for the runtime request; kNullOp
// calls nothing. kWriteInplace behaves as kWriteTo for elementwise kernels.
template <typename F>
void SwitchReq(OpReqType req, F&& fn) {
  switch (req) {
    case kNullOp:
      return;
    case kWriteTo:
    case kWriteInplace:
      fn(std::integral_constant<int, kWriteTo>{});
      return;
    case kAddTo:
      fn(std::integral_constant<int, kAddTo>{});
      return;
  }
}

// OpenMP threads for a CPU loop over `work` elements, for loops without a
// cost of their own (Kernel::Launch keeps one per kernel, launch_cost.h): what
// the engine gave the op (RunContext::omp_threads), or one for loops too small
// to share.
inline int CpuThreads(const RunContext& ctx, int64_t work) {
  return work < kOmpMinElements ? 1 : std::max(1, ctx.omp_threads);
}
// Thread index/count inside an OpenMP region (0 and 1 outside one).
int OmpThreadIndex();
int OmpThreadCount();

template <typename OP, typename xpu>
struct Kernel;

template <typename OP>
struct Kernel<OP, cpu> {
  template <typename... Args>
  static void Launch(const RunContext& ctx, int64_t n, Args... args) {
    const int threads = cost_.Threads(ctx, n);
    LaunchTimer timer(cost_, n, threads);
    if (threads <= 1) {
      for (int64_t i = 0; i < n; ++i) OP::Map(i, args...);
      return;
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (int64_t i = 0; i < n; ++i) OP::Map(i, args...);
  }
  // Calls OP::Map(begin, end, args...) on contiguous ranges (one per thread),
  // for kernels that vectorise or keep state across elements.
  template <typename... Args>
  static void LaunchRange(const RunContext& ctx, int64_t n, Args... args) {
    const int threads = cost_.Threads(ctx, n);
    LaunchTimer timer(cost_, n, threads);
    if (threads <= 1) {
      OP::Map(int64_t{0}, n, args...);
      return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
      const int t = OmpThreadIndex();
      const int nt = OmpThreadCount();
      const int64_t chunk = (n + nt - 1) / nt;
      const int64_t b = std::min<int64_t>(n, t * chunk), e = std::min<int64_t>(n, b + chunk);
      if (b < e) OP::Map(b, e, args...);
    }
  }

 private:
  // What one element of this kernel costs, learnt from its calls.
  static inline LaunchCost cost_;
};

}  // namespace tessera::op
