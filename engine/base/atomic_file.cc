#include "engine/base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/base/error.h"

namespace tessera {

std::string ErrnoMessage() {
  return std::strerror(errno);
}

void WriteAllToFd(int fd, std::string_view bytes, const std::string& path, std::string_view what) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    TS_CHECK(k > 0) << what << ": cannot write " << path << ": " << ErrnoMessage();
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void WriteFileAtomically(const std::string& path, const std::function<void(int fd)>& write,
                         std::string_view what) {
  // pid and a counter keep concurrent writers of one path apart.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  TS_CHECK(fd >= 0) << what << ": cannot create " << path << " (writing " << tmp
                    << "): " << ErrnoMessage();
  bool closed = false;
  try {
    write(fd);
    // The bytes must be on disk before the rename makes them the file.
    TS_CHECK(::fsync(fd) == 0) << what << ": cannot write " << path << ": " << ErrnoMessage();
    closed = true;  // even a failed close releases the descriptor
    TS_CHECK(::close(fd) == 0) << what << ": cannot write " << path << ": " << ErrnoMessage();
  } catch (...) {
    if (!closed) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = ErrnoMessage();
    ::unlink(tmp.c_str());
    TS_THROW << what << ": cannot replace " << path << ": " << why;
  }
}

void WriteFileAtomically(const std::string& path, std::string_view bytes, std::string_view what) {
  WriteFileAtomically(
      path, [&](int fd) { WriteAllToFd(fd, bytes, path, what); }, what);
}

}  // namespace tessera
