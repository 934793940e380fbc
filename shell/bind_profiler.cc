// mx.profiler: the engine's op profiler (Chrome traces, aggregate table).
#include <string>

#include "bindings.h"
#include "engine/base/error.h"
#include "engine/scheduler/profiler.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

using engine::Profiler;

int SetConfig(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  Profiler* p = Profiler::Get();
  std::string filename = p->filename();
  bool aggregate = p->aggregate();
  lua_getfield(L, 1, "filename");
  if (!lua_isnil(L, -1)) filename = CheckString(L, -1, "profiler.set_config: filename");
  lua_getfield(L, 1, "aggregate");
  if (!lua_isnil(L, -1)) aggregate = lua_toboolean(L, -1);
  lua_getfield(L, 1, "max_events");
  if (!lua_isnil(L, -1)) {
    lua_Integer n = luaL_checkinteger(L, -1);
    TS_CHECK(n >= 0) << "profiler.set_config: max_events must be >= 0";
    p->SetMaxEvents(n);
  }
  lua_pop(L, 3);
  p->SetConfig(filename, aggregate);
  return 0;
}

int SetState(lua_State* L) {
  std::string state = CheckString(L, 1, "profiler.set_state: state");
  TS_CHECK(state == "run" || state == "stop")
      << "profiler.set_state: state must be 'run' or 'stop', not '" << state << "'";
  Profiler::Get()->SetState(state == "run");
  return 0;
}

int State(lua_State* L) {
  lua_pushstring(L, Profiler::Get()->enabled() ? "run" : "stop");
  return 1;
}

int Dump(lua_State* L) {
  std::string filename = lua_isnoneornil(L, 1) ? "" : CheckString(L, 1, "profiler.dump: filename");
  Profiler* p = Profiler::Get();
  p->Dump(filename);
  std::string written = filename.empty() ? p->filename() : filename;
  lua_pushlstring(L, written.data(), written.size());
  return 1;
}

int Dumps(lua_State* L) {
  std::string s = Profiler::Get()->DumpsChromeTrace();
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int Table(lua_State* L) {
  std::string by = lua_isnoneornil(L, 1) ? "total" : CheckString(L, 1, "profiler.table: by");
  TS_CHECK(by == "total" || by == "name")
      << "profiler.table: sort by 'total' or 'name', not '" << by << "'";
  std::string s = Profiler::Get()->AggregateTable(by == "total");
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int Clear(lua_State*) {
  Profiler::Get()->Clear();
  return 0;
}

void Open(lua_State* L, int mx) {
  lua_newtable(L);
  SetDoc(L, -1,
         "mx.profiler: records every engine op (name, device, thread, begin, end) as a "
         "Chrome trace (chrome://tracing, Perfetto) and a per-name aggregate table.");
  SetFunctions(
      L, -1,
      {{"set_config", Guarded<SetConfig>,
        "mx.profiler.set_config{filename = 'profile.json', aggregate = true, max_events = n}"},
       {"set_state", Guarded<SetState>,
        "mx.profiler.set_state('run' | 'stop') -> starts or stops recording"},
       {"state", Guarded<State>, "mx.profiler.state() -> 'run' or 'stop'"},
       {"dump", Guarded<Dump>,
        "mx.profiler.dump(filename = configured) -> writes the Chrome trace of everything "
        "recorded so far (atomically) and returns the file name. Ops still in flight are "
        "not in it: mx.waitall() first."},
       {"dumps", Guarded<Dumps>, "mx.profiler.dumps() -> the Chrome trace as a JSON string"},
       {"table", Guarded<Table>,
        "mx.profiler.table(sort = 'total' | 'name') -> the aggregate table (count, total, "
        "min, max, mean per op name) as text"},
       {"clear", Guarded<Clear>, "mx.profiler.clear() -> forgets everything recorded"}});
  lua_setfield(L, mx, "profiler");
}

}  // namespace

TESSERA_SHELL_BINDING(profiler, 30, Open);

}  // namespace tessera::shell
