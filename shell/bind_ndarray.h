// mx.nd: NDArrays in Lua. Shared by the files of the binding:
//   bind_ndarray.cc          the userdata, pushing arrays and op outputs, GC
//                            pacing, and the opener of mx.nd;
//   bind_ndarray_ops.cc      mx.nd.<op> for every registered op, and op docs;
//   bind_ndarray_create.cc   mx.nd.array/zeros/ones/..., mx.random;
//   bind_ndarray_index.cc    a[i], a[{b, e}], a[i] = x;
//   bind_ndarray_io.cc       mx.nd.save / mx.nd.load;
//   bind_ndarray_arith.cc    a + b, a * 2, -a, a:eq(b), a:add_(b), ...;
//   bind_ndarray_methods.cc  reshape, slice, copies, astype, waits;
//   bind_ndarray_values.cc   printing, totable, asscalar, data_ptr;
//   bind_ndarray_fields.cc   a.shape, a.dtype, ... and what a.k means.
#pragma once

#include <lua.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "engine/op/params.h"

namespace tessera::op {
class Op;
struct NodeAttrs;
}  // namespace tessera::op

namespace tessera::shell::nd {

inline constexpr const char* kNDArrayMeta = "tessera.NDArray";

// What a Lua NDArray stands for. `accounted` is the tensor memory its
// userdata told the GC about (0 for views: the base owns that memory). The
// userdata itself holds only a pointer to its box, which comes from a pool:
// the collector's marking work per array grows with the bytes Lua allocates
// for it (measured: making and dropping a userdata with a finalizer beside
// 2 MB of live Lua data cost 0.18 us at 152 bytes, 0.09 us at 16).
struct NDBox {
  NDArray arr;
  size_t accounted = 0;
};

// Pushes a new userdata holding `arr`. `owns_memory`: the array's storage is
// new (an op's output, a copy), so its bytes count towards GC pacing.
void PushNDArray(lua_State* L, NDArray arr, bool owns_memory = true);
// The box slot of the NDArray userdata at `index`, or nullptr. Raises
// nothing.
NDBox** BoxSlot(lua_State* L, int index);
// The NDArray at `index`, or nullptr. Raises nothing. Inline: Lua's
// operators test both of their arguments with it.
inline NDArray* ToNDArray(lua_State* L, int index) {
  NDBox** slot = BoxSlot(L, index);
  return slot && *slot ? &(*slot)->arr : nullptr;
}
// The NDArray at `index`; a Lua error naming `what` otherwise.
NDArray& CheckNDArray(lua_State* L, int index, const char* what = "self");
// One NDArray or a list of them at `index` (nothing for nil).
std::vector<NDArray> CheckArrayList(lua_State* L, int index, const char* what);

// Tensor bytes owned by live Lua NDArrays.
size_t LiveTensorBytes();

// Lua value -> MXNet's parameter text: numbers ("3", "0.5"), booleans
// ("True"), tables of numbers ("(2,3)"), strings, contexts ("cpu(0)").
// `axis`: the value is a 1-based axis or list of axes; positives are shifted
// down by one, negatives kept. `key` and `op` name the value in errors.
std::string ParamText(lua_State* L, int index, bool axis, std::string_view op,
                      std::string_view key);
// A shape given as a table of sizes or a single number.
Shape CheckShape(lua_State* L, int index, const char* what);
// A Lua number as an int64: a whole number in [-2^63, 2^63), else an error
// naming `what`, the item and its position ("reshape: code 2 is 2.5, not a
// whole number"). Lua numbers are doubles, and casting NaN, a fraction or
// 2^64 to an integer would be undefined or silently wrong.
int64_t CheckWholeNumber(lua_Number x, const char* what, const char* item, int index);
// The same for a dimension, which must also be >= 0 ("zeros: shape item 2
// is -3, sizes must be >= 0").
int64_t CheckDimension(lua_Number x, const char* what, int item);
// "(2,3)"; one dimension is "(5,)".
std::string ShapeText(const Shape& s);
// True when `op` has a parameter named "shape".
bool FindShapeParam(const op::Op* op);

// Runs the op of `attrs` on `inputs`, as the overload below.
int InvokeAndPush(lua_State* L, const std::shared_ptr<const op::NodeAttrs>& attrs, InputList inputs,
                  std::vector<NDArray>* out = nullptr);
// Runs `op_name` on `inputs` with `params`. `out` empty: the outputs are new
// arrays, pushed on the Lua stack; otherwise they are written. Returns the
// number of values pushed.
int InvokeAndPush(lua_State* L, std::string_view op_name, const std::vector<NDArray>& inputs,
                  op::ParamDict params, std::vector<NDArray>* out = nullptr);

// Makes the table at `ns` serve every registered op as ns.<name>: on first
// access a closure of `call` with the Op as upvalue 1 (a light userdata),
// documented by `doc(op, name)` and cached in the table; its __keys lists
// the op names and aliases for completion (mx.nd, mx.sym).
using OpDocFn = std::string (*)(const op::Op* op, std::string_view name);
void SetOpNamespace(lua_State* L, int ns, lua_CFunction call, OpDocFn doc);

// Openers of the other files, called by bind_ndarray.cc with the `nd` table
// at absolute index `nd` and `mx` at `mx`.
void OpenOps(lua_State* L, int nd);
void OpenCreation(lua_State* L, int mx, int nd);
void OpenIO(lua_State* L, int nd);
// Openers of the NDArray metatable's parts: each sets its metamethods in the
// metatable at absolute index `meta` and its methods in the table at
// `methods` (what __index finds first).
void OpenArith(lua_State* L, int meta, int methods);
void OpenMethods(lua_State* L, int methods);
void OpenValues(lua_State* L, int meta, int methods, int nd);
// __index also serves fields, element indices (Index below) and the ops of
// the `nd` table as methods.
void OpenFields(lua_State* L, int meta, int methods, int nd);

// Index and assignment: the key at `key` of array `a`.
int Index(lua_State* L, const NDArray& a, int key);
void NewIndex(lua_State* L, const NDArray& a, int key, int value);

}  // namespace tessera::shell::nd
