// Device memory from Lua: mx.context.memory_stats, reset_peak_memory,
// empty_cache, gpu_memory_info, and the ctx:memory_stats() / ctx:empty_cache()
// methods.
#include <optional>

#include "bind_context.h"
#include "bindings.h"
#include "engine/storage/storage.h"
#include "lua_util.h"
#include "memory.h"

namespace tessera::shell {
namespace {

using storage::Storage;

void SetNumber(lua_State* L, const char* key, size_t value) {
  lua_pushnumber(L, static_cast<lua_Number>(value));
  lua_setfield(L, -2, key);
}

int MemoryStats(lua_State* L) {
  const storage::StorageStats s = Storage::Get()->Stats(OptContext(L, 1, Context::CPU()));
  lua_createtable(L, 0, 5);
  SetNumber(L, "in_use", s.bytes_in_use);
  SetNumber(L, "pooled", s.bytes_pooled);
  SetNumber(L, "peak", s.peak_bytes_in_use);
  SetNumber(L, "allocs", s.num_allocs);
  SetNumber(L, "pool_hits", s.num_pool_hits);
  return 1;
}

int ResetPeak(lua_State* L) {
  Storage::Get()->ResetPeak(OptContext(L, 1, Context::CPU()));
  return 0;
}

int EmptyCacheFn(lua_State* L) {
  std::optional<Context> ctx;
  if (!lua_isnoneornil(L, 1)) ctx = CheckContext(L, 1, "empty_cache: the device");
  lua_pushnumber(L, static_cast<lua_Number>(EmptyCache(ctx)));
  return 1;
}

int GpuMemoryInfo(lua_State* L) {
  const lua_Integer id = luaL_optinteger(L, 1, 0);
  if (id < 0 || id >= Storage::kMaxDeviceIds)
    luaL_error(L, "gpu_memory_info: device id must be in 0..%d, got %d", Storage::kMaxDeviceIds - 1,
               static_cast<int>(id));
  const storage::DeviceMemory m = Storage::GpuMemory(static_cast<int>(id));
  lua_pushnumber(L, static_cast<lua_Number>(m.free_bytes));
  lua_pushnumber(L, static_cast<lua_Number>(m.total_bytes));
  return 2;
}

int Report(lua_State* L) {
  const std::string text = MemoryReport();
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

void Open(lua_State* L, int mx) {
  PushTableField(L, mx, "context");
  SetFunctions(
      L, lua_gettop(L),
      {{"memory_stats", Guarded<MemoryStats>,
        "mx.context.memory_stats(ctx = mx.cpu()) -> {in_use, pooled, peak, allocs, pool_hits}: "
        "bytes in blocks handed out, bytes kept for reuse, the highest in_use so far, and "
        "how many allocations went to the system or were served from the pool"},
       {"reset_peak_memory", Guarded<ResetPeak>,
        "mx.context.reset_peak_memory(ctx = mx.cpu()) -> makes ctx's peak its current "
        "in_use, so memory_stats(ctx).peak measures what runs next"},
       {"empty_cache", Guarded<EmptyCacheFn>,
        "mx.context.empty_cache(ctx) -> bytes given back to the system: ctx's pooled "
        "blocks, or with no ctx every device's and the engine's spare op blocks. Arrays "
        "whose last ops still run are not back in the pool yet: call mx.nd.waitall() first"},
       {"gpu_memory_info", Guarded<GpuMemoryInfo>,
        "mx.context.gpu_memory_info(i = 0) -> free, total: bytes of gpu(i) as the driver "
        "reports them, every process counted"},
       {"memory_report", Guarded<Report>,
        "mx.context.memory_report() -> the text :memory prints: per device in use, "
        "pooled, peak and counts, the engine's op blocks, and GPUs' free memory"}});
  lua_pop(L, 1);

  PushContextMethods(L);
  SetFunctions(
      L, lua_gettop(L),
      {{"memory_stats", Guarded<MemoryStats>, "ctx:memory_stats() -> mx.context.memory_stats(ctx)"},
       {"empty_cache", Guarded<EmptyCacheFn>,
        "ctx:empty_cache() -> bytes of ctx's pooled blocks given back to the system"}});
  lua_pop(L, 1);
}

}  // namespace

TESSERA_SHELL_BINDING(memory, 11, Open);

}  // namespace tessera::shell
