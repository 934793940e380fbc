#include "ops/custom/plugin_loader.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "engine/base/error.h"
#include "engine/base/regular_file.h"
#include "engine/op/registration_guard.h"
#include "ops/custom/op_plugin.h"

namespace tessera::op {
namespace {

struct Loaded {
  void* handle;
  std::vector<std::string> ops;
};

struct LoaderState {
  std::mutex mu;  // one load at a time: the before/after op lists must be the plugin's alone
  std::map<std::string, Loaded> by_path;  // canonical path -> what it registered
  std::vector<std::string> order;
  static LoaderState& Get() {
    static LoaderState* s = new LoaderState();  // plugins are never unloaded either
    return *s;
  }
};

#define TESSERA_OP_PLUGIN_NAME_(T) #T,
constexpr const char* kLayoutNames[] = {TESSERA_OP_PLUGIN_LAYOUT_TYPES(TESSERA_OP_PLUGIN_NAME_)};
#undef TESSERA_OP_PLUGIN_NAME_

std::string Demangle(const std::string& symbol) {
  int status = 0;
  char* text = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && text ? text : symbol;
  std::free(text);
  return out;
}

// dlerror's text, with the C++ name of an undefined symbol spelled out: the
// usual cause is a plugin calling something this tessera does not have.
std::string DlErrorText() {
  const char* e = dlerror();
  std::string text = e ? e : "unknown dlopen error";
  const std::string marker = "undefined symbol: ";
  if (auto at = text.find(marker); at != std::string::npos) {
    const size_t begin = at + marker.size();
    const size_t end = text.find_first_of(" \t(,", begin);
    const std::string symbol = text.substr(begin, end == std::string::npos ? end : end - begin);
    const std::string name = Demangle(symbol);
    if (name != symbol)
      text += " [" + name + "; not defined by this tessera: was the plugin built against another " +
              "version's headers?]";
  }
  return text;
}

const char* StdLibraryName(uint32_t kind) {
  switch (kind) {
    case 1:
      return "libstdc++ with the C++11 ABI";
    case 2:
      return "libstdc++ with the old ABI (_GLIBCXX_USE_CXX11_ABI=0)";
    case 3:
      return "libc++";
    default:
      return "an unknown C++ standard library";
  }
}

// Empty when the plugin's build matches this executable's, else what differs.
std::string CompareInfo(const TesseraOpPluginInfo& p) {
  const TesseraOpPluginInfo& h = *plugin::Info();
  const std::string rebuild = "; rebuild it against this tessera's installed headers";
  if (p.abi_version != h.abi_version)
    return "it was built for operator plugin ABI version " + std::to_string(p.abi_version) +
           ", this tessera has version " + std::to_string(h.abi_version) + rebuild;
  if (p.info_size != h.info_size)
    return "its TesseraOpPluginInfo has " + std::to_string(p.info_size) +
           " bytes, this tessera's " + std::to_string(h.info_size) + rebuild;
  if (p.cxx_abi != h.cxx_abi)
    return "it was compiled for C++ ABI " + std::to_string(p.cxx_abi) +
           " (__GXX_ABI_VERSION), this tessera for " + std::to_string(h.cxx_abi) +
           "; build it with the same compiler as tessera";
  if (p.std_library != h.std_library)
    return std::string("it uses ") + StdLibraryName(p.std_library) + ", this tessera " +
           StdLibraryName(h.std_library);
  if (p.debug_containers != h.debug_containers)
    return std::string("it was compiled ") + (p.debug_containers ? "with" : "without") +
           " _GLIBCXX_DEBUG, this tessera " + (h.debug_containers ? "with" : "without");
  if (p.num_sizes != h.num_sizes || !p.sizes)
    return "it checks the sizes of " + std::to_string(p.num_sizes) + " types, this tessera " +
           std::to_string(h.num_sizes) + " (the headers differ)" + rebuild;
  std::string diff;
  for (uint32_t i = 0; i < h.num_sizes; ++i)
    if (p.sizes[i] != h.sizes[i])
      diff += std::string(diff.empty() ? "" : ", ") + "sizeof(" + (kLayoutNames[i] + 2) + ") is " +
              std::to_string(p.sizes[i]) + " there, " + std::to_string(h.sizes[i]) + " here";
  if (!diff.empty()) return "its C++ layout differs from this tessera's: " + diff + rebuild;
  return {};
}

std::vector<std::string> NamesFrom(size_t first) {
  std::vector<std::string> names;
  const std::vector<const Op*> all = Op::ListAll();
  for (size_t i = first; i < all.size(); ++i) names.push_back(all[i]->name());
  return names;
}

std::string Join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The canonical path of the file `path` names; a bare name means a file in
// the current directory (a path, not a library name for dlopen to search).
std::string CanonicalPath(const std::string& path) {
  TS_CHECK(!path.empty()) << "cannot load operator plugin: the path is empty";
  const std::string p = path.find('/') == std::string::npos ? "./" + path : path;
  char buf[PATH_MAX];
  if (!realpath(p.c_str(), buf)) {
    const int err = errno;
    TS_THROW << "cannot load operator plugin '" << path
             << "': " << (err == ENOENT ? "no such file" : std::strerror(err));
  }
  // dlopen would block on a FIFO until a writer came.
  CheckRegularFile(buf, "cannot load operator plugin");
  return buf;
}

// Until registration runs nothing points into the library, so every failure
// before it closes the library again.
[[noreturn]] void CloseAndThrow(void* handle, const std::string& where, const std::string& why) {
  dlclose(handle);
  TS_THROW << "cannot load " << where << ": " << why;
}

}  // namespace

std::vector<std::string> LoadOpPlugin(const std::string& path) {
  const std::string canonical = CanonicalPath(path);
  LoaderState& s = LoaderState::Get();
  std::lock_guard lock(s.mu);
  if (auto it = s.by_path.find(canonical); it != s.by_path.end()) return it->second.ops;
  const std::string where = "operator plugin '" + path + "'";

  const size_t before = Op::ListAll().size();
  dlerror();
  void* handle = dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  TS_CHECK(handle) << "cannot load " << where << ": " << DlErrorText();
  for (const auto& entry : s.by_path)
    if (entry.second.handle == handle) return entry.second.ops;  // the same file by another name

  // Static initialisers ran inside dlopen, before any check could: ops they
  // registered are in the registry for good, so the library stays loaded.
  if (Op::ListAll().size() != before)
    TS_THROW
        << "cannot load " << where << ": it registered operators while it was being opened ("
        << Join(NamesFrom(before))
        << "), before its ABI could be checked; register them inside TESSERA_OP_PLUGIN() { ... }";

  auto abi = reinterpret_cast<TesseraOpPluginAbiFn>(dlsym(handle, TESSERA_OP_PLUGIN_ABI_SYMBOL));
  auto reg =
      reinterpret_cast<TesseraOpPluginRegisterFn>(dlsym(handle, TESSERA_OP_PLUGIN_REGISTER_SYMBOL));
  if (!abi || !reg) {
    CloseAndThrow(
        handle, where,
        std::string("it is not a Tessera operator plugin: it does not export ") +
            (!abi && !reg ? TESSERA_OP_PLUGIN_ABI_SYMBOL " nor " TESSERA_OP_PLUGIN_REGISTER_SYMBOL
             : !abi       ? TESSERA_OP_PLUGIN_ABI_SYMBOL
                          : TESSERA_OP_PLUGIN_REGISTER_SYMBOL) +
            " (define them with TESSERA_OP_PLUGIN() from ops/custom/op_plugin.h)");
  }
  const TesseraOpPluginInfo* info = abi();
  if (!info) CloseAndThrow(handle, where, TESSERA_OP_PLUGIN_ABI_SYMBOL "() returned null");
  if (std::string why = CompareInfo(*info); !why.empty()) CloseAndThrow(handle, where, why);

  char error[4096] = "";
  int rc;
  {
    RegistrationGuard guard;
    rc = reg(error, sizeof error);
  }
  std::vector<std::string> names = NamesFrom(before);
  if (rc != 0) {
    TS_THROW << "cannot load " << where
             << ": its registration failed: " << (error[0] ? error : "no message")
             << (names.empty()
                     ? ""
                     : " (operators it registered before that stay: " + Join(names) + ")");
  }
  s.by_path[canonical] = {handle, names};
  s.order.push_back(canonical);
  return names;
}

std::vector<std::string> LoadedOpPlugins() {
  LoaderState& s = LoaderState::Get();
  std::lock_guard lock(s.mu);
  return s.order;
}

}  // namespace tessera::op
