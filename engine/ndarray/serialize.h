// Saving and loading lists of NDArrays.
//
// Two formats (docs/formats.md gives the byte layouts):
//  - kTessera: this project's versioned little-endian format with a magic
//    number and a CRC32 per record;
//  - kMXNet: MXNet's NDArray-list format (`.params` files, `nd.save`). Every
//    record version MXNet has written is read (V3, V2, V1 and the legacy
//    records without a magic); V2 is written, which every MXNet since 0.12
//    reads.
//
// Saving waits for every array (WaitToRead: a failed op that wrote one is
// reported here, before anything is written), writes a temporary file in the
// target's directory and renames it into place, so a failed or interrupted
// save never leaves a partial file. Loading checks every count, shape and
// size against what is left of the file before allocating anything, and
// raises a tessera::Error naming the file, the byte offset and the field for
// a truncated or corrupt file.
//
// Loaded arrays are always on cpu(0): a file saved from a GPU loads in a
// build or on a machine without one, and the caller moves arrays where they
// belong (CopyTo). The contexts they were saved from are kept in
// LoadedArrays::saved_contexts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/ndarray/ndarray.h"

namespace tessera {

enum class Format {
  kTessera,  // docs/formats.md
  kMXNet,    // MXNet's .params / nd.save files
};

const char* FormatName(Format fmt);  // "tessera", "mxnet"
// Reads FormatName's spelling (also "params" for kMXNet); an error names the text.
Format FormatFromName(std::string_view name);

struct LoadedArrays {
  // On cpu(0). A "none" entry (is_none()) stands for an empty array slot
  // (MXNet writes these for NDArray()).
  std::vector<NDArray> arrays;
  // One per array for a named list (a dict in MXNet's terms), empty for an
  // unnamed list. Order is the file's order; names need not be unique.
  std::vector<std::string> names;
  // Where each array lived when it was saved (cpu(0) for a none entry).
  std::vector<Context> saved_contexts;
  Format format = Format::kTessera;
  // What was read, for messages and tools: "tessera v1", "mxnet V2 records",
  // "mxnet legacy records (before 0.11)", ...
  std::string variant;
};

// Writes `arrays` to `path`. `names` empty: an unnamed list; otherwise one
// unique name per array. A none array is written as an empty slot.
void SaveNDArrays(const std::string& path, const std::vector<NDArray>& arrays,
                  const std::vector<std::string>& names = {}, Format fmt = Format::kTessera);

// Reads a file in either format (told apart by its first bytes).
LoadedArrays LoadNDArrays(const std::string& path);

// The same, in memory (network transfer, tests). `source` names the bytes in
// error messages.
std::string SaveNDArraysToString(const std::vector<NDArray>& arrays,
                                 const std::vector<std::string>& names = {},
                                 Format fmt = Format::kTessera);
LoadedArrays LoadNDArraysFromString(std::string_view bytes, std::string_view source = "<memory>");

}  // namespace tessera
