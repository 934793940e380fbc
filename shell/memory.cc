#include "memory.h"

#include <cstdio>
#include <exception>
#include <vector>

#include "engine/base/format_bytes.h"
#include "engine/resource/temp_space.h"
#include "engine/scheduler/object_pool.h"
#include "engine/storage/storage.h"

namespace tessera::shell {

using storage::Storage;

std::string MemoryReport() {
  Storage* st = Storage::Get();
  const std::vector<Context> devices = st->Devices();
  std::string out;
  char line[160];
  if (devices.empty())
    out += "no device memory allocated yet\n";
  else
    out += "device            in use     pooled       peak   from system   pool hits\n";
  for (Context ctx : devices) {
    const storage::StorageStats s = st->Stats(ctx);
    std::snprintf(line, sizeof line, "%-14s %9s  %9s  %9s  %12zu  %10zu\n", ctx.ToString().c_str(),
                  FormatBytes(s.bytes_in_use).c_str(), FormatBytes(s.bytes_pooled).c_str(),
                  FormatBytes(s.peak_bytes_in_use).c_str(), s.num_allocs, s.num_pool_hits);
    out += line;
  }
  out += "engine op blocks: " + FormatBytes(engine::ObjectPoolsHeld().bytes_held) + "\n";
  for (Context ctx : devices) {
    if (!ctx.is_gpu()) continue;
    try {
      const storage::DeviceMemory m = Storage::GpuMemory(ctx.dev_id);
      out += ctx.ToString() + ": the driver reports " + FormatBytes(m.free_bytes) + " free of " +
             FormatBytes(m.total_bytes) + "\n";
    } catch (const std::exception& e) {  // the pools' figures above still hold
      out += ctx.ToString() + ": " + e.what() + "\n";
    }
  }
  return out;
}

size_t EmptyCache(std::optional<Context> ctx) {
  Storage* st = Storage::Get();
  const std::vector<Context> devices = ctx ? std::vector<Context>{*ctx} : st->Devices();
  size_t released = 0;
  for (Context c : devices) {
    const size_t before = st->Stats(c).bytes_pooled;
    st->ReleaseAll(c);
    const size_t after = st->Stats(c).bytes_pooled;  // blocks freed meanwhile
    if (before > after) released += before - after;
  }
  resource::TempSpace::ReleaseAll();
  if (!ctx) released += engine::ReleaseObjectPools().bytes_released;
  return released;
}

}  // namespace tessera::shell
