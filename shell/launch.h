// tessera --launch N script.lua args: N local workers through mpirun.
#pragma once

#include <string>
#include <vector>

namespace tessera::shell {

// mpirun's command line for N copies of this executable with `args` (the
// command line without --launch N). As root, Open MPI's refusal to run is
// lifted, as CI containers run as root.
std::vector<std::string> LaunchCommand(int workers, const std::string& self,
                                       const std::vector<std::string>& args, bool as_root);

// Replaces this process with mpirun; returns only on failure (with why).
std::string ExecLaunch(int workers, int argc, char** argv);

}  // namespace tessera::shell
