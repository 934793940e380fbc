#include "engine/io/record_index.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "engine/base/error.h"
#include "engine/base/regular_file.h"
#include "engine/io/recordio.h"

namespace tessera::io {
namespace {

// A whole number from the whole of `text`; false when it is not one.
bool ParseU64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// One "key<TAB>offset" line (a trailing '\r' allowed) into *ref.
void ParseIndexLine(std::string_view line, const std::string& path, size_t line_no,
                    uint64_t rec_bytes, std::string_view what, RecordRef* ref) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t tab = line.find('\t');
  const bool ok = tab != std::string_view::npos && ParseU64(line.substr(0, tab), &ref->key) &&
                  ParseU64(line.substr(tab + 1), &ref->offset);
  TS_CHECK(ok) << what << ": " << path << " line " << line_no
               << ": expected 'key<TAB>offset' with whole numbers, got '" << line.substr(0, 60)
               << "'";
  TS_CHECK(ref->offset < rec_bytes)
      << what << ": " << path << " line " << line_no << ": offset " << ref->offset
      << " is past the end of the record file (" << rec_bytes << " bytes)";
  TS_CHECK(ref->offset % 4 == 0) << what << ": " << path << " line " << line_no << ": offset "
                                 << ref->offset << " is not the start of a record (records "
                                 << "start at multiples of 4)";
}

}  // namespace

std::vector<RecordRef> ReadRecordIndex(const std::string& idx_path, uint64_t rec_bytes,
                                       std::string_view what) {
  CheckRegularFile(idx_path, what);
  std::ifstream in(idx_path, std::ios::binary);
  TS_CHECK(in) << what << ": cannot open the index " << idx_path;
  std::vector<RecordRef> refs;
  std::unordered_set<uint64_t> keys;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty() || line == "\r") continue;
    RecordRef ref;
    ParseIndexLine(line, idx_path, line_no, rec_bytes, what, &ref);
    TS_CHECK(keys.insert(ref.key).second) << what << ": " << idx_path << " line " << line_no
                                          << ": key " << ref.key << " is given twice";
    refs.push_back(ref);
  }
  TS_CHECK(!in.bad()) << what << ": cannot read the index " << idx_path;
  std::sort(refs.begin(), refs.end(),
            [](const RecordRef& a, const RecordRef& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < refs.size(); ++i)
    TS_CHECK(refs[i].offset != refs[i - 1].offset)
        << what << ": " << idx_path << ": keys " << refs[i - 1].key << " and " << refs[i].key
        << " both point at offset " << refs[i].offset;
  return refs;
}

std::vector<RecordRef> ScanRecordOffsets(const std::string& rec_path, std::string_view what) {
  RecordReader reader(rec_path, what);
  std::vector<RecordRef> refs;
  std::string rec;
  for (;;) {
    const uint64_t at = reader.Tell();
    if (!reader.Next(&rec)) break;
    refs.push_back({at, refs.size()});
  }
  return refs;
}

}  // namespace tessera::io
