#include "bindings.h"

#include <algorithm>
#include <vector>

namespace tessera::shell {
namespace {

struct Opener {
  const char* name;
  int order;
  BindingOpener open;
};

// Function-local statics: registrations run from static initialisers of
// other files, in no particular order.
std::vector<Opener>& Openers() {
  static std::vector<Opener> v;
  return v;
}
std::vector<VarSource>& VarSources() {
  static std::vector<VarSource> v;
  return v;
}
std::vector<DocSource>& DocSources() {
  static std::vector<DocSource> v;
  return v;
}

}  // namespace

BindingRegistration::BindingRegistration(const char* name, int order, BindingOpener open) {
  Openers().push_back({name, order, open});
}

void OpenBindings(lua_State* L, int mx) {
  std::vector<Opener> openers = Openers();
  std::stable_sort(openers.begin(), openers.end(),
                   [](const Opener& a, const Opener& b) { return a.order < b.order; });
  for (const Opener& o : openers) o.open(L, mx);
}

void RegisterVarSource(VarSource source) {
  VarSources().push_back(source);
}

engine::VarHandle ToVar(lua_State* L, int index) {
  engine::VarHandle var = nullptr;
  for (VarSource s : VarSources())
    if (s(L, index, &var)) return var;
  return nullptr;
}

void RegisterDocSource(DocSource source) {
  DocSources().push_back(source);
}

std::optional<std::string> FindDoc(std::string_view name) {
  for (DocSource s : DocSources())
    if (auto doc = s(name)) return doc;
  return std::nullopt;
}

}  // namespace tessera::shell
