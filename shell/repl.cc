#include "repl.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/scheduler/engine.h"
#include "interpreter.h"
#include "line_editor.h"
#include "lua_util.h"
#include "repl_commands.h"
#include "repl_eval.h"
#include "run.h"

namespace tessera::shell {
namespace {

// TESSERA_HISTORY, else ~/.tessera_history; TESSERA_HISTORY="" keeps none.
std::string HistoryPath() {
  if (const char* p = std::getenv("TESSERA_HISTORY")) return p;
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.tessera_history" : "";
}

std::vector<std::string> Complete(lua_State* L, const std::string& word) {
  std::vector<std::string> out;
  int top = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "tessera.complete");
  if (lua_pcall(L, 1, 1, 0) == 0) {
    lua_getfield(L, -1, "candidates");
    lua_pushlstring(L, word.data(), word.size());
    if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
      int n = static_cast<int>(lua_objlen(L, -1));
      for (int i = 1; i <= n; ++i) {
        lua_rawgeti(L, -1, i);
        if (const char* s = lua_tostring(L, -1)) out.emplace_back(s);
        lua_pop(L, 1);
      }
    }
  }
  lua_settop(L, top);
  return out;
}

void PrintBanner() {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return;
  std::printf("Tessera %s (%s) -- help() for the API, :help for commands, Ctrl-D to quit\n",
              TESSERA_VERSION, LUAJIT_VERSION);
  std::fflush(stdout);
}

}  // namespace

bool RunRepl(Interpreter* in) {
  lua_State* L = in->state();
  const bool color = UseColor(STDOUT_FILENO);
  LineEditor::Options opts;
  opts.history_path = HistoryPath();
  opts.idle_fd = in->queue().fd();
  opts.on_idle = [in, L] {
    in->queue().ClearWakeups();
    in->Drain(L);
  };
  opts.complete = [L](const std::string& word) { return Complete(L, word); };
  LineEditor editor(std::move(opts));
  PrintBanner();

  std::string chunk, line;
  for (;;) {
    const bool first = chunk.empty();
    LineEditor::Status st = editor.ReadLine(first ? "> " : ">> ", &line);
    if (st == LineEditor::Status::kEof) {
      if (editor.is_terminal()) std::fputs("\n", stdout);
      // Ctrl-D in the middle of a statement drops it, as Ctrl-C does; at
      // the "> " prompt it leaves. (Input that is not a terminal has
      // ended for good.)
      if (!first && editor.is_terminal()) {
        chunk.clear();
        continue;
      }
      break;
    }
    if (st == LineEditor::Status::kInterrupted) {
      chunk.clear();
      continue;
    }
    editor.AddHistory(line);
    if (first && (line.starts_with(":") || line.starts_with("?"))) {
      if (RunCommand(L, line, color) == CommandResult::kQuit) break;
      continue;
    }
    chunk = first ? line : chunk + "\n" + line;
    if (chunk.find_first_not_of(" \t\r\n") == std::string::npos) {
      chunk.clear();
      continue;
    }
    LoadResult r = LoadChunk(L, chunk);
    if (r == LoadResult::kIncomplete) continue;
    if (r == LoadResult::kError) {
      ReportError(ErrorText(L));
      lua_pop(L, 1);
    } else if (TimingEnabled()) {
      RunTimed(L, [&] { return EvalLoaded(L, IsQuiet(chunk), color); });
    } else {
      EvalLoaded(L, IsQuiet(chunk), color);
    }
    chunk.clear();
    std::fflush(stdout);
  }
  return WaitForEngine(L);
}

}  // namespace tessera::shell
