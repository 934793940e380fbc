#include "launch.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace tessera::shell {

std::vector<std::string> LaunchCommand(int workers, const std::string& self,
                                       const std::vector<std::string>& args, bool as_root) {
  // --oversubscribe: more workers than cores is how a laptop tries a job
  // out. Binding stays mpirun's (a core each while they fit), and each
  // worker sizes its threads to the cores it is given.
  std::vector<std::string> cmd = {"mpirun", "-np", std::to_string(workers), "--oversubscribe"};
  if (as_root) cmd.push_back("--allow-run-as-root");
  cmd.push_back(self);
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

std::string ExecLaunch(int workers, int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--launch")) {
      ++i;  // and its count
      continue;
    }
    args.push_back(argv[i]);
  }
  char self[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string exe = n > 0 ? std::string(self, static_cast<size_t>(n)) : argv[0];
  const std::vector<std::string> cmd = LaunchCommand(workers, exe, args, geteuid() == 0);
  std::vector<char*> cargs;
  for (const std::string& s : cmd) cargs.push_back(const_cast<char*>(s.c_str()));
  cargs.push_back(nullptr);
  execvp(cargs[0], cargs.data());
  return std::string("cannot run mpirun (install openmpi-bin): ") + std::strerror(errno);
}

}  // namespace tessera::shell
