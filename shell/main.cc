// tessera: the REPL and script runner. See docs/shell.md.
#include <unistd.h>

#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "engine/base/context.h"
#include "engine/kvstore/collectives.h"
#include "engine/ndarray/check_numerics.h"
#include "engine/scheduler/engine.h"
#include "interpreter.h"
#include "launch.h"
#include "lua_util.h"
#include "ops/custom/plugin_loader.h"
#include "options.h"
#include "repl.h"
#include "run.h"

using namespace tessera::shell;

namespace {

// "2.1.0-beta3, GC64": asks LuaJIT's ffi, loaded only for --version.
std::string LuaJitDescription(lua_State* L) {
  std::string s = LUAJIT_VERSION;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "ffi");
  if (lua_pcall(L, 1, 1, 0) == 0) {
    lua_getfield(L, -1, "abi");
    lua_pushliteral(L, "gc64");
    if (lua_pcall(L, 1, 1, 0) == 0) s += lua_toboolean(L, -1) ? " (GC64)" : " (not GC64)";
  }
  lua_settop(L, 0);
  return s;
}

int RunTests(lua_State* L, const std::string& path) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "tessera.testing");
  if (CallWithTraceback(L, 1, 1) != 0) {
    ReportError(ErrorText(L));
    return 1;
  }
  lua_getfield(L, -1, "run");
  lua_pushlstring(L, path.data(), path.size());
  if (CallWithTraceback(L, 1, 2) != 0) {
    ReportError(ErrorText(L));
    return 1;
  }
  bool failed = lua_tointeger(L, -1) > 0;
  lua_settop(L, 0);
  return failed ? 1 : 0;
}

// --load-ops: each plugin before any Lua runs, so scripts, -e and the REPL
// see its ops. Stops at the first failure.
bool LoadPlugins(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    try {
      tessera::op::LoadOpPlugin(path);
    } catch (const std::exception& e) {
      ReportError(e.what());
      return false;
    }
  }
  return true;
}

// A worker of a job (a dist store was made): MPI ends with the process. A
// worker that failed stops the whole job (mpirun names its rank), so the
// others do not wait for it until their collectives time out.
void EndCollectives(int code) {
  using tessera::kvstore::Collectives;
  if (!Collectives::Started()) return;
  const Collectives& c = Collectives::Get();
  if (code != 0 && c.size() > 1) {
    std::fprintf(stderr, "tessera: rank %d of %d failed: stopping the job\n", c.rank(), c.size());
    std::fflush(stderr);
    Collectives::Abort(code);
  }
  Collectives::Finalize();
}

int Main(int argc, char** argv) {
  Options opts;
  std::string error;
  if (!ParseOptions(argc, argv, &opts, &error)) {
    std::fprintf(stderr, "tessera: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (opts.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (opts.launch > 0) {
    if (opts.script == 0 && opts.test_path.empty()) {
      std::fprintf(stderr, "tessera: --launch N needs a script (or --test PATH) to run\n%s",
                   kUsage);
      return 2;
    }
    std::fprintf(stderr, "tessera: %s\n", ExecLaunch(opts.launch, argc, argv).c_str());
    return 1;
  }
  // Before anything asks for the engine: the choice is read once.
  if (!opts.engine.empty()) setenv("TESSERA_ENGINE", opts.engine.c_str(), 1);
  if (opts.check_numerics) tessera::opcall::SetCheckNumerics(true);
  std::setlocale(LC_CTYPE, "");  // libedit decodes multibyte input by the locale

  Interpreter* in = Interpreter::Create();
  lua_State* L = in->state();
  if (opts.version) {
    std::printf("tessera %s, %s, CUDA %s\n", TESSERA_VERSION, LuaJitDescription(L).c_str(),
                tessera::BuiltWithCUDA() ? "built" : "not built");
    in->Close();  // what start-up made (a symbol the API probes) is freed
    return 0;
  }
  SetArgTable(L, argc, argv, opts.script);

  bool ok = LoadPlugins(opts.load_ops);
  for (const Options::Action& a : opts.actions) {
    if (!ok) break;
    ok = a.kind == Options::Action::kExecute ? RunString(L, a.text, "=(command line)")
                                             : RequireModule(L, a.text);
  }
  int status = 0;
  if (ok && !opts.test_path.empty()) {
    status = RunTests(L, opts.test_path);
  } else if (ok && (opts.script > 0 || opts.read_stdin)) {
    ok = RunScript(L, argc, argv, opts.script);
  } else if (ok && opts.actions.empty() && !opts.interactive) {
    if (isatty(STDIN_FILENO))
      ok = RunRepl(in);
    else
      ok = RunScript(L, argc, argv, 0);  // a script piped in
  }
  if (ok && opts.interactive) ok = RunRepl(in);
  // Work still pushed runs to the end, and its failure is the run's failure.
  if (!WaitForEngine(L)) ok = false;
  in->Close();
  // Closing Lua freed its arrays through engine ops; they must end before the
  // process does, or a GPU free could race the CUDA runtime's own shutdown.
  try {
    tessera::engine::Engine::Get()->WaitForAll();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: freeing arrays at exit: %s\n", e.what());
  }
  std::fflush(stdout);
  const int code = status != 0 ? status : ok ? 0 : 1;
  EndCollectives(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: %s\n", e.what());
    return 1;
  }
}
