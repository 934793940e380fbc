// The resource manager hands ops the shared things they may ask for besides
// their inputs and outputs: random numbers and scratch memory (as in MXNet's
// ResourceRequest / Resource).
//
// How ops use it (the operator registry and invoker are built on this):
//   1. An op declares what it needs: FResourceRequest returns, say,
//      {ResourceRequest::kRandom} or {ResourceRequest::kTempSpace}.
//   2. When the op is pushed, the invoker calls
//      ResourceManager::Get()->Request(ctx, req) once per declared request,
//      on the pushing thread, and captures the Resources in the pushed
//      function. A random Resource gets its RandomStream right there, so
//      stream ids follow push order and a seeded script repeats exactly,
//      however the engine orders execution.
//   3. Inside the op:
//        RandomStream rs = res[0].get_random();
//        FillUniform(rs, out, n, 0.f, 1.f);           // CPU (random.h)
//        FillUniformGpu(rs, out, n, 0.f, 1.f, stream);  // GPU (random_gpu.h)
//        // or RandomBits(rs, i) / RandomUniformFloat(rs, i) in a kernel
//        float* tmp = res[1].get_space_typed<float>(count);
//      Use element indices past the first output's for a second
//      independent draw within one op (every stream has 2^66 elements).
//   Neither resource needs an engine variable: a RandomStream is a value, not
//   a shared generator state, and temp space is private to the running op
//   (see temp_space.h), so ops that use them still run in parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "engine/base/context.h"
#include "engine/resource/random_stream.h"

namespace tessera::resource {

struct ResourceRequest {
  enum Type : uint8_t {
    kRandom,     // a RandomStream of its own
    kTempSpace,  // scratch memory of any size
  };
  Type type;
  constexpr ResourceRequest(Type t) : type(t) {}  // NOLINT: implicit, as in MXNet
};

class Resource {
 public:
  Resource() = default;
  ResourceRequest::Type type() const { return type_; }
  Context ctx() const { return ctx_; }

  // The op's random stream (a kRandom resource only).
  RandomStream get_random() const;
  // Scratch of at least `bytes` on ctx() (a kTempSpace resource only); see
  // TempSpace::Get for how long it stays valid.
  void* get_space(size_t bytes) const;
  template <typename T>
  T* get_space_typed(size_t count) const {
    CheckTypedCount(count, sizeof(T));
    return static_cast<T*>(get_space(count * sizeof(T)));
  }

 private:
  friend class ResourceManager;
  void CheckTypedCount(size_t count, size_t elem_size) const;

  ResourceRequest::Type type_ = ResourceRequest::kTempSpace;
  Context ctx_;
  RandomStream random_;
};

class ResourceManager {
 public:
  static ResourceManager* Get();

  // Thread-safe; call at push time (see above).
  Resource Request(Context ctx, ResourceRequest req);

  // Seeds every device and restarts their stream counters, so the ops pushed
  // after this draw the same numbers on every run. Devices get distinct
  // streams: gpu(0) and gpu(1) running the same ops draw different numbers,
  // while cpu(i) and gpu(i) with the same seed and push sequence draw the
  // same ones (a script gives the same randoms on CPU and GPU).
  void SeedRandom(uint64_t seed);
  // Seeds one device (cpu_pinned(i) counts as cpu(i)) and restarts its counter.
  void SeedRandom(Context ctx, uint64_t seed);

  // The seed every device starts with until seeded.
  static constexpr uint64_t kDefaultSeed = 0;
  static constexpr int kMaxDeviceIds = 64;

 private:
  ResourceManager();
  struct RandomState {
    uint64_t seed = kDefaultSeed;
    uint64_t next_stream = 0;
  };
  RandomState& State(Context ctx);  // caller holds mu_

  std::mutex mu_;
  RandomState cpu_[kMaxDeviceIds];
  RandomState gpu_[kMaxDeviceIds];
};

}  // namespace tessera::resource
