#include "engine/base/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "engine/base/error.h"
#include "engine/base/signal_cleanup.h"

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

namespace {

// "<target>.tmp.<pid>.<n>": the name of a temporary of `path`.
std::string TempName(const std::string& path, uint64_t n) {
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(n);
}

// The pid in `name` when it is "<base>.tmp.<pid>.<n>", else 0.
pid_t TempOwner(std::string_view name, std::string_view base) {
  const std::string_view tag = ".tmp.";
  if (name.size() <= base.size() + tag.size() || !name.starts_with(base) ||
      name.substr(base.size(), tag.size()) != tag)
    return 0;
  std::string_view rest = name.substr(base.size() + tag.size());
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == rest.size()) return 0;
  auto digits = [](std::string_view d) {
    return !d.empty() && d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (!digits(rest.substr(0, dot)) || !digits(rest.substr(dot + 1)) || dot > 9) return 0;
  return static_cast<pid_t>(std::stoll(std::string(rest.substr(0, dot))));
}

// Removes temporaries of `path` left by processes that no longer exist (a
// save killed by SIGKILL, a crash, a power cut). A live process's may be a
// save in progress and stay, this process's own included.
void RemoveStaleTemporaries(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // unreadable: nothing to clean that we could see
  while (const dirent* e = ::readdir(d)) {
    const pid_t owner = TempOwner(e->d_name, base);
    if (owner <= 0 || owner == ::getpid()) continue;
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // alive (EPERM: someone else's)
    ::unlinkat(::dirfd(d), e->d_name, 0);
  }
  ::closedir(d);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path, std::string_view what)
    : path_(std::move(path)), what_(what) {
  TS_CHECK(path_.find('\0') == std::string::npos)
      << what_ << ": the path '" << path_.substr(0, path_.find('\0'))
      << "\\0...' contains a NUL byte (a path cannot)";
  RemoveStaleTemporaries(path_);
  // pid and a counter keep concurrent writers of one path apart.
  static std::atomic<uint64_t> counter{0};
  tmp_ = TempName(path_, counter++);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  TS_CHECK(fd_ >= 0) << what_ << ": cannot create " << path_ << " (writing " << tmp_
                     << "): " << ErrnoMessage();
  // A SIGINT or SIGTERM that ends the process from here removes the temporary.
  slot_ = RegisterFileForSignalCleanup(tmp_);
}

AtomicFileWriter::~AtomicFileWriter() {
  Discard();
}

void AtomicFileWriter::Discard() {
  if (slot_ < 0) return;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  UnregisterFileForSignalCleanup(slot_);
  slot_ = -1;
}

void AtomicFileWriter::Write(std::string_view bytes) {
  TS_CHECK(fd_ >= 0) << what_ << ": " << path_ << " is closed";
  try {
    WriteAllToFd(fd_, bytes, path_, what_);
  } catch (...) {
    Discard();
    throw;
  }
}

void AtomicFileWriter::Commit() {
  TS_CHECK(fd_ >= 0) << what_ << ": " << path_ << " is closed";
  // The bytes must be on disk before the rename makes them the file.
  const bool synced = ::fsync(fd_) == 0;
  const std::string sync_error = synced ? "" : ErrnoMessage();
  const bool closed = ::close(fd_) == 0;  // even a failed close releases it
  fd_ = -1;
  if (!synced || !closed) {
    const std::string why = synced ? ErrnoMessage() : sync_error;
    Discard();
    TS_THROW << what_ << ": cannot write " << path_ << ": " << why;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string why = ErrnoMessage();
    Discard();
    TS_THROW << what_ << ": cannot replace " << path_ << ": " << why;
  }
  UnregisterFileForSignalCleanup(slot_);
  slot_ = -1;
}

void WriteFileAtomically(const std::string& path, const std::function<void(int fd)>& write,
                         std::string_view what) {
  AtomicFileWriter file(path, what);
  write(file.fd());
  file.Commit();
}

void WriteFileAtomically(const std::string& path, std::string_view bytes, std::string_view what) {
  WriteFileAtomically(
      path, [&](int fd) { WriteAllToFd(fd, bytes, path, what); }, what);
}

}  // namespace tessera
