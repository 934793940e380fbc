// Writing files atomically (engine/base/atomic_file.h) when the writer dies:
// a save ended by SIGTERM, SIGINT or SIGHUP leaves no temporary behind, and
// a save removes the temporaries that dead processes left beside its target.
// No engine runs in this program, so children can be forked safely.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/atomic_file.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A pid no process has: a child that has exited and been reaped.
pid_t DeadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// Forks a child that saves `path`, raising `sig` at itself half-way through
// the write; returns the child's wait status.
int SaveKilledBy(const std::string& path, int sig) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    WriteFileAtomically(
        path,
        [sig](int fd) {
          WriteAllToFd(fd, std::string(1 << 16, 'x'), "half", "save");
          std::raise(sig);
          WriteAllToFd(fd, "never", "half", "save");
        },
        "save");
    ::_exit(0);  // the signal was not fatal
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

// First in this file: the handlers are installed by the first save of a
// process, and the children here must each make theirs with the default
// actions in place (a test runner may start us with SIGINT ignored).
TEST_CASE("a save killed by a signal leaves its target and no temporary") {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  TempDir dir("tessera_atomic_file_test");
  const std::string path = dir / "model.params";
  { std::ofstream(path) << "old contents"; }
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    CAPTURE(sig);
    const int status = SaveKilledBy(path, sig);
    CHECK(WIFSIGNALED(status));  // died of it, as without the handler
    CHECK(WTERMSIG(status) == sig);
    CHECK(dir.Files() == std::vector<std::string>{"model.params"});
    CHECK(ReadFile(path) == "old contents");
  }
}

TEST_CASE("a save removes the temporaries of its target that dead processes left") {
  TempDir dir("tessera_atomic_file_test");
  const std::string path = dir / "model.params";
  const std::string dead = std::to_string(DeadPid());
  const std::string parent = std::to_string(::getppid());
  const std::string self = std::to_string(::getpid());
  for (const std::string& name : std::vector<std::string>{
           "model.params.tmp." + dead + ".0",    // a killed save: removed
           "model.params.tmp." + dead + ".17",   // another of it: removed
           "model.params.tmp." + parent + ".3",  // a live process's: maybe in progress, kept
           "model.params.tmp." + self + ".99",   // ours: kept
           "other.params.tmp." + dead + ".0",    // another target's: kept
           "model.params.tmp." + dead + ".x",    // not a name we make: kept
           "model.params.tmp.notapid.1"})        // not a name we make: kept
    std::ofstream(dir / name) << "junk";
  WriteFileAtomically(path, std::string("new"), "save");
  CHECK(ReadFile(path) == "new");
  std::vector<std::string> want = {"model.params",
                                   "model.params.tmp." + dead + ".x",
                                   "model.params.tmp." + parent + ".3",
                                   "model.params.tmp." + self + ".99",
                                   "model.params.tmp.notapid.1",
                                   "other.params.tmp." + dead + ".0"};
  std::sort(want.begin(), want.end());
  CHECK(dir.Files() == want);
}

TEST_CASE("a path with a NUL byte is refused, not cut") {
  TempDir dir("tessera_atomic_file_test");
  const std::string path = dir / std::string("a\0b", 3);
  CHECK(Contains(ErrorOf([&] { WriteFileAtomically(path, std::string("x"), "save"); }),
                 "contains a NUL byte"));
  CHECK(dir.Files().empty());
}
