// libFuzzer harness: NDArray files, the project's format and both MXNet
// layouts (V1-V3 records and the legacy ones), told apart by their first
// bytes. What loads must also save, and load again to the same arrays.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/ndarray/serialize.h"
#include "tests/fuzz/fuzz_common.h"

using tessera::LoadedArrays;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FuzzSetUp();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LoadedArrays a;
  try {
    a = tessera::LoadNDArraysFromString({reinterpret_cast<const char*>(data), size}, "fuzz");
  } catch (const tessera::Error&) {
    return 0;
  }
  std::vector<std::vector<double>> values;
  for (const tessera::NDArray& x : a.arrays)
    values.push_back(x.is_none() ? std::vector<double>() : x.ToVector());
  // A file may repeat a name, which saving refuses; anything else that
  // loaded must round-trip.
  std::string again;
  try {
    again = tessera::SaveNDArraysToString(a.arrays, a.names, a.format);
  } catch (const tessera::Error&) {
    return 0;
  }
  const LoadedArrays b = tessera::LoadNDArraysFromString(again, "resaved");
  if (b.arrays.size() != a.arrays.size() || b.names != a.names) std::abort();
  for (size_t i = 0; i < b.arrays.size(); ++i) {
    const tessera::NDArray& x = a.arrays[i];
    const tessera::NDArray& y = b.arrays[i];
    if (x.is_none() != y.is_none()) std::abort();
    if (x.is_none()) continue;
    if (!(x.shape() == y.shape()) || x.dtype() != y.dtype()) std::abort();
    const std::vector<double> v = y.ToVector();
    for (size_t k = 0; k < v.size(); ++k)
      if (v[k] != values[i][k] && !(v[k] != v[k] && values[i][k] != values[i][k])) std::abort();
  }
  return 0;
}
