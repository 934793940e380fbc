// The seam where each part of the C++ API adds itself to the `mx` table.
//
// A binding file (bind_engine.cc, and later the NDArray, symbol and operator
// bindings) registers an opener with TESSERA_SHELL_BINDING; at start-up the
// interpreter creates `mx` and calls every opener in `order`, then runs the
// Lua half of the API (shell/lua/mx.lua). Three hooks let later bindings
// extend what exists without editing it:
//   - RegisterVarSource: objects that stand for an engine variable, so that
//     mx.engine.push{read = {...}, write = {...}} accepts them (NDArrays);
//   - RegisterDocSource: docs looked up by name for help('name') (the
//     operator registry);
//   - plain fields of `mx`, set by the opener.
#pragma once

#include <lua.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "engine/scheduler/engine.h"

namespace tessera::shell {

// Adds fields to the `mx` table, which is at absolute stack index `mx`.
using BindingOpener = void (*)(lua_State* L, int mx);

struct BindingRegistration {
  BindingRegistration(const char* name, int order, BindingOpener open);
};

// Static registration from the binding's own file. Lower `order` opens first;
// the built-in parts use 0-99 (context 10, engine 20, profiler 30).
#define TESSERA_SHELL_BINDING(name, order, open) \
  static const ::tessera::shell::BindingRegistration tessera_binding_##name(#name, order, open)

// Calls every registered opener.
void OpenBindings(lua_State* L, int mx);

// Returns true and sets *var when the value at `index` stands for an engine
// variable. Must not raise Lua errors.
using VarSource = bool (*)(lua_State* L, int index, engine::VarHandle* var);
void RegisterVarSource(VarSource source);
// The variable the value at `index` stands for, or nullptr.
engine::VarHandle ToVar(lua_State* L, int index);

// Documentation for a dotted name ("nd.dot", "FullyConnected"), if known.
using DocSource = std::optional<std::string> (*)(std::string_view name);
void RegisterDocSource(DocSource source);
std::optional<std::string> FindDoc(std::string_view name);

}  // namespace tessera::shell
