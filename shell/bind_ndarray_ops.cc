// mx.nd, part 2: every registered operator as mx.nd.<op>, made on first
// access from the registry (ops register from static initialisers and
// plugins, so no list is written down here), parameter conversion from Lua
// values to MXNet's strings, and the registry's docs for help('dot').
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bind_context.h"
#include "bind_ndarray.h"
#include "bindings.h"
#include "engine/base/error.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/op.h"
#include "lua_util.h"
#include "op_call_options.h"

namespace tessera::shell::nd {
namespace {

std::string FormatNumber(lua_Number x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (std::isnan(x)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(x));
  return buf;
}

// A 1-based Lua axis as MXNet's 0-based one; negatives count from the end in
// both, so they pass unchanged.
// Checked here, on the value the user typed: the op's own check would echo
// the converted value (1.5 as 0.5).
lua_Number AxisToZeroBased(lua_Number x, std::string_view op, std::string_view key) {
  if (!std::isfinite(x) || x != std::floor(x))
    TS_THROW << op << ": parameter '" << key << "' must be a whole number (a 1-based axis), got "
             << FormatNumber(x);
  if (x == 0)
    TS_THROW << op << ": parameter '" << key
             << "' is 0, but axes are 1-based (1 is the first axis, -1 the last)";
  return x > 0 ? x - 1 : x;
}

// Whether an op's message is about an axis, and so may show one 0-based.
bool MentionsAxis(const std::string& msg) {
  std::string lower(msg);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("axis") != std::string::npos || lower.find("axes") != std::string::npos;
}

bool IsNDArrayList(lua_State* L, int index) {
  if (!lua_istable(L, index)) return false;
  lua_rawgeti(L, index, 1);
  bool yes = ToNDArray(L, -1) != nullptr;
  lua_pop(L, 1);
  return yes;
}

// mx.nd.<op>(inputs..., {params, out = ...}). Upvalue 1: the Op.
int CallOp(lua_State* L) {
  const auto* op = static_cast<const op::Op*>(lua_touserdata(L, lua_upvalueindex(1)));
  int top = lua_gettop(L);
  int opts = 0;
  // The trailing table holds the parameters, and any inputs listed in it,
  // unless it is a plain list of inputs ({a, b}).
  if (top >= 1 && lua_istable(L, top) && (!IsNDArrayList(L, top) || HasNamedKeys(L, top)))
    opts = top--;

  std::vector<NDArray> inputs;
  for (int i = 1; i <= top; ++i) {
    if (NDArray* a = ToNDArray(L, i)) {
      inputs.push_back(*a);
    } else if (IsNDArrayList(L, i)) {
      const int n = static_cast<int>(lua_objlen(L, i));
      for (int j = 1; j <= n; ++j) {
        lua_rawgeti(L, i, j);
        NDArray* a = ToNDArray(L, -1);
        if (!a)
          luaL_error(L, "%s: input list item %d is a %s, not an NDArray", op->name().c_str(), j,
                     luaL_typename(L, -1));
        inputs.push_back(*a);
        lua_pop(L, 1);
      }
    } else {
      luaL_error(L,
                 "%s: argument %d is a %s; inputs are NDArrays (or one list of them), "
                 "parameters go in a trailing table",
                 op->name().c_str(), i, luaL_typename(L, i));
    }
  }

  op::ParamDict params;
  std::vector<NDArray> out;
  int out_index = 0;
  bool axis_given = false;
  std::map<std::string, NDArray> named_inputs;
  if (opts) {
    // `out` sits at a fixed stack slot from here on.
    lua_getfield(L, opts, "out");
    if (!lua_isnil(L, -1)) out_index = lua_gettop(L);
    // List items are positional inputs, taken below.
    ForEachNamedOption(L, opts, op, ToNDArray, [&](const std::string& key) {
      if (key == "out") return;
      if (NDArray* a = ToNDArray(L, -1)) {
        named_inputs[key] = *a;  // an input passed by name: {data = x}
      } else {
        const op::FieldInfo* f = FindField(op, key);
        axis_given = axis_given || (f && f->is_axis);
        params[key] = ParamText(L, -1, f && f->is_axis, op->name(), key);
      }
    });
  }
  if (opts)
    for (int j = 1, n = static_cast<int>(lua_objlen(L, opts)); j <= n; ++j) {
      lua_rawgeti(L, opts, j);
      inputs.push_back(CheckNDArray(L, -1, "an input listed with the parameters"));
      lua_pop(L, 1);
    }
  if (!named_inputs.empty()) {
    for (const op::ArgumentInfo& arg : op->arguments()) {
      auto it = named_inputs.find(arg.name);
      if (it == named_inputs.end()) continue;
      inputs.push_back(it->second);
      named_inputs.erase(it);
    }
    TS_CHECK(named_inputs.empty()) << op->name() << ": unknown input or parameter '"
                                   << named_inputs.begin()->first << "' (an NDArray)";
  }
  const std::string& num_key = op->key_var_num_args();
  if (!num_key.empty() && !params.contains(num_key))
    params[num_key] = std::to_string(inputs.size());

  if (out_index) {
    if (NDArray* o = ToNDArray(L, out_index)) {
      out.push_back(*o);
    } else if (IsNDArrayList(L, out_index)) {
      const int n = static_cast<int>(lua_objlen(L, out_index));
      for (int j = 1; j <= n; ++j) {
        lua_rawgeti(L, out_index, j);
        out.push_back(CheckNDArray(L, -1, "out"));
        lua_pop(L, 1);
      }
    } else {
      luaL_error(L, "%s: out must be an NDArray or a list of them, got %s", op->name().c_str(),
                 luaL_typename(L, out_index));
    }
    InvokeAndPush(L, op->name(), inputs, std::move(params), &out);
    // The arrays given, so identity is kept: out = b returns b itself.
    if (ToNDArray(L, out_index)) {
      lua_pushvalue(L, out_index);
      return 1;
    }
    const int n = static_cast<int>(lua_objlen(L, out_index));
    luaL_checkstack(L, n, "too many outputs");
    for (int j = 1; j <= n; ++j) lua_rawgeti(L, out_index, j);
    return n;
  }
  if (!axis_given) return InvokeAndPush(L, op->name(), inputs, std::move(params));
  // C++ messages count axes from 0, as MXNet does; say so next to the
  // 1-based axis the user typed, when the message is about an axis.
  std::string msg;
  try {
    return InvokeAndPush(L, op->name(), inputs, std::move(params));
  } catch (const Error& e) {
    msg = e.what();
  }
  if (MentionsAxis(msg)) msg += " (axes in this message count from 0, as in MXNet)";
  throw Error(msg);
}

// An axis default as Lua shows it: "1" (MXNet's second axis) reads "2";
// negatives, None and empty tuples are the same in both.
std::string LuaAxisDefault(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) && (i == 0 || text[i - 1] != '-')) {
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      out += std::to_string(std::stoll(text.substr(i, j - i)) + 1);
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string OpDocText(const op::Op* op, std::string_view called) {
  std::string s = "mx.nd." + std::string(called) + "(";
  bool first = true;
  for (const op::ArgumentInfo& a : op->arguments()) {
    s += (first ? "" : ", ") + a.name;
    first = false;
  }
  if (!op->params().empty()) s += std::string(first ? "" : ", ") + "{params}";
  s += ")";
  if (called != op->name()) s += "  (alias of " + op->name() + ")";
  s += "\n";
  if (!op->description().empty()) s += "\n" + op->description() + "\n";
  if (!op->arguments().empty()) {
    s += "\nInputs:\n";
    for (const op::ArgumentInfo& a : op->arguments())
      s += "  " + a.name + " (" + a.type + ")" +
           (a.description.empty() ? "" : ": " + a.description) + "\n";
  }
  if (!op->params().empty()) {
    s += "\nParameters:\n";
    for (const op::FieldInfo& f : op->params()) {
      s += "  " + f.name + " (" + f.type;
      s += f.required ? ", required"
                      : ", default " + (f.is_axis ? LuaAxisDefault(f.default_str) : f.default_str);
      if (f.is_axis) s += ", 1-based axis";
      s += ")";
      if (!f.description.empty()) s += ": " + f.description;
      s += "\n";
    }
  }
  s += "\nOptions: out = NDArray (or list) writes the result into existing arrays.";
  return s;
}

std::optional<std::string> OpDoc(std::string_view name) {
  if (name.starts_with("nd.")) name.remove_prefix(3);
  const op::Op* op = op::Op::Find(name);
  if (!op) return std::nullopt;
  return OpDocText(op, name);
}

// __index of an op namespace: the function for a registered op, cached in
// the table. Upvalues: the call function and the doc function.
int OpNamespaceIndex(lua_State* L) {
  if (lua_type(L, 2) != LUA_TSTRING) return 0;
  size_t len = 0;
  const char* s = lua_tolstring(L, 2, &len);
  const std::string_view name(s, len);
  if (name.find('\0') != std::string_view::npos) return 0;  // no op has such a name
  const op::Op* op = op::Op::Find(name);
  if (!op) return 0;
  auto call = lua_tocfunction(L, lua_upvalueindex(1));
  auto doc = reinterpret_cast<OpDocFn>(lua_touserdata(L, lua_upvalueindex(2)));
  lua_pushlightuserdata(L, const_cast<op::Op*>(op));
  lua_pushcclosure(L, call, 1);
  const std::string text = doc(op, name);
  SetDoc(L, -1, text.c_str());
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -2);
  lua_rawset(L, 1);
  return 1;
}

// __keys of an op namespace, for completion: every op name and alias (not
// the gradient ops, which users do not call).
int OpNamespaceKeys(lua_State* L) {
  lua_newtable(L);
  int i = 0;
  for (const op::Op* op : op::Op::ListAll()) {
    if (op->name().starts_with("_backward")) continue;
    lua_pushstring(L, op->name().c_str());
    lua_rawseti(L, -2, ++i);
    for (const std::string& a : op->aliases()) {
      lua_pushstring(L, a.c_str());
      lua_rawseti(L, -2, ++i);
    }
  }
  return 1;
}

std::string NdOpDoc(const op::Op* op, std::string_view name) {
  return OpDocText(op, name);
}

}  // namespace

std::string ShapeText(const Shape& s) {
  std::string t = "(";
  for (int i = 0; i < s.ndim(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + (s.ndim() == 1 ? ",)" : ")");
}

int64_t CheckWholeNumber(lua_Number x, const char* what, const char* item, int index) {
  TS_CHECK(x == std::floor(x)) << what << ": " << item << " " << index << " is " << FormatNumber(x)
                               << ", not a whole number";
  TS_CHECK(x >= -0x1p63 && x < 0x1p63) << what << ": " << item << " " << index << " is "
                                       << FormatNumber(x) << ", more than 64 bits hold";
  return static_cast<int64_t>(x);
}

int64_t CheckDimension(lua_Number x, const char* what, int item) {
  TS_CHECK(!(x < 0)) << what << ": shape item " << item << " is " << FormatNumber(x)
                     << ", sizes must be >= 0";
  return CheckWholeNumber(x, what, "shape item", item);
}

Shape CheckShape(lua_State* L, int index, const char* what) {
  std::vector<int64_t> dims;
  if (lua_type(L, index) == LUA_TNUMBER) {
    dims.push_back(CheckDimension(lua_tonumber(L, index), what, 1));
  } else if (lua_istable(L, index)) {
    const int n = static_cast<int>(lua_objlen(L, index));
    TS_CHECK(n <= Shape::kMaxNdim)
        << what << ": " << n << " dimensions, at most " << Shape::kMaxNdim;
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, index, i);
      if (lua_type(L, -1) != LUA_TNUMBER)
        luaL_error(L, "%s: shape item %d is a %s, not a number", what, i, luaL_typename(L, -1));
      dims.push_back(CheckDimension(lua_tonumber(L, -1), what, i));
      lua_pop(L, 1);
    }
  } else {
    luaL_error(L, "%s: shape must be a table of sizes ({2, 3}) or a number, got %s", what,
               luaL_typename(L, index));
  }
  return Shape(dims);
}

std::string ParamText(lua_State* L, int index, bool axis, std::string_view op,
                      std::string_view key) {
  switch (lua_type(L, index)) {
    case LUA_TNUMBER: {
      lua_Number x = lua_tonumber(L, index);
      return FormatNumber(axis ? AxisToZeroBased(x, op, key) : x);
    }
    case LUA_TBOOLEAN:
      return lua_toboolean(L, index) ? "True" : "False";
    case LUA_TSTRING:
      return CheckString(L, index, std::string(op) + ": parameter '" + std::string(key) + "'");
    case LUA_TTABLE: {
      const int abs = index < 0 ? lua_gettop(L) + index + 1 : index;
      const int n = static_cast<int>(lua_objlen(L, abs));
      std::string t = "(";
      for (int i = 1; i <= n; ++i) {
        lua_rawgeti(L, abs, i);
        if (lua_type(L, -1) != LUA_TNUMBER)
          luaL_error(L, "%s: parameter '%s' item %d is a %s, expected a number",
                     std::string(op).c_str(), std::string(key).c_str(), i, luaL_typename(L, -1));
        lua_Number x = lua_tonumber(L, -1);
        t += (i > 1 ? "," : "") + FormatNumber(axis ? AxisToZeroBased(x, op, key) : x);
        lua_pop(L, 1);
      }
      return t + (n == 1 ? ",)" : ")");
    }
    default:
      if (IsContext(L, index)) return CheckContext(L, index).ToString();
      luaL_error(L, "%s: parameter '%s' cannot be a %s", std::string(op).c_str(),
                 std::string(key).c_str(), luaL_typename(L, index));
      return {};
  }
}

void SetOpNamespace(lua_State* L, int ns, lua_CFunction call, OpDocFn doc) {
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, call);
  lua_pushlightuserdata(L, reinterpret_cast<void*>(doc));
  lua_pushcclosure(L, Guarded<OpNamespaceIndex>, 2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, Guarded<OpNamespaceKeys>);
  lua_setfield(L, -2, "__keys");
  lua_setmetatable(L, ns);
}

void OpenOps(lua_State* L, int nd) {
  SetOpNamespace(L, nd, Guarded<CallOp>, NdOpDoc);
  RegisterDocSource(OpDoc);
}

}  // namespace tessera::shell::nd
