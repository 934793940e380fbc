#include "options.h"

#include <cstdlib>
#include <cstring>

namespace tessera::shell {

const char* const kUsage =
    "usage: tessera [options] [script [args...]]\n"
    "  -e CODE          run CODE\n"
    "  -l MODULE        require MODULE (sets the global of that name)\n"
    "  -i               enter the REPL after the script or -e\n"
    "  --test PATH      run the Lua tests in PATH (a file or a directory of *.lua files)\n"
    "  --engine TYPE    engine type: threaded (default) or naive\n"
    "  --load-ops PATH  load the C++ operator plugin PATH (a shared library) before\n"
    "                   anything runs; repeatable\n"
    "  --check-numerics every op checks its outputs: the first NaN or Inf fails it\n"
    "  --launch N       run the script as N workers of one job through mpirun\n"
    "                   (mx.kv.create('dist_sync') connects them)\n"
    "  --version        print the version and exit\n"
    "  --help           print this help and exit\n"
    "  --               stop handling options\n"
    "  -                read the script from stdin\n"
    "With no script and no -e, tessera starts the REPL when stdin is a terminal\n"
    "and runs stdin as a script otherwise.\n";

bool ParseOptions(int argc, char** argv, Options* o, std::string* error) {
  int i = 1;
  auto value = [&](const char* flag, std::string* out) {
    if (i + 1 >= argc) {
      *error = std::string(flag) + " needs an argument";
      return false;
    }
    *out = argv[++i];
    return true;
  };
  for (; i < argc; ++i) {
    const char* a = argv[i];
    if (a[0] != '-') break;  // the script
    if (!std::strcmp(a, "-")) {
      o->read_stdin = true;
      break;
    }
    if (!std::strcmp(a, "--")) {
      ++i;
      break;
    }
    std::string text;
    if (!std::strcmp(a, "-e") || !std::strcmp(a, "-l")) {
      if (!value(a, &text)) return false;
      o->actions.push_back(
          {a[1] == 'e' ? Options::Action::kExecute : Options::Action::kRequire, text});
    } else if (!std::strncmp(a, "-e", 2) || !std::strncmp(a, "-l", 2)) {
      o->actions.push_back(
          {a[1] == 'e' ? Options::Action::kExecute : Options::Action::kRequire, a + 2});
    } else if (!std::strcmp(a, "-i")) {
      o->interactive = true;
    } else if (!std::strcmp(a, "--test")) {
      if (!value(a, &o->test_path)) return false;
    } else if (!std::strcmp(a, "--load-ops")) {
      if (!value(a, &text)) return false;
      o->load_ops.push_back(text);
    } else if (!std::strcmp(a, "--check-numerics")) {
      o->check_numerics = true;
    } else if (!std::strcmp(a, "--launch")) {
      if (!value(a, &text)) return false;
      char* end = nullptr;
      const long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || n < 1 || n > 4096) {
        *error = "--launch needs a number of workers (1 or more), not '" + text + "'";
        return false;
      }
      o->launch = static_cast<int>(n);
    } else if (!std::strcmp(a, "--engine")) {
      if (!value(a, &o->engine)) return false;
      if (o->engine != "naive" && o->engine != "threaded") {
        *error = "--engine must be 'naive' or 'threaded', not '" + o->engine + "'";
        return false;
      }
    } else if (!std::strcmp(a, "--version") || !std::strcmp(a, "-v")) {
      o->version = true;
    } else if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
      o->help = true;
    } else {
      *error = std::string("unknown option '") + a + "'";
      return false;
    }
  }
  if (i < argc) o->script = i;
  return true;
}

}  // namespace tessera::shell
