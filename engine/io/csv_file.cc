#include "engine/io/csv_file.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/base/error.h"
#include "engine/base/regular_file.h"

namespace tessera::io {

namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// A field for an error message, cut short: a damaged file can hold anything.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 40)) out += (c >= 32 && c < 127) ? c : '?';
  return out + (s.size() > 40 ? "...\"" : "\"");
}

}  // namespace

CsvRows ParseCsv(std::string_view text, std::string_view source, std::string_view who) {
  CsvRows rows;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_no;
    if (Trim(line).empty()) continue;
    size_t n = 0;
    while (!line.empty()) {
      const size_t comma = line.find(',');
      const std::string_view raw = line.substr(0, comma);
      line = comma == std::string_view::npos ? std::string_view() : line.substr(comma + 1);
      if (raw.empty()) continue;
      std::string_view field = Trim(raw);
      // from_chars takes no leading '+', which strtod (and Lua's tonumber) allow.
      if (field.size() > 1 && field[0] == '+' && field[1] != '-') field.remove_prefix(1);
      double v = 0;
      const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      // Out of range is still a number: from_chars leaves v alone, strtod
      // gives +-inf or 0; take strtod's answer.
      if (ec == std::errc::result_out_of_range && end == field.data() + field.size()) {
        v = std::strtod(std::string(field).c_str(), nullptr);
      } else {
        TS_CHECK(ec == std::errc() && end == field.data() + field.size() && !field.empty())
            << who << ": " << source << ":" << line_no << ": " << Quote(raw) << " is not a number";
      }
      rows.values.push_back(v);
      ++n;
    }
    rows.row_sizes.push_back(n);
  }
  return rows;
}

CsvRows ReadCsvFile(const std::string& path, std::string_view who) {
  CheckRegularFile(path, who);  // a FIFO would block the stream's open for ever
  std::ifstream f(path, std::ios::binary);
  TS_CHECK(f) << who << ": cannot open " << path;
  std::ostringstream buf;
  buf << f.rdbuf();
  TS_CHECK(!f.bad()) << who << ": error reading " << path;
  return ParseCsv(buf.str(), path, who);
}

}  // namespace tessera::io
