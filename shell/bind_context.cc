// mx.cpu, mx.gpu, mx.cpu_pinned, mx.context.
#include "bind_context.h"

#include <string>

#include "bindings.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

constexpr const char* kMeta = "tessera.Context";

int DeviceId(lua_State* L, int index) {
  lua_Integer id = luaL_optinteger(L, index, 0);
  if (id < 0 || id > 1 << 20) luaL_error(L, "device id must be a small non-negative integer");
  return static_cast<int>(id);
}

int Cpu(lua_State* L) {
  PushContext(L, Context::CPU(DeviceId(L, 1)));
  return 1;
}
int Gpu(lua_State* L) {
  PushContext(L, Context::GPU(DeviceId(L, 1)));
  return 1;
}
int CpuPinned(lua_State* L) {
  PushContext(L, Context::CPUPinned(DeviceId(L, 1)));
  return 1;
}
int NumGpus(lua_State* L) {
  lua_pushinteger(L, NumGPUs());  // loads the CUDA runtime on first use only
  return 1;
}

int ToString(lua_State* L) {
  std::string s = CheckContext(L, 1).ToString();
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
int Eq(lua_State* L) {
  lua_pushboolean(L,
                  IsContext(L, 1) && IsContext(L, 2) && CheckContext(L, 1) == CheckContext(L, 2));
  return 1;
}
int Index(lua_State* L) {
  Context c = CheckContext(L, 1);
  const std::string k = CheckString(L, 2, "context field");
  if (k == "device_type") {
    lua_pushstring(L, c.dev_type == DeviceType::kGPU         ? "gpu"
                      : c.dev_type == DeviceType::kCPUPinned ? "cpu_pinned"
                                                             : "cpu");
  } else if (k == "device_id") {
    lua_pushinteger(L, c.dev_id);
  } else {
    PushContextMethods(L);
    lua_getfield(L, -1, k.c_str());
  }
  return 1;
}

void Open(lua_State* L, int mx) {
  luaL_newmetatable(L, kMeta);
  lua_pushcfunction(L, ToString);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, Eq);
  lua_setfield(L, -2, "__eq");
  lua_pushcfunction(L, Index);
  lua_setfield(L, -2, "__index");
  lua_newtable(L);
  lua_setfield(L, -2, "methods");
  lua_pop(L, 1);

  SetFunctions(
      L, mx,
      {{"cpu", Cpu, "mx.cpu(i = 0) -> the context of CPU i, printed as cpu(i)"},
       {"gpu", Gpu, "mx.gpu(i = 0) -> the context of GPU i (checked when something runs on it)"},
       {"cpu_pinned", CpuPinned,
        "mx.cpu_pinned(i = 0) -> page-locked host memory, for fast GPU copies"}});
  lua_newtable(L);
  SetDoc(L, -1,
         "mx.context: devices and their memory. Fields: cpu, gpu, cpu_pinned, num_gpus, "
         "memory_stats, reset_peak_memory, empty_cache, gpu_memory_info, memory_report");
  lua_getfield(L, mx, "cpu");
  lua_setfield(L, -2, "cpu");
  lua_getfield(L, mx, "gpu");
  lua_setfield(L, -2, "gpu");
  lua_getfield(L, mx, "cpu_pinned");
  lua_setfield(L, -2, "cpu_pinned");
  SetFunctions(L, -1,
               {{"num_gpus", NumGpus,
                 "mx.context.num_gpus() -> the number of usable GPUs (0 without CUDA)"}});
  lua_setfield(L, mx, "context");
}

}  // namespace

void PushContext(lua_State* L, Context ctx) {
  auto* p = static_cast<Context*>(lua_newuserdata(L, sizeof(Context)));
  *p = ctx;
  luaL_setmetatable(L, kMeta);
}

void PushContextMethods(lua_State* L) {
  luaL_getmetatable(L, kMeta);
  lua_getfield(L, -1, "methods");
  lua_remove(L, -2);
}

bool IsContext(lua_State* L, int index) {
  return luaL_testudata(L, index, kMeta) != nullptr;
}

Context CheckContext(lua_State* L, int index, const char* what) {
  auto* p = static_cast<Context*>(luaL_testudata(L, index, kMeta));
  if (!p)
    luaL_error(L, "%s must be a context such as mx.cpu(0), got %s", what, luaL_typename(L, index));
  return *p;
}

Context OptContext(lua_State* L, int index, Context fallback) {
  return lua_isnoneornil(L, index) ? fallback : CheckContext(L, index);
}

TESSERA_SHELL_BINDING(context, 10, Open);

}  // namespace tessera::shell
