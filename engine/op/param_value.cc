#include "engine/op/param_value.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tessera::op {
namespace {

std::string_view Trim(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  return v;
}

template <typename T>
bool ParseInteger(std::string_view s, T* out) {
  s = Trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (!s.empty() && (s.back() == 'L' || s.back() == 'l')) s.remove_suffix(1);  // Python 2 longs
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

template <typename T>
bool ParseReal(std::string_view s, T* out) {
  s = Trim(s);
  std::string buf(s);
  if (buf.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(buf.c_str(), &end);
  if (end != buf.c_str() + buf.size()) return false;
  *out = static_cast<T>(v);
  return true;
}

// "(1, 2)", "[1,2]", "1,2", "1", "(1,)", "()".
template <typename T, typename F>
bool ParseTuple(std::string_view s, std::vector<T>* out, F parse_item) {
  s = Trim(s);
  out->clear();
  if (!s.empty() &&
      ((s.front() == '(' && s.back() == ')') || (s.front() == '[' && s.back() == ']')))
    s = s.substr(1, s.size() - 2);
  while (!(s = Trim(s)).empty()) {
    const size_t comma = s.find(',');
    T v{};
    if (!parse_item(s.substr(0, comma), &v)) return false;
    out->push_back(v);
    if (comma == std::string_view::npos) break;
    s = s.substr(comma + 1);
  }
  return true;
}

// The number of significant digits of the shortest decimal that reads back
// as `v` (nonzero and finite), from to_chars's shortest round trip.
template <typename T>
int ShortestDigits(T v) {
  char b[40];
  const auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::scientific);
  int digits = 0;
  for (const char* c = b; c != r.ptr && *c != 'e'; ++c) digits += *c >= '0' && *c <= '9';
  return digits;
}

template <typename T>
std::string FormatReal(T v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  // The shortest %g spelling that reads back the same value. No precision
  // below the shortest round trip's digit count can (nothing that short
  // reads back), so the search starts there and nearly always ends there:
  // every real parameter's default is formatted at start-up.
  // to_chars's general format with a precision is printf's %.*g.
  char b[40];
  int prec = v == 0 ? 1 : std::max(1, ShortestDigits(v));
  for (;; ++prec) {
    const auto r =
        std::to_chars(b, b + sizeof b, static_cast<double>(v), std::chars_format::general, prec);
    double back = 0;
    std::from_chars(b, r.ptr, back);
    if (static_cast<T>(back) == v || prec == 17) return std::string(b, r.ptr);
  }
}

}  // namespace

bool ParseValue(std::string_view s, bool* out) {
  s = Trim(s);
  if (s == "1" || s == "true" || s == "True" || s == "TRUE") return *out = true, true;
  if (s == "0" || s == "false" || s == "False" || s == "FALSE") return *out = false, true;
  return false;
}
bool ParseValue(std::string_view s, int* out) {
  return ParseInteger(s, out);
}
bool ParseValue(std::string_view s, int64_t* out) {
  return ParseInteger(s, out);
}
bool ParseValue(std::string_view s, float* out) {
  return ParseReal(s, out);
}
bool ParseValue(std::string_view s, double* out) {
  return ParseReal(s, out);
}
bool ParseValue(std::string_view s, std::string* out) {
  *out = std::string(s);
  return true;
}
bool ParseValue(std::string_view s, DType* out) {
  s = Trim(s);
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"')) s = s.substr(1, s.size() - 2);
  if (s.starts_with("np.") || s.starts_with("numpy.")) s = s.substr(s.find('.') + 1);
  try {
    *out = DTypeFromName(s);
    return true;
  } catch (const Error&) {
    return false;
  }
}
bool ParseValue(std::string_view s, Shape* out) {
  std::vector<int64_t> dims;
  if (!ParseTuple(s, &dims, [](std::string_view v, int64_t* o) { return ParseInteger(v, o); }))
    return false;
  if (dims.size() > Shape::kMaxNdim) return false;
  for (int64_t d : dims)
    if (d < 0) return false;
  *out = Shape(dims);
  return true;
}
bool ParseValue(std::string_view s, std::vector<int64_t>* out) {
  return Trim(s) != "None" &&
         ParseTuple(s, out, [](std::string_view v, int64_t* o) { return ParseInteger(v, o); });
}
bool ParseValue(std::string_view s, std::vector<double>* out) {
  return Trim(s) != "None" &&
         ParseTuple(s, out, [](std::string_view v, double* o) { return ParseReal(v, o); });
}

std::string FormatValue(bool v) {
  return v ? "True" : "False";
}
std::string FormatValue(int v) {
  return std::to_string(v);
}
std::string FormatValue(int64_t v) {
  return std::to_string(v);
}
std::string FormatValue(float v) {
  return FormatReal(v);
}
std::string FormatValue(double v) {
  return FormatReal(v);
}
std::string FormatValue(const std::string& v) {
  return v;
}
std::string FormatValue(DType v) {
  return DTypeName(v);
}
std::string FormatValue(const Shape& v) {
  return v.ToString();
}
std::string FormatValue(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}
std::string FormatValue(const std::vector<double>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + FormatReal<double>(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace tessera::op
