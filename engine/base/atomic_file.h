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
