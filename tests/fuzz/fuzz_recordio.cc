// libFuzzer harness: RecordIO files as MXRecordIO and MXIndexedRecordIO read
// them. The input is written to a file; the reader walks every record, then
// seeks to offsets taken from the input's last bytes. No record may hold
// more bytes than the file, and nothing but a tessera::Error may come out.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/base/error.h"
#include "engine/io/recordio.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

std::string g_path;

void Walk(tessera::io::RecordReader& r, size_t size, int limit) {
  std::string rec;
  for (int n = 0; n < limit && r.Next(&rec); ++n)
    if (rec.size() > size) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FuzzSetUp();
  const char* tmp = std::getenv("TMPDIR");
  g_path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_recordio." + std::to_string(getpid()) +
           ".rec";
  std::atexit([] { std::remove(g_path.c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(g_path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) std::abort();
  try {
    tessera::io::RecordReader r(g_path, "fuzz_recordio");
    try {
      Walk(r, size, 1 << 20);
    } catch (const tessera::Error&) {
    }
    // Offsets as an index would give them: 4-byte aligned, or not.
    for (size_t i = 0; i + 2 <= size && i < 8; i += 2) {
      const uint64_t at = (uint64_t(data[size - 1 - i]) << 8 | data[size - 2 - i]) % (size + 8);
      try {
        r.Seek(at);
        Walk(r, size, 4);
      } catch (const tessera::Error&) {
      }
    }
  } catch (const tessera::Error&) {
  }
  return 0;
}
