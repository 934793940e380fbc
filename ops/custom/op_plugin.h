// C++ operator plugins: a shared library, built outside the tree against the
// installed headers, that adds operators to the registry at run time
// (mx.operator.load(path) in Lua, `tessera --load-ops path` on the command
// line; the loader is ops/custom/plugin_loader.h).
//
//   #include "ops/custom/op_plugin.h"
//
//   TESSERA_OP_PLUGIN() {
//     TS_REGISTER_SIMPLE_OP(my_op, cpu).set_function(cpu::kDevice, MyForward) ...;
//     TS_REGISTER_OP(my_other_op).describe("...") ...;
//   }
//
// The body runs once, when the loader calls it, after it has checked that
// the library was built against this registry (the version and the layout
// below). Register inside the body, never from namespace-scope statics: those
// run while the library is being opened, before any check.
//
// The plugin links no Tessera library: the registry's symbols resolve
// against the `tessera` executable, which exports them. So the plugin must
// see the same C++ layout as the executable, which is what
// TesseraOpPluginInfo records and the loader compares.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/legacy_op/simple_op.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"

// The plugin interface version. Bump it whenever a change to an installed
// header changes what a compiled plugin relies on: a class layout, an
// inline function's behaviour, the meaning of an attribute, the entry
// points below. A plugin built for another version is refused by name.
#define TESSERA_OP_PLUGIN_ABI_VERSION 1

// The types whose sizes the loader compares (host against plugin), as a
// second line of defence when a layout changed without a version bump, or
// the plugin was compiled with another standard library mode (for example
// _GLIBCXX_DEBUG). Appending a type changes no other entry's position.
#define TESSERA_OP_PLUGIN_LAYOUT_TYPES(X) \
  X(std::string)                          \
  X(std::function<void()>)                \
  X(std::any)                             \
  X(std::vector<int>)                     \
  X(std::shared_ptr<int>)                 \
  X(std::exception_ptr)                   \
  X(::tessera::Shape)                     \
  X(::tessera::Context)                   \
  X(::tessera::RunContext)                \
  X(::tessera::TBlob)                     \
  X(::tessera::resource::Resource)        \
  X(::tessera::op::FieldInfo)             \
  X(::tessera::op::NodeAttrs)             \
  X(::tessera::op::Op)                    \
  X(::tessera::op::NodeEntry)             \
  X(::tessera::op::Node)                  \
  X(::tessera::op::OpContext)             \
  X(::tessera::op::EnvArguments)          \
  X(::tessera::op::SimpleOpRegEntry)

extern "C" {

// What a plugin was compiled against. The first two fields keep their
// places in every version, so any loader can read them and say what is wrong.
struct TesseraOpPluginInfo {
  uint32_t abi_version;  // TESSERA_OP_PLUGIN_ABI_VERSION
  uint32_t info_size;    // sizeof(TesseraOpPluginInfo)
  uint32_t cxx_abi;      // __GXX_ABI_VERSION (the Itanium C++ ABI revision), 0 if unknown
  uint32_t std_library;  // 1 libstdc++ with the C++11 string ABI, 2 its old ABI, 3 libc++, 0 other
  uint32_t debug_containers;  // 1 when built with _GLIBCXX_DEBUG
  uint32_t num_sizes;         // entries in `sizes`
  const uint32_t* sizes;      // sizeof of each TESSERA_OP_PLUGIN_LAYOUT_TYPES entry
};

// The entry points TESSERA_OP_PLUGIN() defines.
using TesseraOpPluginAbiFn = const TesseraOpPluginInfo* (*)();
// Registers the plugin's ops. Returns 0, or nonzero with a message in `error`.
using TesseraOpPluginRegisterFn = int (*)(char* error, size_t error_size);
}

#define TESSERA_OP_PLUGIN_ABI_SYMBOL "tessera_op_plugin_abi"
#define TESSERA_OP_PLUGIN_REGISTER_SYMBOL "tessera_op_plugin_register"

namespace tessera::op::plugin {
// Internal linkage on purpose: the executable has its own copy of these (the
// loader calls Info() for the host's side), and with default visibility a
// plugin's call to an inline function would bind to the executable's copy,
// which would report the host's layout instead of the plugin's.
namespace {

#define TESSERA_OP_PLUGIN_SIZEOF_(T) static_cast<uint32_t>(sizeof(T)),
constexpr uint32_t kLayoutSizes[] = {TESSERA_OP_PLUGIN_LAYOUT_TYPES(TESSERA_OP_PLUGIN_SIZEOF_)};
#undef TESSERA_OP_PLUGIN_SIZEOF_

constexpr uint32_t StdLibraryKind() {
#if defined(_LIBCPP_VERSION)
  return 3;
#elif defined(__GLIBCXX__) && defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
  return 1;
#elif defined(__GLIBCXX__)
  return 2;
#else
  return 0;
#endif
}

[[maybe_unused]] const TesseraOpPluginInfo* Info() {
  static const TesseraOpPluginInfo info = {
      TESSERA_OP_PLUGIN_ABI_VERSION,
      static_cast<uint32_t>(sizeof(TesseraOpPluginInfo)),
#ifdef __GXX_ABI_VERSION
      static_cast<uint32_t>(__GXX_ABI_VERSION),
#else
      0,
#endif
      StdLibraryKind(),
#ifdef _GLIBCXX_DEBUG
      1,
#else
      0,
#endif
      static_cast<uint32_t>(sizeof(kLayoutSizes) / sizeof(kLayoutSizes[0])),
      kLayoutSizes,
  };
  return &info;
}

// Runs the registration body; no exception crosses the C boundary.
[[maybe_unused]] int RunRegister(void (*body)(), char* error, size_t error_size) noexcept {
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    if (error_size) std::snprintf(error, error_size, "%s", e.what());
  } catch (...) {
    if (error_size)
      std::snprintf(error, error_size, "%s", "an exception that is not std::exception");
  }
  return 1;
}

}  // namespace
}  // namespace tessera::op::plugin

// Defines the two entry points and opens the body of the registration
// function: TESSERA_OP_PLUGIN() { ...registrations... }. Once per library.
#define TESSERA_OP_PLUGIN()                                                                        \
  static void tessera_op_plugin_register_ops_();                                                   \
  extern "C" __attribute__((visibility("default"))) const TesseraOpPluginInfo*                     \
  tessera_op_plugin_abi() {                                                                        \
    return ::tessera::op::plugin::Info();                                                          \
  }                                                                                                \
  extern "C" __attribute__((visibility("default"))) int tessera_op_plugin_register(                \
      char* error, size_t error_size) {                                                            \
    return ::tessera::op::plugin::RunRegister(tessera_op_plugin_register_ops_, error, error_size); \
  }                                                                                                \
  static void tessera_op_plugin_register_ops_()
