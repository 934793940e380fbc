#include "engine/resource/resource.h"

#include <cstdint>

#include "engine/base/error.h"
#include "engine/resource/temp_space.h"

namespace tessera::resource {
namespace {

// Stream ids carry the device id in their top 16 bits so that devices never
// share a stream; 2^48 requests per device and seed leave room enough.
constexpr int kStreamDeviceShift = 48;
constexpr uint64_t kStreamCounterMask = (uint64_t{1} << kStreamDeviceShift) - 1;

void CheckDeviceId(Context ctx) {
  TS_CHECK(ctx.dev_id >= 0 && ctx.dev_id < ResourceManager::kMaxDeviceIds)
      << "invalid device " << ctx.ToString() << ": ids run from 0 to "
      << ResourceManager::kMaxDeviceIds - 1;
}

const char* TypeName(ResourceRequest::Type t) {
  return t == ResourceRequest::kRandom ? "random" : "temp space";
}

}  // namespace

RandomStream Resource::get_random() const {
  TS_CHECK(type_ == ResourceRequest::kRandom)
      << "get_random() on a " << TypeName(type_) << " resource; request kRandom";
  return random_;
}

void* Resource::get_space(size_t bytes) const {
  TS_CHECK(type_ == ResourceRequest::kTempSpace)
      << "get_space() on a " << TypeName(type_) << " resource; request kTempSpace";
  return TempSpace::Get(ctx_, bytes);
}

void Resource::CheckTypedCount(size_t count, size_t elem_size) const {
  TS_CHECK(count <= SIZE_MAX / elem_size)
      << "get_space_typed: " << count << " elements of " << elem_size << " bytes overflow";
}

ResourceManager* ResourceManager::Get() {
  static ResourceManager* const instance = new ResourceManager();  // outlives every op
  return instance;
}

ResourceManager::ResourceManager() = default;

ResourceManager::RandomState& ResourceManager::State(Context ctx) {
  CheckDeviceId(ctx);
  return ctx.is_gpu() ? gpu_[ctx.dev_id] : cpu_[ctx.dev_id];
}

Resource ResourceManager::Request(Context ctx, ResourceRequest req) {
  CheckDeviceId(ctx);  // here, at push time, rather than when the op runs
  Resource res;
  res.type_ = req.type;
  res.ctx_ = ctx;
  if (req.type == ResourceRequest::kRandom) {
    std::lock_guard<std::mutex> lock(mu_);
    RandomState& state = State(ctx);
    const uint64_t counter = state.next_stream++ & kStreamCounterMask;
    res.random_ = RandomStream{state.seed,
                               (static_cast<uint64_t>(ctx.dev_id) << kStreamDeviceShift) | counter};
  }
  return res;
}

void ResourceManager::SeedRandom(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  for (RandomState& s : cpu_) s = RandomState{seed, 0};
  for (RandomState& s : gpu_) s = RandomState{seed, 0};
}

void ResourceManager::SeedRandom(Context ctx, uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  State(ctx) = RandomState{seed, 0};
}

}  // namespace tessera::resource
