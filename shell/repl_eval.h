// Evaluating one REPL chunk: expression or statement, complete or not.
#pragma once

#include <lua.hpp>

#include <string>

namespace tessera::shell {

enum class LoadResult { kOk, kIncomplete, kError };

// Compiles `chunk` as the REPL does: first as `return <chunk>` (an
// expression, whose values are printed), then as statements. kIncomplete when
// more lines could complete it (the parser stopped at '<eof>'); on kError the
// message is on the stack, on kOk the function.
LoadResult LoadChunk(lua_State* L, const std::string& chunk);

// Runs the function on the stack with its top level interpreted (so Ctrl-C
// can stop a loop typed at the prompt), prints its results unless `quiet`,
// reports an error. Returns whether it ran without error.
bool EvalLoaded(lua_State* L, bool quiet, bool color);

// LoadChunk then EvalLoaded for a complete single chunk (used by :time).
bool EvalString(lua_State* L, const std::string& chunk, bool color);

// True when the chunk ends with ';' (ignoring trailing blanks): results are
// not printed.
bool IsQuiet(const std::string& chunk);

}  // namespace tessera::shell
