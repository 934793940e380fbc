// libFuzzer harness: numeric CSV, as CSVIter reads it.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/base/error.h"
#include "engine/io/csv_file.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FuzzSetUp();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tessera::io::CsvRows r = tessera::io::ParseCsv(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", "fuzz_csv");
    size_t total = 0;
    for (size_t n : r.row_sizes) total += n;
    if (total != r.values.size() || r.values.size() > size) std::abort();
  } catch (const tessera::Error&) {
  }
  return 0;
}
