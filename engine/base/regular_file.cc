#include "engine/base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/base/atomic_file.h"
#include "engine/base/error.h"

namespace tessera {

const char* FileKindName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a file";
  }
}

int OpenRegularFile(const std::string& path, std::string_view what, uint64_t* size) {
  TS_CHECK(path.find('\0') == std::string::npos)
      << what << ": the path '" << path.substr(0, path.find('\0'))
      << "\\0...' contains a NUL byte (a path cannot)";
  TS_CHECK(!path.empty()) << what << ": the path is empty";
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
  // writer. O_NOCTTY: a terminal named here must not become ours.
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  TS_CHECK(fd >= 0) << what << ": cannot open " << path << ": " << ErrnoMessage();
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = ErrnoMessage();
    ::close(fd);
    TS_THROW << what << ": cannot read " << path << ": " << why;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    TS_THROW << what << ": " << path << " is not a regular file (it is " << FileKindName(st.st_mode)
             << ")";
  }
  // Reads of a regular file never block for long; blocking mode again, so
  // readers need not handle EAGAIN.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const std::string why = ErrnoMessage();
    ::close(fd);
    TS_THROW << what << ": cannot read " << path << ": " << why;
  }
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

uint64_t CheckRegularFile(const std::string& path, std::string_view what) {
  uint64_t size = 0;
  ::close(OpenRegularFile(path, what, &size));
  return size;
}

}  // namespace tessera
