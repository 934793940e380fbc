#include "engine/base/shape.h"

#include <cctype>
#include <charconv>
#include <ostream>

namespace tessera {

Shape Shape::Filled(int ndim, int64_t fill) {
  Shape s;
  for (int i = 0; i < ndim; ++i) s.push_back(fill);
  return s;
}

int64_t Shape::ProdRange(int begin, int end) const {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= dims_[i];
  return n;
}

int64_t Shape::CheckedSize() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i)
    if (dims_[i] < 0 || __builtin_mul_overflow(n, dims_[i], &n)) return -1;
  return n;
}

bool Shape::known() const {
  if (ndim_ == 0) return false;
  for (int i = 0; i < ndim_; ++i)
    if (dims_[i] <= 0) return false;
  return true;
}

void Shape::push_back(int64_t d) {
  TS_CHECK(ndim_ < kMaxNdim) << "a shape has at most " << kMaxNdim << " dimensions";
  TS_CHECK(d >= 0) << "shape dimension " << ndim_ << " is negative (" << d << ")";
  dims_[ndim_++] = d;
}

std::string Shape::ToString() const {
  std::string s = "(";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  if (ndim_ == 1) s += ",";
  return s + ")";
}

std::string Shape::ToCompactString() const {
  std::string s;
  for (int i = 0; i < ndim_; ++i) s += (i ? "x" : "") + std::to_string(dims_[i]);
  return s;
}

Shape Shape::Parse(std::string_view text) {
  Shape s;
  const std::string_view orig = text;
  auto trim = [](std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  };
  text = trim(text);
  if (text == "None" || text.empty()) return s;
  if ((text.front() == '(' && text.back() == ')') || (text.front() == '[' && text.back() == ']'))
    text = text.substr(1, text.size() - 2);
  while (!(text = trim(text)).empty()) {
    size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    int64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    TS_CHECK(ec == std::errc() && p == item.data() + item.size() && !item.empty() && v >= 0)
        << "invalid shape '" << orig
        << "' (expected a tuple of non-negative integers such as (2,3))";
    s.push_back(v);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.ToString();
}

bool MergeShape(Shape* to, const Shape& from) {
  if (from.ndim() == 0) return true;
  if (to->ndim() == 0) {
    *to = from;
    return true;
  }
  if (to->ndim() != from.ndim()) return false;
  for (int i = 0; i < from.ndim(); ++i) {
    if ((*to)[i] == 0)
      (*to)[i] = from[i];
    else if (from[i] != 0 && from[i] != (*to)[i])
      return false;
  }
  return true;
}

int64_t MulDims(int64_t a, int64_t b, std::string_view op) {
  int64_t r = 0;
  TS_CHECK(!__builtin_mul_overflow(a, b, &r))
      << op << ": the size " << a << " x " << b << " does not fit in 64 bits";
  return r;
}

int64_t AddDims(int64_t a, int64_t b, std::string_view op) {
  int64_t r = 0;
  TS_CHECK(!__builtin_add_overflow(a, b, &r))
      << op << ": the size " << a << " + " << b << " does not fit in 64 bits";
  return r;
}

int NormalizeAxis(int64_t axis, int ndim, const char* op) {
  TS_CHECK(axis >= -ndim && axis < ndim)
      << op << ": axis " << axis << " is out of range for an array of " << ndim << " dimension"
      << (ndim == 1 ? "" : "s") << " (valid: " << -ndim << " to " << ndim - 1 << ")";
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

}  // namespace tessera
