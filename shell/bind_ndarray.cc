// mx.nd, part 1: the NDArray userdata. Its box, telling it from other
// values, pushing it (and an op's outputs) on the Lua stack, GC pacing and the
// finalizer; and the opener that assembles mx.nd and the NDArray metatable
// from the parts in the other files (bind_ndarray.h lists them).
#include "bind_ndarray.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "bindings.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/op_attr_types.h"
#include "engine/scheduler/object_pool.h"
#include "lua_util.h"

namespace tessera::shell::nd {

// The NDArray metatable of the interpreter's state: its address, to tell an
// NDArray from other userdata without looking the name up, and a registry
// reference to set it on new arrays.
const void* g_meta = nullptr;
int g_meta_ref = LUA_NOREF;

namespace {

// ---- GC pacing.
//
// The GC sees only the small userdata, not the tensor memory behind it, so a
// loop that drops a 100 MB array per iteration would otherwise outrun it by
// orders of magnitude. LuaJIT 2.1 has no size hint for userdata, so the
// binding reports tensor allocations itself: new tensor memory advances the
// collector as if Lua had allocated it (LUA_GCSTEP takes KB), which, once the
// debt passes the Lua heap, runs the collector to the end of a cycle.
//
// A cycle walks the whole Lua heap, whatever the tensors' sizes: stepping
// after every 256 KB made a loop of 64K-element adds spend most of its time
// walking a 200 KB heap, and a ResNet-18 imperative step 10% of its time. So
// the debt that starts a cycle grows with the heap: kGcHeapMultiple heaps'
// worth of tensor bytes, which bounds the walk's cost per byte, within
// [kGcMinDebt, kGcMaxDebt], which bounds the tensor memory left waiting for
// a collection.
size_t g_live_bytes = 0;
size_t g_gc_debt = 0;
constexpr size_t kGcMinDebt = 256 << 10;
constexpr size_t kGcMaxDebt = 64 << 20;
constexpr size_t kGcHeapMultiple = 8;
size_t g_gc_due = kGcMinDebt;

// Runs the collector for the debt, then sets the next cycle's by the heap
// that survived.
void CollectForTensors(lua_State* L) {
  const size_t kb = g_gc_debt >> 10;
  g_gc_debt = 0;
  lua_gc(L, LUA_GCSTEP, static_cast<int>(std::min<size_t>(kb, 1u << 30)));
  const size_t heap = size_t(lua_gc(L, LUA_GCCOUNT, 0)) << 10;
  g_gc_due = std::clamp(kGcHeapMultiple * heap, kGcMinDebt, kGcMaxDebt);
}

void AccountAlloc(lua_State* L, size_t bytes) {
  g_live_bytes += bytes;
  g_gc_debt += bytes;
  if (g_gc_debt >= g_gc_due) [[unlikely]]
    CollectForTensors(L);
}

// ---- Telling NDArrays from other values.
//
// Every operator call checks each argument's metatable, and the finalizer
// checks its own: through the API that is three calls and a stack push per
// check, a tenth of a Lua `a + b` on small arrays. LuaJIT keeps a full
// userdata's metatable in the header right before its payload, at an offset
// fixed by its build. FindMetaOffset finds that offset on the running LuaJIT
// and proves it with two metatables and none; where the proof fails (another
// layout), the offset stays 0 and every check goes through the API.
ptrdiff_t g_meta_offset = 0;

const void* WordBefore(const void* payload, ptrdiff_t offset) {
  const void* w;
  std::memcpy(&w, static_cast<const char*>(payload) - offset, sizeof w);
  return w;
}

void FindMetaOffset(lua_State* L) {
  g_meta_offset = 0;
  const int top = lua_gettop(L);
  void* with[2];
  const void* metas[2];
  for (int i = 0; i < 2; ++i) {
    with[i] = lua_newuserdata(L, sizeof(void*));
    lua_newtable(L);
    metas[i] = lua_topointer(L, -1);
    lua_setmetatable(L, -2);
  }
  const void* without = lua_newuserdata(L, sizeof(void*));
  ptrdiff_t found = 0;
  int matches = 0;
  // Only offsets inside the header of the GC64 LuaJIT the interpreter
  // requires (48 bytes, the field 16 before the payload): no read leaves
  // the object.
  for (ptrdiff_t off = sizeof(void*); off <= 32; off += sizeof(void*)) {
    if (WordBefore(with[0], off) == metas[0] && WordBefore(with[1], off) == metas[1] &&
        WordBefore(without, off) == nullptr) {
      found = off;
      ++matches;
    }
  }
  lua_settop(L, top);
  if (matches == 1) g_meta_offset = found;
}

int NDGc(lua_State* L) {
  NDBox** slot = BoxSlot(L, 1);
  if (!slot) luaL_checkudata(L, 1, kNDArrayMeta);  // raises
  // The slot is cleared: a finalized array (reachable again only through a
  // weak table or another finalizer) is no NDArray any more.
  if (NDBox* box = std::exchange(*slot, nullptr)) {
    g_live_bytes -= box->accounted;
    engine::ObjectPool<NDBox>::Delete(box);
  }
  return 0;
}

int IsNDArray(lua_State* L) {
  lua_pushboolean(L, ToNDArray(L, 1) != nullptr);
  return 1;
}

int LiveBytes(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(g_live_bytes));
  return 1;
}

bool VarOfNDArray(lua_State* L, int index, engine::VarHandle* var) {
  NDArray* a = ToNDArray(L, index);
  if (!a || a->is_none()) return false;
  *var = a->var();
  return true;
}

void Open(lua_State* L, int mx) {
  lua_newtable(L);
  const int nd = lua_gettop(L);
  SetDoc(L, nd,
         "mx.nd: NDArrays. mx.nd.array(t), zeros, ones, full, empty, arange, eye, "
         "random.uniform/normal/randint; every registered operator as mx.nd.<op>(inputs..., "
         "{params}); save, load, waitall. Indices and axes are 1-based.");

  luaL_newmetatable(L, kNDArrayMeta);
  const int meta = lua_gettop(L);
  // Recorded for this state; a reference left by a closed earlier state
  // means nothing here and is not released.
  g_meta = lua_topointer(L, meta);
  FindMetaOffset(L);
  lua_pushvalue(L, meta);
  g_meta_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  const int methods = lua_gettop(L);
  OpenMethods(L, methods);
  OpenValues(L, meta, methods, nd);
  OpenArith(L, meta, methods);
  OpenFields(L, meta, methods, nd);
  SetFunctions(L, meta, {{"__gc", NDGc, nullptr}});
  lua_settop(L, nd);

  SetFunctions(L, nd,
               {{"is_ndarray", Guarded<IsNDArray>, "mx.nd.is_ndarray(x) -> true for an NDArray"},
                {"_live_bytes", Guarded<LiveBytes>,
                 "mx.nd._live_bytes() -> tensor bytes held by live Lua NDArrays (GC pacing)"}});
  OpenCreation(L, mx, nd);
  OpenIO(L, nd);
  OpenOps(L, nd);  // last: it sets the metatable that serves mx.nd.<op>
  lua_setfield(L, mx, "nd");
  RegisterVarSource(VarOfNDArray);
}

}  // namespace

void PushNDArray(lua_State* L, NDArray arr, bool owns_memory) {
  const size_t bytes = owns_memory && arr.chunk() ? arr.chunk()->bytes : 0;
  // The userdata first: should Lua fail to allocate it, nothing is owned yet.
  auto** slot = static_cast<NDBox**>(lua_newuserdata(L, sizeof(NDBox*)));
  *slot = nullptr;
  lua_rawgeti(L, LUA_REGISTRYINDEX, g_meta_ref);
  lua_setmetatable(L, -2);
  *slot = engine::ObjectPool<NDBox>::New(std::move(arr), bytes);
  if (bytes) AccountAlloc(L, bytes);
}

NDBox** BoxSlot(lua_State* L, int index) {
  if (g_meta_offset && lua_type(L, index) == LUA_TUSERDATA) {
    void* p = lua_touserdata(L, index);
    if (WordBefore(p, g_meta_offset) == g_meta) return static_cast<NDBox**>(p);
  }
  void* p = lua_touserdata(L, index);
  if (!p || !lua_getmetatable(L, index)) return nullptr;
  const bool ours = lua_topointer(L, -1) == g_meta;
  lua_pop(L, 1);
  if (ours) return static_cast<NDBox**>(p);
  // Not the metatable recorded last: by name (another state's arrays).
  return static_cast<NDBox**>(luaL_testudata(L, index, kNDArrayMeta));
}

NDArray& CheckNDArray(lua_State* L, int index, const char* what) {
  NDArray* a = ToNDArray(L, index);
  if (!a) luaL_error(L, "%s: expected an NDArray, got %s", what, luaL_typename(L, index));
  return *a;
}

std::vector<NDArray> CheckArrayList(lua_State* L, int index, const char* what) {
  std::vector<NDArray> out;
  if (lua_isnoneornil(L, index)) return out;
  if (NDArray* a = ToNDArray(L, index)) return {*a};
  luaL_checktype(L, index, LUA_TTABLE);
  const int n = static_cast<int>(lua_objlen(L, index));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    out.push_back(CheckNDArray(L, -1, what));
    lua_pop(L, 1);
  }
  return out;
}

size_t LiveTensorBytes() {
  return g_live_bytes;
}

namespace {

// The output vector of an operator call, reused by later calls at the same
// nesting depth (inference may run Lua that calls operators again), so that
// a call allocates none. Empty again when the scope ends: the arrays must
// not outlive the call.
class OutputScratch {
 public:
  OutputScratch() {
    if (depth_ == stack_.size()) stack_.push_back(std::make_unique<std::vector<NDArray>>());
    v_ = stack_[depth_++].get();
  }
  ~OutputScratch() {
    v_->clear();
    --depth_;
  }
  OutputScratch(const OutputScratch&) = delete;
  OutputScratch& operator=(const OutputScratch&) = delete;
  std::vector<NDArray>& get() { return *v_; }

 private:
  static thread_local std::vector<std::unique_ptr<std::vector<NDArray>>> stack_;
  static thread_local size_t depth_;
  std::vector<NDArray>* v_;
};
thread_local std::vector<std::unique_ptr<std::vector<NDArray>>> OutputScratch::stack_;
thread_local size_t OutputScratch::depth_ = 0;

}  // namespace

int InvokeAndPush(lua_State* L, const std::shared_ptr<const op::NodeAttrs>& attrs, InputList inputs,
                  std::vector<NDArray>* out) {
  if (out) {
    Invoke(attrs, inputs, out);
    return 0;
  }
  OutputScratch scratch;
  std::vector<NDArray>& outputs = scratch.get();
  Invoke(attrs, inputs, &outputs);
  static const auto& visible = op::Op::GetAttr<op::FNumVisibleOutputs>("FNumVisibleOutputs");
  size_t n = outputs.size();
  if (const auto* f = visible.find(attrs->op)) n = std::min<size_t>(n, (*f)(*attrs));
  luaL_checkstack(L, static_cast<int>(n) + 4, "too many outputs");
  for (size_t i = 0; i < n; ++i) PushNDArray(L, std::move(outputs[i]));
  return static_cast<int>(n);
}

int InvokeAndPush(lua_State* L, std::string_view op_name, const std::vector<NDArray>& inputs,
                  op::ParamDict params, std::vector<NDArray>* out) {
  return InvokeAndPush(L, MakeAttrs(op_name, std::move(params)), inputs, out);
}

TESSERA_SHELL_BINDING(ndarray, 40, Open);

}  // namespace tessera::shell::nd
