// Custom operators written in Lua: the C++ side of mx.operator.register.
// shell/lua/operator.lua turns a property class into a factory and passes it
// to mx.operator._register; here that factory becomes a custom::PropCreator.
//
// Threads: property methods (lists, inference, create_operator) run on the
// interpreter thread, inside the binding that builds or runs the graph, on
// the Lua thread of that call. Forward and backward are called by engine
// threads; they go through LuaWork, which posts them to the interpreter's
// queue, and the op ends once the Lua code has returned and what it pushed
// has finished (ops/custom/custom_op.h).
#include <string>
#include <vector>

#include "bind_context.h"
#include "bind_ndarray.h"
#include "bindings.h"
#include "engine/base/error.h"
#include "interpreter.h"
#include "lua_util.h"
#include "lua_work.h"
#include "ops/custom/custom_op.h"

namespace tessera::shell {
namespace {

using op::custom::CustomOperator;
using op::custom::CustomOpProp;
using op::custom::Done;

// registry[kDefaults]: mx.operator.CustomOpProp, whose methods stand in for
// those a property does not define.
constexpr const char* kDefaults = "tessera.custom_op_defaults";

// Custom ops running inside one another, at most: far beyond any real
// composition, and far below what exhausts memory or the C stack.
constexpr int kMaxNesting = 100;

lua_State* CallbackState(const std::string& op_type) {
  Interpreter* in = Interpreter::Get();
  TS_CHECK(in && !in->closed() && in->OnThread())
      << "Custom '" << op_type << "': its Lua property can only be used on the interpreter thread";
  return tls_calling_state ? tls_calling_state : in->state();
}

// Drops a registry reference from any thread (nodes and states holding Lua
// objects may die on engine threads).
void ReleaseRef(int ref) {
  Interpreter* in = Interpreter::Get();
  if (ref == LUA_NOREF || !in || in->closed()) return;
  auto release = [ref](lua_State* L) { luaL_unref(L, LUA_REGISTRYINDEX, ref); };
  if (in->OnThread())
    release(tls_calling_state ? tls_calling_state : in->state());
  else
    in->Post(release);
}

void PushShapes(lua_State* L, const std::vector<Shape>& shapes) {
  lua_createtable(L, int(shapes.size()), 0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    lua_createtable(L, shapes[i].ndim(), 0);
    for (int d = 0; d < shapes[i].ndim(); ++d) {
      lua_pushnumber(L, double(shapes[i][d]));
      lua_rawseti(L, -2, d + 1);
    }
    lua_rawseti(L, -2, int(i + 1));
  }
}

void PushTypes(lua_State* L, const std::vector<DType>& types) {
  lua_createtable(L, int(types.size()), 0);
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == DType::kUnknown)
      lua_pushboolean(L, 0);
    else
      lua_pushstring(L, DTypeName(types[i]));
    lua_rawseti(L, -2, int(i + 1));
  }
}

class LuaProp final : public CustomOpProp {
 public:
  LuaProp(std::string op_type, int ref) : op_type_(std::move(op_type)), ref_(ref) {}
  ~LuaProp() override { ReleaseRef(ref_); }

  std::vector<std::string> ListArguments() override { return Names("list_arguments"); }
  std::vector<std::string> ListOutputs() override { return Names("list_outputs"); }
  std::vector<std::string> ListAuxiliaryStates() override { return Names("list_auxiliary_states"); }

  void InferShape(std::vector<Shape>* in, std::vector<Shape>* out,
                  std::vector<Shape>* aux) override {
    lua_State* L = CallbackState(op_type_);
    int top = lua_gettop(L);
    Call(L, "infer_shape", 3, [&] { PushShapes(L, *in); });
    ReadShapes(L, top + 1, "argument", in);
    ReadShapes(L, top + 2, "output", out);
    if (!lua_isnil(L, top + 3)) ReadShapes(L, top + 3, "auxiliary", aux);
    lua_settop(L, top);
  }

  void InferType(std::vector<DType>* in, std::vector<DType>* out,
                 std::vector<DType>* aux) override {
    lua_State* L = CallbackState(op_type_);
    int top = lua_gettop(L);
    Call(L, "infer_type", 3, [&] { PushTypes(L, *in); });
    ReadTypes(L, top + 1, "argument", in);
    ReadTypes(L, top + 2, "output", out);
    if (!lua_isnil(L, top + 3)) ReadTypes(L, top + 3, "auxiliary", aux);
    lua_settop(L, top);
  }

  std::vector<int> DeclareBackwardDependency(const std::vector<int>& out_grad,
                                             const std::vector<int>& in_data,
                                             const std::vector<int>& out_data) override {
    lua_State* L = CallbackState(op_type_);
    int top = lua_gettop(L);
    auto push_ids = [L](const std::vector<int>& ids) {
      lua_createtable(L, int(ids.size()), 0);
      for (size_t i = 0; i < ids.size(); ++i) {
        lua_pushinteger(L, ids[i]);
        lua_rawseti(L, -2, int(i + 1));
      }
    };
    Call(L, "declare_backward_dependency", 1, [&] {
      push_ids(out_grad);
      push_ids(in_data);
      push_ids(out_data);
    });
    std::vector<int> deps;
    TS_CHECK(lua_istable(L, -1)) << Label("declare_backward_dependency")
                                 << ": must return a list of ids, got " << luaL_typename(L, -1);
    for (int i = 1, n = int(lua_objlen(L, -1)); i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      TS_CHECK(lua_isnumber(L, -1)) << Label("declare_backward_dependency") << ": entry " << i
                                    << " is a " << luaL_typename(L, -1) << ", not an id";
      deps.push_back(int(lua_tointeger(L, -1)));
      lua_pop(L, 1);
    }
    lua_settop(L, top);
    return deps;
  }

  std::shared_ptr<CustomOperator> CreateOperator(Context ctx, const std::vector<Shape>& shapes,
                                                 const std::vector<DType>& types) override;

  const std::string& op_type() const { return op_type_; }

 private:
  std::string Label(const char* method) const { return "Custom '" + op_type_ + "' " + method; }

  // Calls self:method(<pushed by push_args>) leaving `nresults` results.
  template <typename PushArgs>
  void Call(lua_State* L, const char* method, int nresults, PushArgs push_args) {
    TS_CHECK(lua_checkstack(L, 16)) << Label(method) << ": Lua stack overflow";
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_);
    lua_getfield(L, -1, method);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_getfield(L, LUA_REGISTRYINDEX, kDefaults);
      if (lua_istable(L, -1)) lua_getfield(L, -1, method), lua_remove(L, -2);
    }
    if (!lua_isfunction(L, -1)) {
      lua_settop(L, top);
      TS_THROW << Label(method) << ": the property has no such method";
    }
    lua_insert(L, -2);  // method, self
    push_args();
    int nargs = lua_gettop(L) - top - 1;
    if (CallWithTraceback(L, nargs, nresults) != 0) {
      std::string msg = ErrorText(L);
      lua_settop(L, top);
      TS_THROW << Label(method) << ": " << msg;
    }
  }

  std::vector<std::string> Names(const char* method) {
    lua_State* L = CallbackState(op_type_);
    int top = lua_gettop(L);
    Call(L, method, 1, [] {});
    std::vector<std::string> names;
    TS_CHECK(lua_istable(L, -1)) << Label(method) << ": must return a list of names, got "
                                 << luaL_typename(L, -1);
    for (int i = 1, n = int(lua_objlen(L, -1)); i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      TS_CHECK(lua_type(L, -1) == LUA_TSTRING)
          << Label(method) << ": entry " << i << " is a " << luaL_typename(L, -1) << ", not a name";
      names.emplace_back(CheckString(L, -1, Label(method) + ": entry " + std::to_string(i)));
      lua_pop(L, 1);
    }
    lua_settop(L, top);
    return names;
  }

  void ReadShapes(lua_State* L, int index, const char* what, std::vector<Shape>* shapes) {
    TS_CHECK(lua_istable(L, index))
        << Label("infer_shape") << ": the " << what << " shapes must be a list of shapes, got "
        << luaL_typename(L, index);
    const int n = int(lua_objlen(L, index));
    shapes->assign(size_t(n), Shape());
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, index, i);
      TS_CHECK(lua_istable(L, -1)) << Label("infer_shape") << ": " << what << " shape " << i
                                   << " is a " << luaL_typename(L, -1) << ", not a table";
      std::vector<int64_t> dims;
      const int nd = int(lua_objlen(L, -1));
      TS_CHECK(nd <= Shape::kMaxNdim)
          << Label("infer_shape") << ": " << what << " shape " << i << " has too many axes";
      const std::string where = Label("infer_shape") + ": " + what + " shape " + std::to_string(i);
      for (int d = 1; d <= nd; ++d) {
        lua_rawgeti(L, -1, d);
        TS_CHECK(lua_type(L, -1) == LUA_TNUMBER)
            << where << " has a " << luaL_typename(L, -1) << " at " << d << ", not a size";
        dims.push_back(nd::CheckDimension(lua_tonumber(L, -1), where.c_str(), d));
        lua_pop(L, 1);
      }
      (*shapes)[size_t(i - 1)] = Shape(dims);
      lua_pop(L, 1);
    }
  }

  void ReadTypes(lua_State* L, int index, const char* what, std::vector<DType>* types) {
    TS_CHECK(lua_istable(L, index))
        << Label("infer_type") << ": the " << what << " types must be a list of dtype names, got "
        << luaL_typename(L, index);
    const int n = int(lua_objlen(L, index));
    types->assign(size_t(n), DType::kUnknown);
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, index, i);
      if (lua_type(L, -1) == LUA_TSTRING)
        (*types)[size_t(i - 1)] = DTypeFromName(
            CheckString(L, -1, Label("infer_type") + ": " + what + " type " + std::to_string(i)));
      lua_pop(L, 1);
    }
  }

  std::string op_type_;
  int ref_;
};

class LuaOperator final : public CustomOperator {
 public:
  LuaOperator(std::string op_type, std::shared_ptr<LuaWork> run)
      : op_type_(std::move(op_type)), run_(std::move(run)) {}

  void Forward(bool is_train, const std::vector<OpReqType>& req,
               const std::vector<NDArray>& in_data, const std::vector<NDArray>& out_data,
               const std::vector<NDArray>& aux, Done done) override {
    Run(
        "forward",
        [=](lua_State* L) {
          lua_pushstring(L, "forward");
          lua_pushboolean(L, is_train);
          PushReqs(L, req);
          PushArrays(L, in_data);
          PushArrays(L, out_data);
          PushArrays(L, aux);
          return 6;
        },
        std::move(done));
  }

  void Backward(const std::vector<OpReqType>& req, const std::vector<NDArray>& out_grad,
                const std::vector<NDArray>& in_data, const std::vector<NDArray>& out_data,
                const std::vector<NDArray>& in_grad, const std::vector<NDArray>& aux,
                Done done) override {
    Run(
        "backward",
        [=](lua_State* L) {
          lua_pushstring(L, "backward");
          PushReqs(L, req);
          PushArrays(L, out_grad);
          PushArrays(L, in_data);
          PushArrays(L, out_data);
          PushArrays(L, in_grad);
          PushArrays(L, aux);
          return 7;
        },
        std::move(done));
  }

 private:
  void Run(const char* method, LuaWork::Args args, Done done) {
    std::string label = "Custom '" + op_type_ + "' " + method + ": ";
    run_->Run(std::move(args), [label, done = std::move(done)](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          e = std::make_exception_ptr(Error(label + x.what()));
        } catch (...) {
        }
      }
      done(e);
    });
  }
  static void PushReqs(lua_State* L, const std::vector<OpReqType>& req) {
    lua_createtable(L, int(req.size()), 0);
    for (size_t i = 0; i < req.size(); ++i) {
      lua_pushstring(L, OpReqName(req[i]));
      lua_rawseti(L, -2, int(i + 1));
    }
  }
  // Undeclared backward arrays are holes (nil).
  static void PushArrays(lua_State* L, const std::vector<NDArray>& arrays) {
    lua_createtable(L, int(arrays.size()), 0);
    for (size_t i = 0; i < arrays.size(); ++i) {
      if (arrays[i].is_none()) continue;
      nd::PushNDArray(L, arrays[i], false);
      lua_rawseti(L, -2, int(i + 1));
    }
  }

  std::string op_type_;
  std::shared_ptr<LuaWork> run_;
};

std::shared_ptr<CustomOperator> LuaProp::CreateOperator(Context ctx,
                                                        const std::vector<Shape>& shapes,
                                                        const std::vector<DType>& types) {
  // Each level of a custom op that calls itself holds its arrays until the
  // levels below it end, and nothing else stops it: a limit does.
  const int nesting = LuaWork::RunningNesting() + 1;
  TS_CHECK(nesting <= kMaxNesting)
      << "Custom '" << op_type_ << "': custom ops nested more than " << kMaxNesting
      << " deep (an operator that calls itself, directly or through others, without end?)";
  lua_State* L = CallbackState(op_type_);
  int top = lua_gettop(L);
  Call(L, "create_operator", 1, [&] {
    PushContext(L, ctx);
    PushShapes(L, shapes);
    PushTypes(L, types);
  });
  // The runner: function(method, ...) calling the operator's method.
  lua_getfield(L, LUA_REGISTRYINDEX, kDefaults);
  lua_getfield(L, -1, "_runner");
  lua_remove(L, -2);
  TS_CHECK(lua_isfunction(L, -1)) << "Custom: mx.operator is not initialised";
  lua_pushvalue(L, -2);
  if (CallWithTraceback(L, 1, 1) != 0) {
    std::string msg = ErrorText(L);
    lua_settop(L, top);
    TS_THROW << Label("create_operator") << ": " << msg;
  }
  auto work = LuaWork::Create(L, -1, "Custom:" + op_type_, {}, {});
  lua_settop(L, top);
  work->set_nesting(nesting);
  return std::make_shared<LuaOperator>(op_type_, std::move(work));
}

// mx.operator._register(op_type, factory, defaults) -> true when it replaced
// an earlier registration. factory(kwargs) returns a property object.
int RegisterOp(lua_State* L) {
  std::string op_type = CheckString(L, 1, "mx.operator.register: op_type");
  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_pushvalue(L, 3);
  lua_setfield(L, LUA_REGISTRYINDEX, kDefaults);
  lua_pushvalue(L, 2);
  int factory = luaL_ref(L, LUA_REGISTRYINDEX);  // kept for the life of the process
  bool replaced = op::custom::Register(op_type, [op_type, factory](const op::ParamDict& kwargs) {
    lua_State* L = CallbackState(op_type);
    int top = lua_gettop(L);
    TS_CHECK(lua_checkstack(L, 8)) << "Custom '" << op_type << "': Lua stack overflow";
    lua_rawgeti(L, LUA_REGISTRYINDEX, factory);
    lua_createtable(L, 0, int(kwargs.size()));
    for (const auto& [k, v] : kwargs) {
      lua_pushlstring(L, v.data(), v.size());
      lua_setfield(L, -2, k.c_str());
    }
    if (CallWithTraceback(L, 1, 1) != 0) {
      std::string msg = ErrorText(L);
      lua_settop(L, top);
      TS_THROW << "Custom '" << op_type << "': creating the property failed: " << msg;
    }
    TS_CHECK(lua_istable(L, -1) || lua_isuserdata(L, -1))
        << "Custom '" << op_type << "': the property constructor returned a "
        << luaL_typename(L, -1);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_settop(L, top);
    return std::make_shared<LuaProp>(op_type, ref);
  });
  lua_pushboolean(L, replaced);
  return 1;
}

int ListOps(lua_State* L) {
  PushStrings(L, op::custom::ListRegistered());
  return 1;
}

void Open(lua_State* L, int mx) {
  PushTableField(L, mx, "operator");  // shared with the other mx.operator binding
  SetFunctions(L, lua_gettop(L),
               {{"_register", Guarded<RegisterOp>,
                 "mx.operator._register(op_type, factory, defaults): use mx.operator.register"},
                {"list", Guarded<ListOps>,
                 "mx.operator.list() -> the op_types registered with mx.operator.register"}});
  lua_pop(L, 1);
}

}  // namespace

TESSERA_SHELL_BINDING(custom_op, 70, Open);

}  // namespace tessera::shell
