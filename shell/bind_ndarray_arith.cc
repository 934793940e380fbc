// mx.nd, part 6: Lua's operators on NDArrays. a + b, a - 1, 2 * a, -a, a ^ b
// ... run the broadcasting op for two arrays and the scalar op (or its
// reversed form) for an array and a number; a:eq(b) ... a:ge(b) compare the
// same way, and a:add_(b) ... a:div_(b) write the result into a. This is the
// hot path of `c = a + b` on small arrays: the metamethod calls Arith, which
// tests both arguments with BoxSlot and calls InvokeAndPush with attributes
// parsed once.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bind_ndarray.h"
#include "engine/ndarray/imperative.h"
#include "lua_util.h"

namespace tessera::shell::nd {

namespace {

std::string NumberText(lua_Number x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (std::isnan(x)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(x));
  return buf;
}

// One Lua operator: the op for two arrays, and the scalar ops for
// array-op-number and number-op-array.
struct ArithOp {
  const char* symbol;
  const char* binary;
  const char* scalar;
  const char* rscalar;
};

// The parsed attributes of `op_name` (a scalar op) with `scalar` x, kept for
// the last few (op, value) pairs: a loop's `a * 2 + 1` parses each once,
// and Invoke's inference memo then knows the attributes object again. Keyed
// by the name's address (the ArithOp tables' literals) and the bits of x.
std::shared_ptr<const op::NodeAttrs> ScalarAttrs(const char* op_name, lua_Number x) {
  struct Entry {
    const char* op = nullptr;
    uint64_t bits = 0;
    std::shared_ptr<const op::NodeAttrs> attrs;
  };
  static Entry cache[16];
  const auto bits = std::bit_cast<uint64_t>(x);
  Entry& e = cache[(reinterpret_cast<uintptr_t>(op_name) ^ bits ^ (bits >> 29)) % 16];
  if (e.op != op_name || e.bits != bits || !e.attrs) {
    auto attrs = MakeAttrs(op_name, {{"scalar", NumberText(x)}});  // may throw: entry unchanged
    e = {op_name, bits, std::move(attrs)};
  }
  return e.attrs;
}

int Arith(lua_State* L, const ArithOp& op, const std::shared_ptr<const op::NodeAttrs>& binary) {
  NDArray* a = ToNDArray(L, 1);
  NDArray* b = ToNDArray(L, 2);
  if (a && b) {
    // By reference: the Lua arguments hold both arrays for the call.
    const NDArray* args[] = {a, b};
    return InvokeAndPush(L, binary, InputList(args, 2));
  }
  if (a && lua_type(L, 2) == LUA_TNUMBER)
    return InvokeAndPush(L, ScalarAttrs(op.scalar, lua_tonumber(L, 2)), InputList(&a, 1));
  if (b && lua_type(L, 1) == LUA_TNUMBER)
    return InvokeAndPush(L, ScalarAttrs(op.rscalar, lua_tonumber(L, 1)), InputList(&b, 1));
  return luaL_error(L, "NDArray %s: operands must be NDArrays or numbers, got %s and %s", op.symbol,
                    a ? "NDArray" : luaL_typename(L, 1), b ? "NDArray" : luaL_typename(L, 2));
}

constexpr ArithOp kAdd{"+", "broadcast_add", "_plus_scalar", "_plus_scalar"};
constexpr ArithOp kSub{"-", "broadcast_sub", "_minus_scalar", "_rminus_scalar"};
constexpr ArithOp kMul{"*", "broadcast_mul", "_mul_scalar", "_mul_scalar"};
constexpr ArithOp kDiv{"/", "broadcast_div", "_div_scalar", "_rdiv_scalar"};
constexpr ArithOp kMod{"%", "broadcast_mod", "_mod_scalar", "_rmod_scalar"};
constexpr ArithOp kPow{"^", "broadcast_power", "_power_scalar", "_rpower_scalar"};
constexpr ArithOp kEq{"eq", "broadcast_equal", "_equal_scalar", "_equal_scalar"};
constexpr ArithOp kNe{"ne", "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"};
constexpr ArithOp kLt{"lt", "broadcast_lesser", "_lesser_scalar", "_greater_scalar"};
constexpr ArithOp kLe{"le", "broadcast_lesser_equal", "_lesser_equal_scalar",
                      "_greater_equal_scalar"};
constexpr ArithOp kGt{"gt", "broadcast_greater", "_greater_scalar", "_lesser_scalar"};
constexpr ArithOp kGe{"ge", "broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar"};

template <const ArithOp& Op>
int ArithFn(lua_State* L) {
  // The two-array form has no parameters: parsed once.
  static const auto binary = MakeAttrs(Op.binary);
  return Arith(L, Op, binary);
}

int Unm(lua_State* L) {
  return InvokeAndPush(L, "negative", {CheckNDArray(L, 1)}, {});
}

// a:add_(x): a = a + x, written into a's memory; returns a.
template <const ArithOp& Op>
int InPlace(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::vector<NDArray> out{a};
  if (NDArray* b = ToNDArray(L, 2)) {
    InvokeAndPush(L, Op.binary, {a, *b}, {}, &out);
  } else {
    lua_Number x = luaL_checknumber(L, 2);
    InvokeAndPush(L, Op.scalar, {a}, {{"scalar", NumberText(x)}}, &out);
  }
  lua_settop(L, 1);
  return 1;
}

}  // namespace

void OpenArith(lua_State* L, int meta, int methods) {
  SetFunctions(L, methods,
               {{"eq", Guarded<ArithFn<kEq>>, "a:eq(b | x) -> 1 where equal, else 0"},
                {"ne", Guarded<ArithFn<kNe>>, "a:ne(b | x) -> 1 where not equal"},
                {"lt", Guarded<ArithFn<kLt>>, "a:lt(b | x) -> 1 where a < b"},
                {"le", Guarded<ArithFn<kLe>>, "a:le(b | x) -> 1 where a <= b"},
                {"gt", Guarded<ArithFn<kGt>>, "a:gt(b | x) -> 1 where a > b"},
                {"ge", Guarded<ArithFn<kGe>>, "a:ge(b | x) -> 1 where a >= b"},
                {"add_", Guarded<InPlace<kAdd>>, "a:add_(b | x) -> a, after a = a + b in place"},
                {"sub_", Guarded<InPlace<kSub>>, "a:sub_(b | x) -> a, after a = a - b in place"},
                {"mul_", Guarded<InPlace<kMul>>, "a:mul_(b | x) -> a, after a = a * b in place"},
                {"div_", Guarded<InPlace<kDiv>>, "a:div_(b | x) -> a, after a = a / b in place"}});
  SetFunctions(L, meta,
               {{"__add", Guarded<ArithFn<kAdd>>, nullptr},
                {"__sub", Guarded<ArithFn<kSub>>, nullptr},
                {"__mul", Guarded<ArithFn<kMul>>, nullptr},
                {"__div", Guarded<ArithFn<kDiv>>, nullptr},
                {"__mod", Guarded<ArithFn<kMod>>, nullptr},
                {"__pow", Guarded<ArithFn<kPow>>, nullptr},
                {"__unm", Guarded<Unm>, nullptr}});
}

}  // namespace tessera::shell::nd
