// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011): a counter-based generator. Output block = f(counter, key) with no
// state between calls, so any element of a random sequence can be computed
// independently, on any thread or GPU lane, in any order. Usable from host
// and device code.
#pragma once

#include <cstdint>

#ifndef TS_HOST_DEVICE
#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif
#endif

namespace tessera::resource {

struct PhiloxCounter {
  uint32_t v[4];
};
struct PhiloxKey {
  uint32_t v[2];
};

namespace philox_detail {

TS_HOST_DEVICE inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
#ifdef __CUDA_ARCH__
  *hi = __umulhi(a, b);
  *lo = a * b;
#else
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
#endif
}

}  // namespace philox_detail

// Ten rounds: the variant Random123 and cuRAND ship, with its published
// known-answer vectors (tests/cpp/resource_test.cc checks them).
TS_HOST_DEVICE inline PhiloxCounter Philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // golden ratio, sqrt(3)-1
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key is bumped before every round but the first
      k.v[0] += kWeyl0;
      k.v[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    philox_detail::MulHiLo(kMul0, c.v[0], &hi0, &lo0);
    philox_detail::MulHiLo(kMul1, c.v[2], &hi1, &lo1);
    c = PhiloxCounter{{hi1 ^ c.v[1] ^ k.v[0], lo1, hi0 ^ c.v[3] ^ k.v[1], lo0}};
  }
  return c;
}

}  // namespace tessera::resource
