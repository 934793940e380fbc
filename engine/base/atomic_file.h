// Writing a file so that readers see the old contents or the new, never a
// half-written file: the bytes go to a temporary beside the target (same
// file system, so the rename is atomic), are fsync'ed, then renamed over it.
// On any failure the temporary is removed and the target left untouched.
//
// Nothing is left behind by a save that is killed either: a SIGINT, SIGTERM
// or SIGHUP that ends the process removes the temporary first
// (signal_cleanup.h), and each save removes the temporaries of its target
// that processes no longer alive left (after SIGKILL or a crash). A
// temporary is named "<target>.tmp.<pid>.<n>".
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace tessera {

// A file written over time that becomes `path` only at Commit(): until then
// (and when it is destroyed without a Commit, or the Commit fails) `path` is
// untouched and the temporary is removed. `what` starts error messages
// ("MXRecordIO").
class AtomicFileWriter {
 public:
  AtomicFileWriter(std::string path, std::string_view what);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  void Write(std::string_view bytes);
  // Syncs, closes and renames the temporary over `path`.
  void Commit();

 private:
  void Discard();
  std::string path_, tmp_, what_;
  int fd_ = -1;
  int slot_ = -1;  // signal cleanup registration
};

// Calls `write(fd)` on the temporary, then syncs and renames it to `path`.
// `what` starts error messages ("save", "profiler").
void WriteFileAtomically(const std::string& path, const std::function<void(int fd)>& write,
                         std::string_view what);

// The same for bytes already in memory.
void WriteFileAtomically(const std::string& path, std::string_view bytes, std::string_view what);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
void WriteAllToFd(int fd, std::string_view bytes, const std::string& path, std::string_view what);

// strerror(errno), for messages.
std::string ErrnoMessage();

}  // namespace tessera
