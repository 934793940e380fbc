// Tests of the pooled allocators (engine/storage).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/error.h"
#include "engine/base/format_bytes.h"
#include "engine/storage/bucket.h"
#include "engine/storage/cpu_allocator.h"
#include "engine/storage/live_table.h"
#include "engine/storage/memory_pool.h"
#include "engine/storage/pool_options.h"
#include "engine/storage/storage.h"

#ifdef TESSERA_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::test;
using namespace tessera::storage;

namespace {

MemoryPool MakeCpuPool(PoolOptions options = {}) {
  return MemoryPool(Context::CPU(), std::make_unique<CpuAllocator>(), options);
}

// Hands out fake addresses and fails past a byte budget, so out-of-memory
// paths can be tested with gigabyte sizes and no real memory.
class FakeAllocator final : public RawAllocator {
 public:
  explicit FakeAllocator(size_t budget) : budget_(budget) {}
  void* Allocate(size_t bytes) override {
    ++calls;
    if (held + bytes > budget_) return nullptr;
    held += bytes;
    next_ += bytes + 4096;
    return reinterpret_cast<void*>(next_);
  }
  void Deallocate(void*, size_t bytes) noexcept override { held -= bytes; }
  std::string MemoryInfo() override { return "fake device full"; }

  size_t held = 0;
  int calls = 0;

 private:
  size_t budget_;
  uintptr_t next_ = 1 << 20;
};

// Scoped environment variable, for the knob tests.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("buckets: 64-byte steps to 1 KiB, then four steps per power of two") {
  CHECK(RoundUpBucket(1) == 64);
  CHECK(RoundUpBucket(64) == 64);
  CHECK(RoundUpBucket(65) == 128);
  CHECK(RoundUpBucket(1000) == 1024);
  CHECK(RoundUpBucket(1024) == 1024);
  CHECK(RoundUpBucket(1025) == 1280);
  CHECK(RoundUpBucket(1280) == 1280);
  CHECK(RoundUpBucket(1281) == 1536);
  CHECK(RoundUpBucket(2048) == 2048);
  CHECK(RoundUpBucket(2049) == 2560);
  CHECK(RoundUpBucket(size_t{1} << 20) == size_t{1} << 20);
  CHECK(RoundUpBucket((size_t{1} << 20) + 1) == (size_t{5} << 18));
  CHECK(RoundUpBucket(kMaxAllocBytes) == kMaxAllocBytes);
  CHECK(BucketBytes(kNumBuckets - 1) == size_t{1} << 63);

  // Every class maps back to itself, in increasing order.
  for (int i = 0; i < kNumBuckets; ++i) {
    CHECK(BucketIndex(BucketBytes(i)) == i);
    if (i > 0) CHECK(BucketBytes(i) > BucketBytes(i - 1));
  }
  // Rounding never shrinks, lands on a class boundary, and wastes < 25%
  // beyond the linear range.
  std::mt19937_64 rng(7);
  for (int t = 0; t < 100000; ++t) {
    const size_t bytes = t < 5000 ? size_t(t + 1) : (rng() % kMaxAllocBytes) >> (rng() % 40);
    if (bytes == 0) continue;
    const size_t r = RoundUpBucket(bytes);
    REQUIRE(r >= bytes);
    REQUIRE(BucketIndex(r) == BucketIndex(bytes));
    if (bytes > kLinearLimit) REQUIRE(r - bytes < bytes / 4);
    if (BucketIndex(bytes) > 0) REQUIRE(BucketBytes(BucketIndex(bytes) - 1) < bytes);
  }
}

TEST_CASE("FormatBytes") {
  CHECK(FormatBytes(0) == "0 bytes");
  CHECK(FormatBytes(1) == "1 byte");
  CHECK(FormatBytes(512) == "512 bytes");
  CHECK(FormatBytes(64 << 10) == "64 KiB");
  CHECK(FormatBytes(size_t{3} << 29) == "1.5 GiB");
  CHECK(FormatBytes(kMaxAllocBytes) == "128 TiB");
}

TEST_CASE("pool: a freed block comes back for the same size class, stats are exact") {
  MemoryPool pool = MakeCpuPool();
  void* a = pool.Alloc(1000);  // class 1024
  StorageStats s = pool.Stats();
  CHECK(s.bytes_in_use == 1024);
  CHECK(s.bytes_pooled == 0);
  CHECK(s.peak_bytes_in_use == 1024);
  CHECK(s.num_allocs == 1);
  CHECK(s.num_pool_hits == 0);

  pool.Free(a, 1000);
  s = pool.Stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.bytes_pooled == 1024);

  void* b = pool.Alloc(970);  // same class
  CHECK(b == a);
  void* c = pool.Alloc(2000);  // class 2048: from the system
  CHECK(c != a);
  s = pool.Stats();
  CHECK(s.bytes_in_use == 1024 + 2048);
  CHECK(s.bytes_pooled == 0);
  CHECK(s.peak_bytes_in_use == 1024 + 2048);
  CHECK(s.num_allocs == 2);
  CHECK(s.num_pool_hits == 1);

  pool.Free(b, 970);
  pool.Free(c, 2000);
  s = pool.Stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.bytes_pooled == 1024 + 2048);
  CHECK(s.peak_bytes_in_use == 1024 + 2048);

  pool.ReleaseAll();
  s = pool.Stats();
  CHECK(s.bytes_pooled == 0);
  CHECK(s.num_allocs == 2);
  // An emptied pool allocates afresh.
  void* d = pool.Alloc(1000);
  CHECK(pool.Stats().num_allocs == 3);
  pool.DirectFree(d, 1000);
  CHECK(pool.Stats().bytes_pooled == 0);
  CHECK(pool.Stats().bytes_in_use == 0);
}

TEST_CASE("pool: ResetPeak restarts the peak at the bytes in use") {
  MemoryPool pool = MakeCpuPool();
  void* a = pool.Alloc(4096);
  void* b = pool.Alloc(8192);
  pool.Free(b, 8192);
  CHECK(pool.Stats().peak_bytes_in_use == 4096 + 8192);
  pool.ResetPeak();
  CHECK(pool.Stats().peak_bytes_in_use == 4096);
  void* c = pool.Alloc(1024);
  CHECK(pool.Stats().peak_bytes_in_use == 4096 + 1024);
  pool.Free(a, 4096);
  pool.Free(c, 1024);
  CHECK(pool.Stats().peak_bytes_in_use == 4096 + 1024);
}

TEST_CASE("live table: random inserts and erases agree with a reference map") {
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    LiveTable table;
    std::unordered_map<void*, size_t> ref;
    // Addresses from a narrow range of 64-byte slots: many share a home
    // slot, so probe runs are long and erasing must close the gaps.
    auto address = [&] { return reinterpret_cast<void*>(uintptr_t{64} * (1 + rng() % 3000)); };
    for (int step = 0; step < 40000; ++step) {
      void* p = address();
      LiveTable::Block* b = table.Find(p);
      auto it = ref.find(p);
      REQUIRE((b != nullptr) == (it != ref.end()));
      if (b) {
        REQUIRE(b->requested == it->second);
        REQUIRE(b->reserved == it->second + 1);
        if (rng() % 3) {
          table.Erase(b);
          ref.erase(it);
        }
      } else {
        const size_t n = rng() % 100000;
        table.Insert(p, {n, n + 1});
        ref.emplace(p, n);
      }
      REQUIRE(table.size() == ref.size());
    }
    for (auto& [p, n] : ref) {
      LiveTable::Block* b = table.Find(p);
      REQUIRE(b);
      CHECK(b->requested == n);
      table.Erase(b);
    }
    CHECK(table.size() == 0);
    CHECK(table.Find(reinterpret_cast<void*>(64)) == nullptr);
  }
}

TEST_CASE("pool: bad frees are errors that leave the pool intact") {
  MemoryPool pool = MakeCpuPool();
  void* a = pool.Alloc(100);
  int local = 0;
  CHECK(Contains(ErrorOf([&] { pool.Free(&local, 4); }), "no block allocated there"));
  CHECK(Contains(ErrorOf([&] { pool.Free(a, 99); }), "allocated with 100"));
  pool.Free(a, 100);
  CHECK(Contains(ErrorOf([&] { pool.Free(a, 100); }), "freed twice"));
  CHECK(Contains(ErrorOf([&] { pool.DirectFree(a, 100); }), "freed twice"));
  CHECK(pool.Stats().bytes_pooled == 128);
  CHECK(pool.Alloc(100) == a);
  pool.Free(a, 100);
}

TEST_CASE("pool options: pooling off, and the pooled-bytes cap") {
  SUBCASE("pooling off: every free goes to the system, sizes are not rounded to classes") {
    MemoryPool pool = MakeCpuPool({.pooling = false});
    void* a = pool.Alloc(1500);
    CHECK(pool.Stats().bytes_in_use == 1536);
    void* b = pool.Alloc(1100);  // 64-byte multiple, not the 1280 class
    CHECK(pool.Stats().bytes_in_use == 1536 + 1152);
    pool.Free(a, 1500);
    pool.Free(b, 1100);
    pool.Free(pool.Alloc(1500), 1500);
    const StorageStats s = pool.Stats();
    CHECK(s.bytes_pooled == 0);
    CHECK(s.num_allocs == 3);
    CHECK(s.num_pool_hits == 0);
  }
  SUBCASE("cap: blocks beyond it are freed directly") {
    MemoryPool pool = MakeCpuPool({.pooling = true, .max_pooled_bytes = 3000});
    void* a = pool.Alloc(2048);
    void* b = pool.Alloc(1024);
    void* c = pool.Alloc(1024);
    pool.Free(a, 2048);
    pool.Free(b, 1024);  // 3072 > 3000: not pooled
    CHECK(pool.Stats().bytes_pooled == 2048);
    pool.Free(c, 1024);
    CHECK(pool.Stats().bytes_pooled == 2048);
    CHECK(pool.Stats().bytes_in_use == 0);
  }
}

TEST_CASE("pool options from the environment") {
  {
    const PoolOptions cpu = PoolOptionsFromEnv(false);
    CHECK(cpu.pooling);
    CHECK(cpu.max_pooled_bytes > 0);
    CHECK(PoolOptionsFromEnv(true).max_pooled_bytes == SIZE_MAX);
  }
  {
    ScopedEnv off("TESSERA_STORAGE_POOL", "0");
    ScopedEnv cpu_cap("TESSERA_CPU_POOL_MAX_BYTES", "4096");
    ScopedEnv gpu_cap("TESSERA_GPU_POOL_MAX_BYTES", "-1");
    CHECK_FALSE(PoolOptionsFromEnv(false).pooling);
    CHECK(PoolOptionsFromEnv(false).max_pooled_bytes == 4096);
    CHECK(PoolOptionsFromEnv(true).max_pooled_bytes == SIZE_MAX);
  }
  {
    ScopedEnv bad("TESSERA_GPU_POOL_MAX_BYTES", "lots");
    CHECK(Contains(ErrorOf([] { PoolOptionsFromEnv(true); }), "TESSERA_GPU_POOL_MAX_BYTES"));
  }
}

TEST_CASE("pool: out of memory releases the pool, retries, then names size and device") {
  auto fake = std::make_unique<FakeAllocator>(size_t{4} << 30);
  FakeAllocator* raw = fake.get();
  MemoryPool pool(Context::CPU(), std::move(fake), {});
  // 3 GiB pooled in small-ish blocks, 1 GiB in use.
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(pool.Alloc(size_t{1} << 30));
  void* kept = pool.Alloc(size_t{1} << 30);
  for (void* p : blocks) pool.Free(p, size_t{1} << 30);
  CHECK(pool.Stats().bytes_pooled == size_t{3} << 30);

  // 2 GiB only fits once the pooled blocks are gone.
  void* big = pool.Alloc(size_t{2} << 30);
  CHECK(big != nullptr);
  CHECK(pool.Stats().bytes_pooled == 0);
  CHECK(raw->held == size_t{3} << 30);

  const int calls = raw->calls;
  const std::string msg = ErrorOf([&] { pool.Alloc(size_t{3} << 29); });
  CHECK(Contains(msg, "out of memory allocating 1.5 GiB on cpu(0)"));
  CHECK(Contains(msg, "fake device full"));
  CHECK(Contains(msg, "tessera holds 3 GiB in use"));
  CHECK(raw->calls == calls + 2);  // tried, released, retried once
  pool.Free(big, size_t{2} << 30);
  pool.Free(kept, size_t{1} << 30);
}

TEST_CASE("Storage: CPU blocks are 64-byte aligned, pooled, and counted") {
  Storage* st = Storage::Get();
  const Context cpu = Context::CPU();
  st->ReleaseAll(cpu);
  const StorageStats before = st->Stats(cpu);

  std::vector<Handle> handles;
  for (size_t bytes : {1, 63, 64, 100, 1000, 4097, 100000, 3000000}) {
    Handle h = st->Alloc(bytes, cpu);
    CHECK(h.size == bytes);
    CHECK(h.ctx == cpu);
    CHECK(reinterpret_cast<uintptr_t>(h.dptr) % 64 == 0);
    std::memset(h.dptr, 0xab, bytes);
    handles.push_back(h);
  }
  const StorageStats mid = st->Stats(cpu);
  size_t expected = 0;
  for (const Handle& h : handles) expected += RoundUpBucket(h.size);
  CHECK(mid.bytes_in_use - before.bytes_in_use == expected);
  CHECK(mid.peak_bytes_in_use >= mid.bytes_in_use);

  void* first = handles[4].dptr;
  for (const Handle& h : handles) st->Free(h);
  CHECK(st->Stats(cpu).bytes_in_use == before.bytes_in_use);
  CHECK(st->Stats(cpu).bytes_pooled - before.bytes_pooled == expected);

  Handle again = st->Alloc(1000, cpu);
  CHECK(again.dptr == first);
  CHECK(st->Stats(cpu).num_pool_hits == mid.num_pool_hits + 1);
  st->DirectFree(again);
  st->ReleaseAll(cpu);
  CHECK(st->Stats(cpu).bytes_pooled == 0);
}

TEST_CASE("Storage: zero bytes, absurd sizes, bad handles") {
  Storage* st = Storage::Get();
  Handle z = st->Alloc(0, Context::CPU());
  CHECK(z.dptr == nullptr);
  CHECK(z.size == 0);
  st->Free(z);
  st->DirectFree(z);

  const std::string msg = ErrorOf([&] { st->Alloc(size_t{1} << 48, Context::CPU()); });
  CHECK(Contains(msg, "cannot allocate 256 TiB"));
  CHECK(Contains(msg, "on cpu(0)"));

  Handle h = st->Alloc(256, Context::CPU());
  Handle wrong_ctx = h;
  wrong_ctx.ctx = Context::CPU(3);
  CHECK(Contains(ErrorOf([&] { st->Free(wrong_ctx); }), "cpu(3)"));
  wrong_ctx.ctx = Context::CPUPinned(0);
  st->Free(st->Alloc(64, Context::CPUPinned(0)));  // make the pinned pool exist
  CHECK(Contains(ErrorOf([&] { st->Free(wrong_ctx); }), "no block allocated there"));
  st->Free(h);
  CHECK(Contains(ErrorOf([&] { st->Free(h); }), "freed twice"));

  CHECK(Contains(ErrorOf([&] { st->Alloc(8, Context::CPU(-1)); }), "invalid device cpu(-1)"));
}

TEST_CASE("Storage: gpu contexts without a usable GPU are clear errors") {
  Storage* st = Storage::Get();
  const int n = NumGPUs();
  if (!BuiltWithCUDA()) {
    CHECK(ErrorOf([&] { st->Alloc(16, Context::GPU(0)); }) == "gpu(0): this build has no CUDA");
  }
  const std::string msg = ErrorOf([&] { st->Alloc(16, Context::GPU(n)); });
  if (BuiltWithCUDA()) {
    CHECK(msg == "gpu(" + std::to_string(n) + ") is not available: " + std::to_string(n) +
                     (n == 1 ? " GPU" : " GPUs"));
  }
  CHECK(st->Stats(Context::GPU(n)).bytes_in_use == 0);
  CHECK(ErrorOf([&] { Storage::GpuMemory(n); }) == msg);
  for (Context used : st->Devices()) CHECK(used != Context::GPU(n));
}

TEST_CASE("Storage: Devices lists the devices allocated on, and ResetPeak is per device") {
  Storage* st = Storage::Get();
  Handle h = st->Alloc(100, Context::CPU(3));
  const std::vector<Context> devices = st->Devices();
  CHECK(std::find(devices.begin(), devices.end(), Context::CPU(3)) != devices.end());
  CHECK(std::is_sorted(devices.begin(), devices.end()));
  st->Free(h);
  CHECK(st->Stats(Context::CPU(3)).peak_bytes_in_use > 0);
  st->ResetPeak(Context::CPU(3));
  CHECK(st->Stats(Context::CPU(3)).peak_bytes_in_use == 0);
  st->ResetPeak(Context::CPU(4));  // never used: nothing to reset, no error
  CHECK(st->Stats(Context::CPU(4)).peak_bytes_in_use == 0);
  st->ReleaseAll(Context::CPU(3));
}

TEST_CASE("Storage: pinned memory works with or without a GPU") {
  Storage* st = Storage::Get();
  const Context pinned = Context::CPUPinned(0);
  Handle h = st->Alloc(5000, pinned);
  CHECK(h.ctx == pinned);
  CHECK(reinterpret_cast<uintptr_t>(h.dptr) % 64 == 0);
  std::memset(h.dptr, 1, 5000);
  CHECK(st->Stats(pinned).bytes_in_use >= 5000);
  st->Free(h);
  Handle again = st->Alloc(5000, pinned);
  CHECK(again.dptr == h.dptr);
  st->Free(again);
  st->ReleaseAll(pinned);
  CHECK(st->Stats(pinned).bytes_pooled == 0);
}

TEST_CASE("Storage: many threads allocating, writing and freeing") {
  Storage* st = Storage::Get();
  const Context cpu = Context::CPU();
  const size_t in_use_before = st->Stats(cpu).bytes_in_use;
  MemoryPool private_pool = MakeCpuPool({.pooling = true, .max_pooled_bytes = 1 << 20});

  constexpr int kThreads = 8, kIters = 3000;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<Handle, uint8_t>> held;
      std::vector<std::pair<void*, size_t>> priv;
      for (int i = 0; i < kIters; ++i) {
        if (held.size() < 16 && rng() % 3 != 0) {
          const size_t bytes = 1 + rng() % (rng() % 8 == 0 ? 200000 : 3000);
          Handle h = st->Alloc(bytes, cpu);
          const uint8_t tag = static_cast<uint8_t>(rng());
          std::memset(h.dptr, tag, bytes);
          held.emplace_back(h, tag);
          void* p = private_pool.Alloc(bytes);
          std::memset(p, tag, bytes);
          priv.emplace_back(p, bytes);
        } else if (!held.empty()) {
          const size_t k = rng() % held.size();
          const auto [h, tag] = held[k];
          const auto* bytes = static_cast<const uint8_t*>(h.dptr);
          if (bytes[0] != tag || bytes[h.size / 2] != tag || bytes[h.size - 1] != tag) ++failures;
          st->Free(h);
          held.erase(held.begin() + static_cast<long>(k));
          private_pool.Free(priv[k].first, priv[k].second);
          priv.erase(priv.begin() + static_cast<long>(k));
        }
      }
      for (auto& [h, tag] : held) st->Free(h);
      for (auto& [p, bytes] : priv) private_pool.Free(p, bytes);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  CHECK(st->Stats(cpu).bytes_in_use == in_use_before);
  CHECK(private_pool.Stats().bytes_in_use == 0);
  CHECK(private_pool.Stats().bytes_pooled <= (1 << 20));
  st->ReleaseAll(cpu);
}

#ifdef TESSERA_WITH_CUDA
TEST_CASE("Storage: GPU pool reuse, stats and out-of-memory message") {
  if (NumGPUs() == 0) {
    MESSAGE("skipped: no GPU");
    return;
  }
  Storage* st = Storage::Get();
  const Context gpu = Context::GPU(0);
  Handle h = st->Alloc(1 << 20, gpu);
  CHECK(reinterpret_cast<uintptr_t>(h.dptr) % 256 == 0);
  REQUIRE(cudaMemset(h.dptr, 0, 1 << 20) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(st->Stats(gpu).bytes_in_use == size_t{1} << 20);
  st->Free(h);
  Handle again = st->Alloc(1 << 20, gpu);
  CHECK(again.dptr == h.dptr);
  st->Free(again);

  // 64 TiB: below the absurd-size limit, beyond any GPU.
  const std::string msg = ErrorOf([&] { st->Alloc(size_t{1} << 46, gpu); });
  CHECK(Contains(msg, "out of memory allocating 64 TiB on gpu(0)"));
  CHECK(Contains(msg, "free of"));
  CHECK(st->Stats(gpu).bytes_pooled == 0);  // released before the retry
  CHECK(cudaGetLastError() == cudaSuccess);

  const DeviceMemory m = Storage::GpuMemory(0);
  CHECK(m.total_bytes > 0);
  CHECK(m.free_bytes <= m.total_bytes);

  Handle pinned = st->Alloc(4096, Context::CPUPinned(0));
  cudaPointerAttributes attr{};
  REQUIRE(cudaPointerGetAttributes(&attr, pinned.dptr) == cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeHost);
  st->Free(pinned);
}
#endif
