// Numeric CSV, as mx.io.CSVIter reads it: one row per line, values separated
// by commas; blank lines are skipped, and so are empty fields ("1,,2" is two
// values), as MXNet's reader does. A value is a decimal or scientific number
// with optional surrounding blanks (strtod's spelling, inf and nan
// included); anything else is an error naming the line and the field.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::io {

struct CsvRows {
  std::vector<double> values;     // every row's values, one after another
  std::vector<size_t> row_sizes;  // how many values each row has
};

// `source` names the text in errors: "<who>: <source>:3: "1.5x" is not a number".
CsvRows ParseCsv(std::string_view text, std::string_view source, std::string_view who);

// ParseCsv of the file at `path`, which must be a regular file.
CsvRows ReadCsvFile(const std::string& path, std::string_view who);

}  // namespace tessera::io
