#include "repl_commands.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <sstream>

#include "engine/base/error.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/profiler.h"
#include "engine_wait.h"
#include "lua_util.h"
#include "memory.h"
#include "repl_eval.h"
#include "run.h"

namespace tessera::shell {

const char* const kCommandHelp =
    "  :help              this list\n"
    "  :wait              wait for all engine work (mx.waitall())\n"
    "  :engine            engine type, pending ops, workers and queues per lane\n"
    "  :memory            memory in use, pooled and peak per device\n"
    "  :time STATEMENT    run it and wait for the work it pushed; print the wall time\n"
    "  :profile on|off    start or stop the op profiler\n"
    "  :profile dump [F]  wait for all work, write the Chrome trace to F (or the\n"
    "                     configured file) and print the aggregate table\n"
    "  :plot SYMBOL       draw the symbol's graph to NAME.svg (mx.viz.plot_network)\n"
    "  :timing on|off     print every line's wall time, its engine work included\n"
    "  :who               the globals made in this session: type; arrays: shape,\n"
    "                     dtype, device, bytes\n"
    "  :quit              leave (as Ctrl-D)\n"
    "  ?name              help for a name, e.g. ?engine.push (help(x) for values)\n"
    "Ctrl-C stops the running line or clears the input; Tab completes names.\n";

namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

void PrintEngine() {
  engine::EngineStats s = engine::Engine::Get()->Stats();
  std::printf("%s engine, %lld ops pending\n", s.type.c_str(), static_cast<long long>(s.pending));
  for (const engine::LaneStats& lane : s.lanes)
    std::printf("  %-10s %-9s %2d workers  %4lld queued  %3lld running\n",
                lane.ctx.ToString().c_str(), lane.lane.c_str(), lane.workers,
                static_cast<long long>(lane.queued), static_cast<long long>(lane.running));
  if (s.lanes.empty() && s.type == "threaded")
    std::printf("  (no lane started yet: lanes start on first use)\n");
}

bool g_timing = false;  // :timing on

// The wall time of the statement and of the engine work it pushed: only
// that work, not what was outstanding before. The time is printed even when
// the work fails or the wait is interrupted, then the error.
void Time(lua_State* L, const std::string& stmt, bool color) {
  if (stmt.empty()) throw Error(":time needs a statement, e.g. :time f(x)");
  RunTimed(L, [&] { return EvalString(L, stmt, color); });  // reports its own error
}

void Timing(const std::string& args) {
  if (args == "on" || args == "off") {
    g_timing = args == "on";
    std::printf("timing %s\n", args.c_str());
  } else {
    throw Error("usage: :timing on | off (got ':timing " + args + "')");
  }
}

// :who: the globals the session made (not those there at start-up), with
// their type, and for arrays their shape, dtype, device and bytes.
void Who(lua_State* L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "tessera.pretty");
  if (lua_pcall(L, 1, 1, 0) != 0 || !lua_istable(L, -1)) {
    lua_pop(L, 1);
    throw Error(":who: the printer module is missing");
  }
  lua_getfield(L, -1, "who");
  lua_remove(L, -2);
  if (lua_pcall(L, 0, 1, 0) != 0) {
    std::string err = ErrorText(L);
    lua_pop(L, 1);
    throw Error(":who: " + err);
  }
  size_t n = 0;
  const char* text = lua_tolstring(L, -1, &n);
  std::fwrite(text, 1, n, stdout);
  lua_pop(L, 1);
}

// Commands that take no argument refuse one rather than ignore it: a
// mistyped `:memory gpu` should not look as if it did something.
void NoArguments(const std::string& cmd, const std::string& args) {
  if (!args.empty()) throw Error("usage: :" + cmd + " (it takes no arguments, got '" + args + "')");
}

void Profile(lua_State* L, const std::string& args) {
  std::istringstream in(args);
  std::string what, file, extra;
  in >> what >> file >> extra;
  engine::Profiler* p = engine::Profiler::Get();
  if (!extra.empty() || (!file.empty() && what != "dump")) {
    throw Error("usage: :profile on | off | dump [FILE] (got ':profile " + args + "')");
  } else if (what == "on") {
    p->SetState(true);
    std::printf("profiler on\n");
  } else if (what == "off") {
    p->SetState(false);
    std::printf("profiler off\n");
  } else if (what == "dump") {
    WaitForAll(L);
    p->Dump(file);
    std::printf("%s", p->AggregateTable().c_str());
    std::printf("trace written to %s\n", file.empty() ? p->filename().c_str() : file.c_str());
  } else {
    throw Error("usage: :profile on | off | dump [FILE]");
  }
}

// :plot EXPR: the graph of the symbol EXPR evaluates to, drawn to NAME.svg
// (NAME: EXPR when it is a plain name, else "plot"), and its path printed.
void Plot(lua_State* L, const std::string& expr, bool color) {
  if (expr.empty()) throw Error("usage: :plot SYMBOL, e.g. :plot net");
  bool plain = true;
  for (char c : expr) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  const std::string title = plain ? expr : "plot";
  EvalString(
      L,
      "print('plot written to ' .. mx.viz.plot_network((" + expr + "), {title = '" + title + "'}))",
      color);
}

CommandResult Dispatch(lua_State* L, const std::string& line, bool color) {
  if (line[0] == '?') {
    lua_getglobal(L, "help");
    std::string name = Trim(line.substr(1));
    if (name.empty())
      lua_pushnil(L);
    else
      lua_pushlstring(L, name.data(), name.size());
    if (lua_pcall(L, 1, 0, 0) != 0) {
      ReportError(lua_tostring(L, -1) ? lua_tostring(L, -1) : "help failed");
      lua_pop(L, 1);
    }
    return CommandResult::kDone;
  }
  std::string rest = line.substr(1);
  size_t sp = rest.find_first_of(" \t");
  std::string cmd = rest.substr(0, sp);
  std::string args = sp == std::string::npos ? "" : Trim(rest.substr(sp));
  if (cmd == "help" || cmd == "h") {
    NoArguments(cmd, args);
    std::printf("%s", kCommandHelp);
  } else if (cmd == "wait") {
    NoArguments(cmd, args);
    WaitForAll(L);
  } else if (cmd == "engine") {
    NoArguments(cmd, args);
    PrintEngine();
  } else if (cmd == "memory") {
    NoArguments(cmd, args);
    std::printf("%s", MemoryReport().c_str());
  } else if (cmd == "time") {
    Time(L, args, color);
  } else if (cmd == "profile") {
    Profile(L, args);
  } else if (cmd == "plot") {
    Plot(L, args, color);
  } else if (cmd == "timing") {
    Timing(args);
  } else if (cmd == "who") {
    NoArguments(cmd, args);
    Who(L);
  } else if (cmd == "quit" || cmd == "q" || cmd == "exit") {
    NoArguments(cmd, args);
    return CommandResult::kQuit;
  } else {
    throw Error("unknown command ':" + cmd + "' (:help lists the commands)");
  }
  return CommandResult::kDone;
}

}  // namespace

bool TimingEnabled() {
  return g_timing;
}

void RunTimed(lua_State* L, const std::function<bool()>& run) {
  auto t0 = std::chrono::steady_clock::now();
  engine::PushGroup pushed;
  const bool ok = run();
  pushed.Close();
  std::string failure;
  try {
    WaitForGroup(L, pushed);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("time: %.3f ms%s\n", ms, ok && failure.empty() ? "" : " (failed)");
  std::fflush(stdout);
  if (!failure.empty()) ReportError(failure);
}

CommandResult RunCommand(lua_State* L, const std::string& line, bool color) {
  try {
    CommandResult r = Dispatch(L, line, color);
    std::fflush(stdout);
    return r;
  } catch (const std::exception& e) {
    ReportError(e.what());
    return CommandResult::kDone;
  }
}

}  // namespace tessera::shell
