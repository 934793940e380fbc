// The read-eval-print loop: line editing and completion (line_editor.h),
// multi-line chunks, printing of expression values, `:` commands and `?name`.
#pragma once

namespace tessera::shell {

class Interpreter;

// Runs until Ctrl-D or :quit. Returns whether the last engine wait, at exit,
// succeeded.
bool RunRepl(Interpreter* in);

}  // namespace tessera::shell
