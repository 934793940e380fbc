// mx.rtc: CUDA kernels compiled at run time (ops/custom/rtc.h), as MXNet's:
//   local mod = mx.rtc.CudaModule(source, {options = {'--use_fast_math'}, exports = {...}})
//   local k = mod:get_kernel('axpy', 'const float* x, float* y, float a, int n')
//   k:launch({x, y, 2.0, n}, mx.gpu(0), {blocks, 1, 1}, {256, 1, 1}, 0)
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "bind_context.h"
#include "bind_ndarray.h"
#include "bindings.h"
#include "lua_util.h"
#include "ops/custom/rtc.h"

namespace tessera::shell {
namespace {

constexpr const char* kModuleMeta = "tessera.RtcModule";
constexpr const char* kKernelMeta = "tessera.RtcKernel";

struct ModuleBox {
  std::shared_ptr<op::RtcModule> module;
};
struct KernelBox {
  std::shared_ptr<op::RtcKernel> kernel;
};

template <typename Box>
int BoxGc(lua_State* L) {
  static_cast<Box*>(lua_touserdata(L, 1))->~Box();
  return 0;
}

template <typename Box, typename T>
void PushBox(lua_State* L, std::shared_ptr<T> value, const char* meta) {
  auto* box = static_cast<Box*>(lua_newuserdata(L, sizeof(Box)));
  new (box) Box{std::move(value)};
  luaL_getmetatable(L, meta);
  lua_setmetatable(L, -2);
}

// A list field of the options table: nil, or a list of strings.
std::vector<std::string> OptionList(lua_State* L, int opts, const char* key) {
  if (lua_isnoneornil(L, opts)) return {};
  luaL_checktype(L, opts, LUA_TTABLE);
  lua_getfield(L, opts, key);
  std::vector<std::string> out;
  if (!lua_isnil(L, -1)) {
    const std::string what = std::string("mx.rtc.CudaModule: ") + key;
    out = CheckStrings(L, lua_gettop(L), what.c_str());
  }
  lua_pop(L, 1);
  return out;
}

// mx.rtc.CudaModule(source, {options = {...}, exports = {...}})
int NewModule(lua_State* L) {
  const std::string source = CheckString(L, 1, "mx.rtc.CudaModule: the source");
  auto module = std::make_shared<op::RtcModule>(source, OptionList(L, 2, "options"),
                                                OptionList(L, 2, "exports"));
  PushBox<ModuleBox>(L, std::move(module), kModuleMeta);
  return 1;
}

op::RtcModule& CheckModule(lua_State* L) {
  return *static_cast<ModuleBox*>(luaL_checkudata(L, 1, kModuleMeta))->module;
}

const op::RtcKernel& CheckKernel(lua_State* L) {
  return *static_cast<KernelBox*>(luaL_checkudata(L, 1, kKernelMeta))->kernel;
}

int GetKernel(lua_State* L) {
  const op::RtcModule& m = CheckModule(L);
  auto k = std::make_shared<op::RtcKernel>(m.GetKernel(
      CheckString(L, 2, "get_kernel: the name"), CheckString(L, 3, "get_kernel: the signature")));
  PushBox<KernelBox>(L, std::move(k), kKernelMeta);
  return 1;
}

int Ptx(lua_State* L) {
  const std::string& ptx = CheckModule(L).ptx();
  lua_pushlstring(L, ptx.data(), ptx.size());
  return 1;
}

// {x, y, z} with 1 for missing trailing dimensions; a number is {n, 1, 1}.
std::array<unsigned, 3> Dims(lua_State* L, int index, const char* what) {
  std::array<unsigned, 3> d{1, 1, 1};
  auto take = [&](int i, int at) {
    const double v = lua_tonumber(L, at);
    if (lua_type(L, at) != LUA_TNUMBER || v < 1 || v > 4294967295.0 ||
        v != static_cast<unsigned>(v))
      luaL_error(L, "launch: %s must be whole numbers >= 1", what);
    d[i] = static_cast<unsigned>(v);
  };
  if (lua_type(L, index) == LUA_TNUMBER) {
    take(0, index);
    return d;
  }
  if (lua_type(L, index) != LUA_TTABLE)
    luaL_error(L, "launch: %s must be a number or {x, y, z}", what);
  const int n = static_cast<int>(lua_objlen(L, index));
  if (n < 1 || n > 3) luaL_error(L, "launch: %s must have 1 to 3 dimensions", what);
  for (int i = 0; i < n; ++i) {
    lua_rawgeti(L, index, i + 1);
    take(i, lua_gettop(L));
    lua_pop(L, 1);
  }
  return d;
}

// kernel:launch({args}, ctx, grid_dims, block_dims[, shared_mem])
int Launch(lua_State* L) {
  const op::RtcKernel& k = CheckKernel(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  std::vector<op::RtcArg> args;
  const int n = static_cast<int>(lua_objlen(L, 2));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, 2, i);
    if (NDArray* a = nd::ToNDArray(L, -1))
      args.emplace_back(*a);
    else if (lua_type(L, -1) == LUA_TNUMBER)
      args.emplace_back(lua_tonumber(L, -1));
    else
      luaL_error(L, "launch: argument %d is a %s; arguments are arrays and numbers", i,
                 luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  const Context ctx = CheckContext(L, 3, "launch: the context");
  const auto grid = Dims(L, 4, "grid_dims");
  const auto block = Dims(L, 5, "block_dims");
  const double shared = luaL_optnumber(L, 6, 0);
  if (shared < 0 || shared != static_cast<unsigned>(shared))
    luaL_error(L, "launch: shared_mem must be a whole number of bytes >= 0");
  k.Launch(args, ctx, grid, block, static_cast<unsigned>(shared));
  return 0;
}

int KernelName(lua_State* L) {
  lua_pushstring(L, CheckKernel(L).name().c_str());
  return 1;
}

void Open(lua_State* L, int mx) {
  lua_newtable(L);
  const int rtc = lua_gettop(L);
  SetFunctions(
      L, rtc,
      {{"CudaModule", Guarded<NewModule>,
        "mx.rtc.CudaModule(source, {options = {...}, exports = {...}}) -> a module: CUDA C\n"
        "compiled by NVRTC into PTX now (an error carries NVRTC's log), loaded into a GPU on\n"
        "its first launch there. options: NVRTC's ('--use_fast_math',\n"
        "'--gpu-architecture=compute_90'); exports: C++ names of kernels that are not\n"
        "extern \"C\" (templates, namespaces). mod:get_kernel(name, signature) -> a kernel;\n"
        "mod:ptx() -> the PTX text. NVRTC is opened on first use (TESSERA_NVRTC_LIBRARY,\n"
        "CUDA_HOME)."}});
  SetDoc(L, rtc,
         "mx.rtc: CUDA kernels compiled at run time with NVRTC, as MXNet's mx.rtc:\n"
         "  local mod = mx.rtc.CudaModule(src)\n"
         "  local k = mod:get_kernel('axpy', 'const float* x, float* y, float a, int n')\n"
         "  k:launch({x, y, 2, n}, mx.gpu(0), {blocks, 1, 1}, {256, 1, 1})");
  lua_setfield(L, mx, "rtc");
  NewUserdataMeta(
      L, kModuleMeta, BoxGc<ModuleBox>,
      {{"get_kernel", Guarded<GetKernel>,
        "mod:get_kernel(name, signature) -> a kernel. signature: the C parameter list,\n"
        "'const float* x, float* y, float a, int n'; arrays passed to const pointers are\n"
        "read by the launch, those passed to other pointers written"},
       {"ptx", Guarded<Ptx>, "mod:ptx() -> the PTX NVRTC made"}});
  NewUserdataMeta(
      L, kKernelMeta, BoxGc<KernelBox>,
      {{"launch", Guarded<Launch>,
        "kernel:launch({args}, ctx, grid_dims, block_dims[, shared_mem]) -> pushes the\n"
        "launch on ctx's GPU stream, after the ops that write its arrays and before later\n"
        "ones that use them. args: arrays (on ctx, of the pointer's type) and numbers, one\n"
        "per parameter; dims: {x, y, z} or a number"},
       {"name", Guarded<KernelName>, "kernel:name() -> the kernel's name"}});
}

}  // namespace

TESSERA_SHELL_BINDING(rtc, 75, Open);

}  // namespace tessera::shell
