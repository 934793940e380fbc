// Reading only regular files (engine/base/regular_file.h): a FIFO, a
// directory or a device is refused by name, without blocking, and a path
// with a NUL byte is refused rather than cut.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/base/regular_file.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::TempDir;
namespace fs = std::filesystem;

namespace {}  // namespace

TEST_CASE("readers refuse FIFOs, directories and devices without blocking") {
  TempDir dir("tessera_regular_file_test");
  const std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens the FIFO: a blocking open would never return.
  CHECK(ErrorOf([&] { OpenRegularFile(fifo, "load"); }) ==
        "load: " + fifo + " is not a regular file (it is a FIFO)");
  CHECK(ErrorOf([&] { CheckRegularFile(dir.path().string(), "load"); }) ==
        "load: " + dir.path().string() + " is not a regular file (it is a directory)");
  CHECK(ErrorOf([&] { CheckRegularFile("/dev/null", "MNISTIter"); }) ==
        "MNISTIter: /dev/null is not a regular file (it is a character device)");
  CHECK(Contains(ErrorOf([&] { CheckRegularFile(dir / "missing", "load"); }),
                 "load: cannot open " + dir / "missing"));
  const std::string file = dir / "f";
  std::ofstream(file) << "12345";
  uint64_t size = 0;
  const int fd = OpenRegularFile(file, "load", &size);
  CHECK(size == 5);
  CHECK((::fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);  // blocking again for the reader
  ::close(fd);
}

TEST_CASE("a path with a NUL byte is refused, not cut") {
  TempDir dir("tessera_regular_file_test");
  std::ofstream(dir / "a") << "the file a NUL would cut the path to";
  CHECK(Contains(ErrorOf([&] { OpenRegularFile(dir / std::string("a\0b", 3), "load"); }),
                 "contains a NUL byte"));
}
