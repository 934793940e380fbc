// The command line: tessera [options] [script [args...]].
#pragma once

#include <string>
#include <vector>

namespace tessera::shell {

struct Options {
  // -e CODE and -l MODULE, in command-line order.
  struct Action {
    enum Kind { kExecute, kRequire } kind;
    std::string text;
  };
  std::vector<Action> actions;
  bool interactive = false;           // -i
  bool version = false;               // --version
  bool help = false;                  // --help
  std::string test_path;              // --test PATH
  std::string engine;                 // --engine naive|threaded
  std::vector<std::string> load_ops;  // --load-ops PATH, repeatable, in order
  int launch = 0;                     // --launch N: N workers through mpirun
  bool check_numerics = false;        // --check-numerics
  bool read_stdin = false;            // "-" as the script: read it from stdin
  int script = 0;                     // argv index of the script, 0 if none
};

// Parses argv. On a usage error returns false and sets *error.
bool ParseOptions(int argc, char** argv, Options* opts, std::string* error);

extern const char* const kUsage;

}  // namespace tessera::shell
