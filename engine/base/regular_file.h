// Opening a file to read it whole, refusing what is not a regular file. A
// FIFO named where a file is expected would block open() or read() until a
// writer comes, maybe forever; a directory or a device has no meaningful
// size. Readers of files (NDArray files, symbol JSON, plugins, data sets)
// call these first, so such a name is an error that says what it is:
//   "load: /tmp/x is not a regular file (it is a FIFO)"
// A path with a NUL byte is refused too: the system would read only the part
// before it, a different file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// Opens `path` read-only without blocking (O_NONBLOCK, so a FIFO is never
// waited on), checks that it is a regular file, and returns the descriptor
// in blocking mode again, with close-on-exec. `*size` (when given) gets the
// file's size. `what` starts error messages ("load", "MNISTIter").
int OpenRegularFile(const std::string& path, std::string_view what, uint64_t* size = nullptr);

// The same check without keeping the file open: the size of the regular
// file `path`. For readers that open it themselves (zlib, Lua's io.open).
uint64_t CheckRegularFile(const std::string& path, std::string_view what);

// "a FIFO", "a directory", "a character device", ... for a stat mode.
const char* FileKindName(unsigned mode);

}  // namespace tessera
