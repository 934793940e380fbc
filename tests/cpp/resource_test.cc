// Tests of the resource manager: Philox, random fills, streams, temp space.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/error.h"
#include "engine/base/thread_state.h"
#include "engine/resource/philox.h"
#include "engine/resource/random.h"
#include "engine/resource/resource.h"
#include "engine/resource/temp_space.h"
#include "engine/storage/bucket.h"
#include "engine/storage/storage.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef TESSERA_WITH_CUDA
#include <cuda_runtime.h>

#include "engine/resource/random_gpu.h"
#endif

#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::test;
using namespace tessera::resource;
using namespace tessera::storage;

namespace {

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};

template <typename T>
Moments MomentsOf(const std::vector<T>& v) {
  Moments m;
  for (T x : v) {
    m.mean += static_cast<double>(x);
    m.min = std::min(m.min, static_cast<double>(x));
    m.max = std::max(m.max, static_cast<double>(x));
  }
  m.mean /= static_cast<double>(v.size());
  for (T x : v) m.var += (static_cast<double>(x) - m.mean) * (static_cast<double>(x) - m.mean);
  m.var /= static_cast<double>(v.size());
  return m;
}

// Every fill of one stream, at the given thread count.
struct AllFills {
  std::vector<uint32_t> bits;
  std::vector<float> uniform_f, normal_f;
  std::vector<double> uniform_d, normal_d;
};

AllFills FillAll(const RandomStream& s, size_t n, int threads) {
  AllFills f;
  f.bits.resize(n);
  f.uniform_f.resize(n);
  f.normal_f.resize(n);
  f.uniform_d.resize(n);
  f.normal_d.resize(n);
  FillRandomBits(s, f.bits.data(), n, threads);
  FillUniform(s, f.uniform_f.data(), n, -1.0f, 2.0f, threads);
  FillNormal(s, f.normal_f.data(), n, 0.5f, 3.0f, threads);
  FillUniform(s, f.uniform_d.data(), n, -1.0, 2.0, threads);
  FillNormal(s, f.normal_d.data(), n, 0.5, 3.0, threads);
  return f;
}

void CheckSame(const AllFills& a, const AllFills& b) {
  CHECK(SameBits(a.bits, b.bits));
  CHECK(SameBits(a.uniform_f, b.uniform_f));
  CHECK(SameBits(a.normal_f, b.normal_f));
  CHECK(SameBits(a.uniform_d, b.uniform_d));
  CHECK(SameBits(a.normal_d, b.normal_d));
}

// Restores OpDepth() when a test that sets it ends, even by a failed REQUIRE.
struct DepthGuard {
  int saved = OpDepth();
  ~DepthGuard() { OpDepth() = saved; }
};

}  // namespace

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors") {
  struct Kat {
    PhiloxCounter ctr;
    PhiloxKey key;
    PhiloxCounter want;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, {{0, 0}}, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {{0xffffffff, 0xffffffff}},
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {{0xa4093822, 0x299f31d0}},
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& k : kats) {
    const PhiloxCounter got = Philox4x32_10(k.ctr, k.key);
    for (int i = 0; i < 4; ++i) CHECK(got.v[i] == k.want.v[i]);
  }
}

TEST_CASE("fills follow the documented (seed, stream, element) mapping") {
  const RandomStream s{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  std::vector<uint32_t> bits(1001);
  FillRandomBits(s, bits.data(), bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    const PhiloxCounter block = Philox4x32_10({{uint32_t(i / 4), 0, 0x76543210u, 0xfedcba98u}},
                                              {{0x89abcdefu, 0x01234567u}});
    REQUIRE(bits[i] == block.v[i % 4]);
    REQUIRE(bits[i] == RandomBits(s, i));
  }
  std::vector<float> u(1001);
  FillUniform(s, u.data(), u.size(), 0.0f, 1.0f);
  for (size_t i = 0; i < u.size(); ++i) REQUIRE(u[i] == RandomUniformFloat(s, i));

  // An element does not depend on how many are drawn.
  const AllFills small = FillAll(s, 7, 1), large = FillAll(s, 1000, 1);
  CHECK(std::memcmp(small.normal_f.data(), large.normal_f.data(), 7 * sizeof(float)) == 0);
  CHECK(std::memcmp(small.normal_d.data(), large.normal_d.data(), 7 * sizeof(double)) == 0);
  CHECK(std::memcmp(small.uniform_d.data(), large.uniform_d.data(), 7 * sizeof(double)) == 0);
}

TEST_CASE("fills are identical for 1, 2 and 4 threads") {
  const RandomStream s{42, 7};
  const size_t n = 100003;  // several chunks, and a ragged last Philox block
  const AllFills one = FillAll(s, n, 1);
  CheckSame(one, FillAll(s, n, 2));
  CheckSame(one, FillAll(s, n, 4));
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  for (int t : {1, 2, 4}) {
    omp_set_num_threads(t);
    CheckSame(one, FillAll(s, n, 0));
  }
  omp_set_num_threads(saved);
#else
  CheckSame(one, FillAll(s, n, 0));
#endif
}

TEST_CASE("different streams and seeds give different numbers") {
  const size_t n = 64;
  std::vector<uint32_t> a(n), b(n), c(n);
  FillRandomBits({1, 0}, a.data(), n);
  FillRandomBits({1, 1}, b.data(), n);
  FillRandomBits({2, 0}, c.data(), n);
  int same_ab = 0, same_ac = 0;
  for (size_t i = 0; i < n; ++i) {
    same_ab += a[i] == b[i];
    same_ac += a[i] == c[i];
  }
  CHECK(same_ab == 0);
  CHECK(same_ac == 0);
}

TEST_CASE("uniform and normal statistics over 1e6 samples") {
  const size_t n = 1000000;
  const RandomStream s{2024, 3};
  {
    std::vector<float> v(n);
    FillUniform(s, v.data(), n, -2.0f, 3.0f);
    const Moments m = MomentsOf(v);
    CHECK(m.mean == doctest::Approx(0.5).epsilon(0.01));  // sd of the mean: 0.0014
    CHECK(m.var == doctest::Approx(25.0 / 12).epsilon(0.01));
    CHECK(m.min >= -2.0);
    CHECK(m.max < 3.0);
  }
  {
    std::vector<double> v(n);
    FillUniform(s, v.data(), n, 0.0, 1.0);
    const Moments m = MomentsOf(v);
    CHECK(std::abs(m.mean - 0.5) < 0.002);
    CHECK(std::abs(m.var - 1.0 / 12) < 0.001);
    CHECK(m.min >= 0.0);
    CHECK(m.max < 1.0);
  }
  {
    std::vector<float> v(n);
    FillNormal(s, v.data(), n, 1.0f, 2.0f);
    const Moments m = MomentsOf(v);
    CHECK(std::abs(m.mean - 1.0) < 0.01);  // sd of the mean: 0.002
    CHECK(std::abs(std::sqrt(m.var) - 2.0) < 0.01);
    size_t within_one_sd = 0;
    for (float x : v) within_one_sd += std::abs(x - 1.0f) < 2.0f;
    CHECK(std::abs(double(within_one_sd) / n - 0.6827) < 0.003);
  }
  {
    std::vector<double> v(n);
    FillNormal(s, v.data(), n, -3.0, 0.5);
    const Moments m = MomentsOf(v);
    CHECK(std::abs(m.mean + 3.0) < 0.0025);
    CHECK(std::abs(std::sqrt(m.var) - 0.5) < 0.0025);
  }
}

TEST_CASE("ResourceManager: streams follow request order and repeat after seeding") {
  ResourceManager* rm = ResourceManager::Get();
  const Context cpu = Context::CPU(), gpu0 = Context::GPU(0), gpu1 = Context::GPU(1);
  rm->SeedRandom(42);
  const RandomStream a = rm->Request(cpu, ResourceRequest::kRandom).get_random();
  const RandomStream b = rm->Request(cpu, ResourceRequest::kRandom).get_random();
  const RandomStream c = rm->Request(Context::CPUPinned(0), ResourceRequest::kRandom).get_random();
  const RandomStream g0 = rm->Request(gpu0, ResourceRequest::kRandom).get_random();
  const RandomStream g1 = rm->Request(gpu1, ResourceRequest::kRandom).get_random();
  CHECK(a.seed == 42);
  CHECK(a.stream_id != b.stream_id);
  CHECK(c.stream_id != a.stream_id);  // pinned counts as cpu(0): the next stream
  CHECK(c.stream_id != b.stream_id);
  CHECK(g0.stream_id == a.stream_id);   // cpu(i) and gpu(i) draw alike...
  CHECK(g1.stream_id != g0.stream_id);  // ...but devices of one kind never share

  rm->SeedRandom(42);
  CHECK(rm->Request(cpu, ResourceRequest::kRandom).get_random().stream_id == a.stream_id);
  CHECK(rm->Request(cpu, ResourceRequest::kRandom).get_random().stream_id == b.stream_id);

  // Seeding one device leaves the others' counters alone.
  rm->SeedRandom(gpu1, 7);
  const RandomStream g1_again = rm->Request(gpu1, ResourceRequest::kRandom).get_random();
  CHECK(g1_again.seed == 7);
  CHECK(g1_again.stream_id == g1.stream_id);
  CHECK(rm->Request(cpu, ResourceRequest::kRandom).get_random().stream_id == c.stream_id);

  // Requests from many threads never hand out one stream twice.
  rm->SeedRandom(1);
  std::vector<std::vector<uint64_t>> ids(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        ids[t].push_back(rm->Request(cpu, ResourceRequest::kRandom).get_random().stream_id);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all;
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(all.back() - all.front() == 3999);

  CHECK(Contains(ErrorOf([&] { rm->Request(Context::CPU(-1), ResourceRequest::kRandom); }),
                 "invalid device"));
  rm->SeedRandom(ResourceManager::kDefaultSeed);
}

TEST_CASE("Resource: accessors check the kind") {
  ResourceManager* rm = ResourceManager::Get();
  const Resource rnd = rm->Request(Context::CPU(), ResourceRequest::kRandom);
  const Resource tmp = rm->Request(Context::CPU(), ResourceRequest::kTempSpace);
  CHECK(rnd.type() == ResourceRequest::kRandom);
  CHECK(tmp.type() == ResourceRequest::kTempSpace);
  CHECK(tmp.ctx() == Context::CPU());
  CHECK(Contains(ErrorOf([&] { rnd.get_space(16); }), "get_space() on a random resource"));
  CHECK(Contains(ErrorOf([&] { tmp.get_random(); }), "get_random() on a temp space resource"));
  CHECK(Contains(ErrorOf([&] { tmp.get_space_typed<double>(SIZE_MAX / 4); }), "overflow"));
  float* f = tmp.get_space_typed<float>(100);
  REQUIRE(f != nullptr);
  for (int i = 0; i < 100; ++i) f[i] = float(i);
}

TEST_CASE("TempSpace: grows, keeps its buffer, and is 64-byte aligned") {
  const Context cpu = Context::CPU();
  std::thread([&] {
    Storage* st = Storage::Get();
    const size_t before = st->Stats(cpu).bytes_in_use;
    void* p = TempSpace::Get(cpu, 100);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    CHECK(TempSpace::Get(cpu, 64) == p);
    CHECK(TempSpace::Get(cpu, 128) == p);  // the whole size class is usable
    void* q = TempSpace::Get(cpu, 100000);
    std::memset(q, 1, 100000);
    CHECK(TempSpace::Get(cpu, 1000) == q);
    CHECK(st->Stats(cpu).bytes_in_use - before == RoundUpBucket(100000));
    CHECK(TempSpace::Get(cpu, 0) == nullptr);

    // ReleaseAll lets the big buffer go at this thread's next Get.
    TempSpace::ReleaseAll();
    void* r = TempSpace::Get(cpu, 100);
    REQUIRE(r != nullptr);
    CHECK(st->Stats(cpu).bytes_in_use - before == RoundUpBucket(100));
  }).join();
}

TEST_CASE("TempSpace: separate buffers per op depth and per thread; thread exit frees") {
  const Context cpu = Context::CPU();
  Storage* st = Storage::Get();
  DepthGuard guard;

  OpDepth() = 1;
  void* d1 = TempSpace::Get(cpu, 4096);
  OpDepth() = 2;  // an op run inline while the depth-1 op waits
  void* d2 = TempSpace::Get(cpu, 4096);
  CHECK(d1 != d2);
  OpDepth() = 1;
  CHECK(TempSpace::Get(cpu, 4096) == d1);
  std::memset(d1, 1, 4096);
  std::memset(d2, 2, 4096);
  CHECK(static_cast<unsigned char*>(d1)[4095] == 1);

  const size_t before = st->Stats(cpu).bytes_in_use;
  void* other = nullptr;
  size_t during = 0;
  std::thread([&] {
    OpDepth() = 1;
    other = TempSpace::Get(cpu, 4096);
    std::memset(other, 3, 4096);
    during = st->Stats(cpu).bytes_in_use;
  }).join();
  CHECK(other != d1);
  CHECK(other != d2);
  CHECK(during - before == 4096);
  CHECK(st->Stats(cpu).bytes_in_use == before);  // returned at thread exit
}

#ifdef TESSERA_WITH_CUDA
TEST_CASE("GPU fills equal the CPU fills") {
  if (NumGPUs() == 0) {
    MESSAGE("skipped: no GPU");
    return;
  }
  const RandomStream s{99, 5};
  const size_t n = 100003;
  const AllFills cpu = FillAll(s, n, 0);
  Storage* st = Storage::Get();
  Handle h = st->Alloc(n * sizeof(double), Context::GPU(0));
  REQUIRE(cudaSetDevice(0) == cudaSuccess);

  auto fetch = [&](auto* host) {
    REQUIRE(cudaMemcpy(host, h.dptr, n * sizeof(*host), cudaMemcpyDeviceToHost) == cudaSuccess);
  };
  std::vector<uint32_t> bits(n);
  FillRandomBitsGpu(s, static_cast<uint32_t*>(h.dptr), n, nullptr);
  fetch(bits.data());
  CHECK(SameBits(bits, cpu.bits));

  std::vector<float> f(n);
  FillUniformGpu(s, static_cast<float*>(h.dptr), n, -1.0f, 2.0f, nullptr);
  fetch(f.data());
  CHECK(SameBits(f, cpu.uniform_f));
  FillNormalGpu(s, static_cast<float*>(h.dptr), n, 0.5f, 3.0f, nullptr);
  fetch(f.data());
  size_t far = 0;
  for (size_t i = 0; i < n; ++i)
    far += std::abs(f[i] - cpu.normal_f[i]) > 1e-5f * (1 + std::abs(f[i]));
  CHECK(far == 0);

  std::vector<double> d(n);
  FillUniformGpu(s, static_cast<double*>(h.dptr), n, -1.0, 2.0, nullptr);
  fetch(d.data());
  CHECK(SameBits(d, cpu.uniform_d));
  FillNormalGpu(s, static_cast<double*>(h.dptr), n, 0.5, 3.0, nullptr);
  fetch(d.data());
  far = 0;
  for (size_t i = 0; i < n; ++i)
    far += std::abs(d[i] - cpu.normal_d[i]) > 1e-12 * (1 + std::abs(d[i]));
  CHECK(far == 0);
  st->Free(h);
}

TEST_CASE("TempSpace on a GPU") {
  if (NumGPUs() == 0) {
    MESSAGE("skipped: no GPU");
    return;
  }
  const Context gpu = Context::GPU(0);
  std::thread([&] {
    void* p = TempSpace::Get(gpu, 1 << 20);
    REQUIRE(p != nullptr);
    CHECK(cudaMemset(p, 0, 1 << 20) == cudaSuccess);
    void* q = TempSpace::Get(gpu, 4 << 20);
    CHECK(q != nullptr);
    CHECK(Storage::Get()->Stats(gpu).bytes_in_use >= (4u << 20));
  }).join();
  CHECK(Storage::Get()->Stats(gpu).bytes_in_use == 0);
}
#endif
