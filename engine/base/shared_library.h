// Binding the functions of a shared library opened with dlopen into typed
// pointers. The libraries Tessera opens on first use (so that a process which
// never needs one never maps it) each list their functions once, as an
// X-macro of X(member, symbol), and that list makes both the table's members
// and its binding:
//
//   #define TS_PNG_FUNCTIONS(X) X(begin_read, png_image_begin_read_from_memory) ...
//   struct Png {
//     TS_LIBRARY_FUNCTIONS(TS_PNG_FUNCTIONS)
//   };
//   png.Bind(lib, "images: the library loaded");  // or png.TryBind(lib)
//
// A member is typed by the library header's own declaration of its symbol;
// where that header is not at hand, X(member, symbol, signature) spells the
// type and TS_LIBRARY_FUNCTIONS_SIGNED(LIST) makes the table.
#pragma once

namespace tessera {

// The address of `name` in `lib`, or null when `lib` has no such symbol.
void* FindSymbol(void* lib, const char* name);

// The address of `name` in `lib`; throws tessera::Error "<owner> has no
// <name>" when it is missing (`owner` names the library as its user knows it).
void* RequireSymbol(void* lib, const char* name, const char* owner);

template <typename Fn>
void BindSymbol(void* lib, const char* name, const char* owner, Fn* fn) {
  *fn = reinterpret_cast<Fn>(RequireSymbol(lib, name, owner));
}

// Whether `lib` has `name`, bound into `*fn` (null when not).
template <typename Fn>
bool TryBindSymbol(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(FindSymbol(lib, name));
  return *fn != nullptr;
}

template <typename Signature>
using FunctionPointer = Signature*;

}  // namespace tessera

// Inside a struct: a member per X(member, symbol) of LIST, each null until
// bound, and Bind(lib, owner), which binds them all from `lib` and throws
// (RequireSymbol) at the first missing one, and TryBind(lib), which binds
// them in order and says whether all were there.
#define TS_LIBRARY_FUNCTIONS(LIST) TS_LIBRARY_TABLE(LIST, TS_LIBRARY_FUNCTION_DECLARED)

// As TS_LIBRARY_FUNCTIONS, for a LIST of X(member, symbol, signature).
#define TS_LIBRARY_FUNCTIONS_SIGNED(LIST) TS_LIBRARY_TABLE(LIST, TS_LIBRARY_FUNCTION_SIGNED)

#define TS_LIBRARY_TABLE(LIST, MEMBER)      \
  LIST(MEMBER)                              \
  void Bind(void* lib, const char* owner) { \
    LIST(TS_LIBRARY_BIND)                   \
  }                                         \
  bool TryBind(void* lib) {                 \
    return LIST(TS_LIBRARY_TRY_BIND) true;  \
  }

#define TS_LIBRARY_FUNCTION_DECLARED(member, symbol) decltype(&::symbol) member = nullptr;
#define TS_LIBRARY_FUNCTION_SIGNED(member, symbol, signature) \
  ::tessera::FunctionPointer<signature> member = nullptr;
#define TS_LIBRARY_BIND(member, symbol, ...) ::tessera::BindSymbol(lib, #symbol, owner, &member);
#define TS_LIBRARY_TRY_BIND(member, symbol, ...) ::tessera::TryBindSymbol(lib, #symbol, &member)&&
