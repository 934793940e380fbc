// mx.profiler: the engine's op profiler (Chrome traces, aggregate table).
#include <string>

#include "bindings.h"
#include "engine/base/error.h"
#include "engine/base/host_sync.h"
#include "engine/scheduler/profiler.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

using engine::Profiler;

// set_config: this project's keys and MXNet's. Every engine op is recorded,
// whatever called it, so profile_symbolic / profile_imperative / profile_api
// are accepted and change nothing; profile_memory (or profile_all) adds
// memory counters.
int SetConfig(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  Profiler* p = Profiler::Get();
  std::string filename = p->filename();
  bool aggregate = p->aggregate();
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    lua_pop(L, 1);
    const std::string key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
    static const char* const kKeys[] = {"filename",           "aggregate",      "aggregate_stats",
                                        "max_events",         "profile_all",    "profile_symbolic",
                                        "profile_imperative", "profile_memory", "profile_api",
                                        "continuous_dump"};
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    TS_CHECK(known) << "profiler.set_config: unknown option '" << key
                    << "' (filename, aggregate_stats, max_events, profile_all, profile_memory, "
                       "profile_symbolic, profile_imperative, profile_api)";
  }
  lua_getfield(L, 1, "filename");
  if (!lua_isnil(L, -1)) filename = CheckString(L, -1, "profiler.set_config: filename");
  lua_getfield(L, 1, "aggregate");
  if (!lua_isnil(L, -1)) aggregate = lua_toboolean(L, -1);
  lua_getfield(L, 1, "aggregate_stats");
  if (!lua_isnil(L, -1)) aggregate = lua_toboolean(L, -1);
  lua_getfield(L, 1, "max_events");
  if (!lua_isnil(L, -1)) {
    lua_Integer n = luaL_checkinteger(L, -1);
    TS_CHECK(n >= 0) << "profiler.set_config: max_events must be >= 0";
    p->SetMaxEvents(n);
  }
  lua_getfield(L, 1, "profile_memory");
  lua_getfield(L, 1, "profile_all");
  if (!lua_isnil(L, -2) || !lua_isnil(L, -1))
    p->SetProfileMemory(lua_toboolean(L, -2) || lua_toboolean(L, -1));
  lua_pop(L, 6);
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

// mx.profiler._aggregate() -> {{name, count, total_ns, min_ns, max_ns}, ...}
int AggregateRows(lua_State* L) {
  const std::vector<engine::OpAggregate> rows = Profiler::Get()->Aggregate();
  lua_createtable(L, static_cast<int>(rows.size()), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    lua_createtable(L, 0, 5);
    lua_pushlstring(L, rows[i].name.data(), rows[i].name.size());
    lua_setfield(L, -2, "name");
    lua_pushnumber(L, static_cast<lua_Number>(rows[i].count));
    lua_setfield(L, -2, "count");
    lua_pushnumber(L, static_cast<lua_Number>(rows[i].total_ns));
    lua_setfield(L, -2, "total_ns");
    lua_pushnumber(L, static_cast<lua_Number>(rows[i].min_ns));
    lua_setfield(L, -2, "min_ns");
    lua_pushnumber(L, static_cast<lua_Number>(rows[i].max_ns));
    lua_setfield(L, -2, "max_ns");
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 1;
}

// mx.profiler._now() -> the profiler's clock, in nanoseconds.
int Now(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(Profiler::NowNs()));
  return 1;
}

// mx.profiler._mark{name, domain, phase = 'X'|'i'|'C', scope, begin_ns,
// end_ns, values = {series = number}}
int RecordMark(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  engine::Mark m;
  lua_getfield(L, 1, "name");
  m.name = CheckString(L, -1, "profiler marker: name");
  lua_getfield(L, 1, "domain");
  if (!lua_isnil(L, -1)) m.domain = CheckString(L, -1, "profiler marker: domain");
  lua_getfield(L, 1, "phase");
  const std::string phase = lua_isnil(L, -1) ? "X" : CheckString(L, -1, "profiler marker: phase");
  TS_CHECK(phase == "X" || phase == "i" || phase == "C")
      << "profiler marker: phase must be 'X', 'i' or 'C', got '" << phase << "'";
  m.phase = phase[0];
  lua_getfield(L, 1, "scope");
  if (!lua_isnil(L, -1)) {
    const std::string scope = CheckString(L, -1, "profiler marker: scope");
    TS_CHECK(scope == "g" || scope == "p" || scope == "t")
        << "profiler marker: scope must be 'g', 'p' or 't', got '" << scope << "'";
    m.scope = scope[0];
  }
  lua_getfield(L, 1, "begin_ns");
  m.begin_ns = lua_isnil(L, -1) ? Profiler::NowNs() : static_cast<uint64_t>(lua_tonumber(L, -1));
  lua_getfield(L, 1, "end_ns");
  m.end_ns = lua_isnil(L, -1) ? m.begin_ns : static_cast<uint64_t>(lua_tonumber(L, -1));
  lua_getfield(L, 1, "values");
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_isnumber(L, -1))
        m.values.emplace_back(lua_tostring(L, -2), lua_tonumber(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 7);
  m.thread = Profiler::ThreadIndex();
  Profiler::Get()->RecordMark(std::move(m));
  return 0;
}

int HostSyncs(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(HostSyncCount()));
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
        "mx.profiler.set_config{filename = 'profile.json', aggregate_stats = true, max_events = "
        "n, profile_memory = false, profile_all = false} (MXNet's keys profile_symbolic, "
        "profile_imperative, profile_api are accepted: every engine op is recorded). "
        "profile_memory (or profile_all): each device's bytes in use and pooled as counters "
        "in the trace"},
       {"set_state", Guarded<SetState>,
        "mx.profiler.set_state('run' | 'stop') -> starts or stops recording"},
       {"state", Guarded<State>, "mx.profiler.state() -> 'run' or 'stop'"},
       {"dump", Guarded<Dump>,
        "mx.profiler.dump(filename = configured) -> writes the Chrome trace of everything "
        "recorded so far (atomically) and returns the file name. Ops still in flight are "
        "not in it: mx.waitall() first."},
       {"dumps_trace", Guarded<Dumps>,
        "mx.profiler.dumps_trace() -> the Chrome trace as a JSON string"},
       {"_aggregate", Guarded<AggregateRows>,
        "mx.profiler._aggregate() -> {{name, count, total_ns, min_ns, max_ns}, ...}"},
       {"_now", Guarded<Now>, "mx.profiler._now() -> the profiler's clock (ns)"},
       {"_mark", Guarded<RecordMark>,
        "mx.profiler._mark{name, domain, phase, scope, begin_ns, end_ns, values}: use "
        "mx.profiler.Task, Frame, Event, Counter, Marker"},
       {"table", Guarded<Table>,
        "mx.profiler.table(sort = 'total' | 'name') -> the aggregate table (count, total, "
        "min, max, mean per op name) as text"},
       {"clear", Guarded<Clear>, "mx.profiler.clear() -> forgets everything recorded"},
       {"host_syncs", Guarded<HostSyncs>,
        "mx.profiler.host_syncs() -> how many times an op has waited on the host for its GPU "
        "stream since the process started (values it checks on the host, copies between host "
        "and GPU memory, every op under TESSERA_GPU_SYNC_EACH_OP=1); while recording, each wait is "
        "a span 'host sync: ...' in the trace. A training step on data already on the GPU "
        "has none."}});
  lua_setfield(L, mx, "profiler");
}

}  // namespace

TESSERA_SHELL_BINDING(profiler, 30, Open);

}  // namespace tessera::shell
