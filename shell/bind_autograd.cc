// mx.autograd: recording imperative calls and differentiating them, plus the
// NDArray methods attach_grad, backward and detach and the field x.grad.
// The scoped forms (record(fn), pause(fn), train_mode(fn), predict_mode(fn))
// are Lua (shell/lua/autograd.lua): they set a mode,
// call fn, and restore the mode even when fn raises.
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bind_ndarray.h"
#include "bind_symbol.h"
#include "bindings.h"
#include "engine/autograd/autograd.h"
#include "engine/autograd/cached_op.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

int SetRecording(lua_State* L) {
  lua_pushboolean(L, autograd::SetRecording(lua_toboolean(L, 1)));
  return 1;
}
int SetTraining(lua_State* L) {
  lua_pushboolean(L, autograd::SetTraining(lua_toboolean(L, 1)));
  return 1;
}
int IsRecording(lua_State* L) {
  lua_pushboolean(L, autograd::IsRecording());
  return 1;
}
int IsTraining(lua_State* L) {
  lua_pushboolean(L, autograd::IsTraining());
  return 1;
}

// mx.autograd.backward(heads, head_grads, retain_graph, train_mode)
int Backward(lua_State* L) {
  const std::vector<NDArray> heads = nd::CheckArrayList(L, 1, "backward");
  const std::vector<NDArray> grads = nd::CheckArrayList(L, 2, "backward (head_grads)");
  const bool retain = lua_toboolean(L, 3);
  const bool train = lua_isnoneornil(L, 4) ? true : lua_toboolean(L, 4);
  autograd::Backward(heads, grads, retain, train);
  return 0;
}

// x:backward(head_grad, retain_graph, train_mode)
int NDBackward(lua_State* L) {
  NDArray& y = nd::CheckNDArray(L, 1, "backward");
  std::vector<NDArray> grads;
  if (!lua_isnoneornil(L, 2)) grads.push_back(nd::CheckNDArray(L, 2, "backward (head_grad)"));
  const bool train = lua_isnoneornil(L, 4) ? true : lua_toboolean(L, 4);
  autograd::Backward({y}, grads, lua_toboolean(L, 3), train);
  return 0;
}

int AttachGrad(lua_State* L) {
  NDArray& x = nd::CheckNDArray(L, 1, "attach_grad");
  autograd::AttachGrad(&x, CheckGradReq(L, 2, "attach_grad"));
  lua_settop(L, 1);
  return 1;
}

int Detach(lua_State* L) {
  nd::PushNDArray(L, nd::CheckNDArray(L, 1, "detach").Detach(), false);
  return 1;
}

int GetSymbol(lua_State* L) {
  sym::PushSymbol(L, autograd::GetSymbol(nd::CheckNDArray(L, 1, "get_symbol")));
  return 1;
}

// ---- CachedOp: a hybridized block's bound graph --------------------------------

constexpr const char* kCachedOpMeta = "tessera.CachedOp";

struct CachedOpBox {
  std::shared_ptr<autograd::CachedOp> op;
};

autograd::CachedOp& CheckCachedOp(lua_State* L, int index) {
  auto* box = static_cast<CachedOpBox*>(luaL_checkudata(L, index, kCachedOpMeta));
  if (!box->op) luaL_error(L, "CachedOp: already released");
  return *box->op;
}

void PushList(lua_State* L, const std::vector<NDArray>& arrays) {
  lua_createtable(L, static_cast<int>(arrays.size()), 0);
  for (size_t i = 0; i < arrays.size(); ++i) {
    nd::PushNDArray(L, arrays[i]);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

// mx.autograd._cached_op(sym, {data names}) -> a CachedOp
int NewCachedOp(lua_State* L) {
  const graph::Symbol& s = sym::CheckSymbol(L, 1, "_cached_op");
  std::vector<std::string> data = CheckStrings(L, 2, "_cached_op (data names)");
  auto op = std::make_shared<autograd::CachedOp>(s, data);
  auto* box = static_cast<CachedOpBox*>(lua_newuserdata(L, sizeof(CachedOpBox)));
  new (box) CachedOpBox{std::move(op)};
  luaL_getmetatable(L, kCachedOpMeta);
  lua_setmetatable(L, -2);
  return 1;
}

int CachedOpForward(lua_State* L) {
  autograd::CachedOp& op = CheckCachedOp(L, 1);
  std::vector<NDArray> in = nd::CheckArrayList(L, 2, "CachedOp:forward");
  PushList(L, op.Forward(in));
  return 1;
}

int CachedOpInputNames(lua_State* L) {
  const auto& names = CheckCachedOp(L, 1).input_names();
  lua_createtable(L, static_cast<int>(names.size()), 0);
  for (size_t i = 0; i < names.size(); ++i) {
    lua_pushlstring(L, names[i].data(), names[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 1;
}

int CachedOpNumExecutors(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckCachedOp(L, 1).num_executors()));
  return 1;
}

int CachedOpGc(lua_State* L) {
  auto* box = static_cast<CachedOpBox*>(luaL_checkudata(L, 1, kCachedOpMeta));
  box->~CachedOpBox();
  return 0;
}

void OpenCachedOp(lua_State* L, int ag) {
  SetFunctions(L, ag,
               {{"_cached_op", Guarded<NewCachedOp>,
                 "mx.autograd._cached_op(sym, {data names}) -> a CachedOp (what a hybridized "
                 "block runs): op:forward({inputs}) -> {outputs}, op:input_names(), "
                 "op:num_executors()"}});
  NewUserdataMeta(L, kCachedOpMeta, CachedOpGc,
                  {{"forward", Guarded<CachedOpForward>,
                    "op:forward({inputs}) -> {outputs}, inputs in op:input_names() order"},
                   {"input_names", Guarded<CachedOpInputNames>, "op:input_names() -> {names}"},
                   {"num_executors", Guarded<CachedOpNumExecutors>,
                    "op:num_executors() -> the executors bound so far"}});
}

void Open(lua_State* L, int mx) {
  lua_newtable(L);
  const int ag = lua_gettop(L);
  SetDoc(L, ag,
         "mx.autograd: record(fn), pause(fn), train_mode(fn), predict_mode(fn), is_recording(), "
         "is_training(), backward(heads, head_grads, retain_graph), get_symbol(y); with "
         "x:attach_grad(req), x.grad, y:backward(), x:detach().");
  SetFunctions(
      L, ag,
      {{"set_recording", Guarded<SetRecording>,
        "mx.autograd.set_recording(on) -> the previous state"},
       {"set_training", Guarded<SetTraining>, "mx.autograd.set_training(on) -> the previous state"},
       {"is_recording", Guarded<IsRecording>, "mx.autograd.is_recording() -> true inside record"},
       {"is_training", Guarded<IsTraining>,
        "mx.autograd.is_training() -> true inside record (by default) or train_mode"},
       {"backward", Guarded<Backward>,
        "mx.autograd.backward({heads}, {head_grads}, retain_graph, train_mode) -> gradients "
        "into the buffers of every attached array the heads depend on (head_grads nil: ones)"},
       {"get_symbol", Guarded<GetSymbol>,
        "mx.autograd.get_symbol(y) -> the recorded computation of y as a Symbol"}});
  OpenCachedOp(L, ag);
  lua_setfield(L, mx, "autograd");

  // The NDArray methods (the methods table is the __index of the metatable's
  // public stand-in).
  luaL_getmetatable(L, nd::kNDArrayMeta);
  lua_getfield(L, -1, "__metatable");
  lua_getfield(L, -1, "__index");
  SetFunctions(
      L, lua_gettop(L),
      {{"attach_grad", Guarded<AttachGrad>,
        "x:attach_grad(grad_req) -> x, with a zero gradient buffer x.grad; grad_req 'write' "
        "(default), 'add' (backward accumulates) or 'null'"},
       {"backward", Guarded<NDBackward>,
        "y:backward(head_grad, retain_graph, train_mode) -> gradients of y (head_grad nil: "
        "ones) into the attached arrays it depends on"},
       {"detach", Guarded<Detach>, "x:detach() -> the same values, cut from the recorded graph"}});
  lua_pop(L, 3);
}

}  // namespace

TESSERA_SHELL_BINDING(autograd, 60, Open);

}  // namespace tessera::shell
