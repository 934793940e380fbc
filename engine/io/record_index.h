// Where the records of a RecordIO file start: from its MXNet `.idx` index
// ("key<TAB>offset" lines, as im2rec writes), or by reading the file through
// when there is none. Iterators that shuffle or shard need these offsets;
// they keep nothing else of the file in memory.
//
//   std::vector<RecordRef> recs = ReadRecordIndex("a.idx", rec_bytes, "ImageRecordIter");
//   std::vector<RecordRef> all = ScanRecordOffsets("a.rec", "ImageRecordIter");
//
// A malformed line, an offset past the end of the .rec or not at a 4-byte
// boundary, and a key given twice are errors naming the file and the line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::io {

struct RecordRef {
  uint64_t offset = 0;  // where the record's first header starts
  uint64_t key = 0;     // the index's key (the scan numbers records from 0)
};

// The index at `idx_path` for a .rec of `rec_bytes` bytes, in file order
// (sorted by offset). Keys must be whole numbers, as im2rec writes them.
std::vector<RecordRef> ReadRecordIndex(const std::string& idx_path, uint64_t rec_bytes,
                                       std::string_view what);

// Every record of `rec_path`, read through once (each checked as
// RecordReader checks it).
std::vector<RecordRef> ScanRecordOffsets(const std::string& rec_path, std::string_view what);

}  // namespace tessera::io
