// IDX files, the format of MNIST and Fashion-MNIST: a big-endian header
// (two zero bytes, a type code, the number of dimensions, then each
// dimension as a uint32) followed by the elements. Only unsigned bytes (type
// 0x08), the type of every MNIST file, are read.
//
//   IdxData images = ReadIdxFile("train-images-idx3-ubyte.gz", "MNISTIter");
//   // images.dims == {60000, 28, 28}, images.bytes.size() == 47040000
//
// The header's sizes are never trusted: the element count is checked for
// overflow, and the data is read in pieces that grow with what the file
// really holds, so a 157 KB file whose header claims 2000x1000x1000 bytes
// fails as truncated after reading its 157 KB, without reserving 2 GB.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::io {

struct IdxData {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // prod(dims) elements, row-major
};

// Reads up to n bytes into buf and returns how many; fewer only at the end.
using ReadFn = std::function<size_t(void* buf, size_t n)>;

// Parses an IDX stream of `want_ndim` dimensions (0: any number). `source`
// names it in errors ("<who>: <source> is truncated: 1024 of 47040000 data
// bytes"); `who` is the calling function ("MNISTIter"). Errors are
// tessera::Error.
IdxData ReadIdx(const ReadFn& read, int want_ndim, std::string_view source, std::string_view who);

// ReadIdx of a file, gzip'd or plain (zlib reads both). The path must name
// a regular file: a FIFO or device would block or never end.
IdxData ReadIdxFile(const std::string& path, int want_ndim, std::string_view who);

}  // namespace tessera::io
