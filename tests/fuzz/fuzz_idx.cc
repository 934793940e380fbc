// libFuzzer harness: IDX files (MNIST's format) as MNISTIter reads them.
// Plain input is parsed from memory; gzip'd input (it starts 1f 8b) goes
// through a file and zlib, the way MNIST's .gz files are read. Whatever the
// header claims, the reader may only allocate in step with the bytes it got.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/base/error.h"
#include "engine/io/idx_file.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

std::string g_gz_path;

tessera::io::IdxData Read(const uint8_t* data, size_t size, int want) {
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    std::FILE* f = std::fopen(g_gz_path.c_str(), "wb");
    if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
    return tessera::io::ReadIdxFile(g_gz_path, want, "fuzz_idx");
  }
  size_t pos = 0;
  auto read = [&](void* buf, size_t n) {
    n = std::min(n, size - pos);
    if (n) std::memcpy(buf, data + pos, n);
    pos += n;
    return n;
  };
  return tessera::io::ReadIdx(read, want, "fuzz", "fuzz_idx");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FuzzSetUp();
  const char* tmp = std::getenv("TMPDIR");
  g_gz_path =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_idx." + std::to_string(getpid()) + ".gz";
  std::atexit([] { std::remove(g_gz_path.c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The last byte picks the dimensions asked for, as MNISTIter asks for 3
  // (images) or 1 (labels); 0 takes any.
  const int want = size ? data[size - 1] % 4 : 0;
  try {
    const tessera::io::IdxData d = Read(data, size, want);
    uint64_t count = 1;
    for (int64_t x : d.dims) count *= uint64_t(x);
    if (d.bytes.size() != count) std::abort();
  } catch (const tessera::Error&) {
  }
  return 0;
}
