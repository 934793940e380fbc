#include "engine/ndarray/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessera {
namespace {

// How every number of one printout is written.
struct NumberStyle {
  enum Kind { kInteger, kFixed, kScientific } kind = kFixed;
  double scale = 1;  // values are divided by this; a header shows it
  int precision = 4;
  int width = 1;

  std::string Format(double v) const {
    char buf[64];
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    switch (kind) {
      case kInteger:
        std::snprintf(buf, sizeof buf, "%.0f", v);
        break;
      case kFixed:
        std::snprintf(buf, sizeof buf, "%.*f", precision, v / scale);
        break;
      case kScientific:
        std::snprintf(buf, sizeof buf, "%.*e", precision, v);
        break;
    }
    return buf;
  }
};

NumberStyle ChooseStyle(const std::vector<double>& shown, DType dtype, int precision) {
  NumberStyle st;
  st.precision = precision;
  double max_abs = 0, min_abs = INFINITY;
  bool integral = true;
  for (double v : shown) {
    if (!std::isfinite(v)) continue;
    const double a = std::fabs(v);
    max_abs = std::max(max_abs, a);
    if (a > 0) min_abs = std::min(min_abs, a);
    if (v != std::floor(v)) integral = false;
  }
  if (!IsFloatingPoint(dtype) || (integral && max_abs < 1e9)) {
    st.kind = NumberStyle::kInteger;
  } else if (max_abs > 0) {
    const int e_max = static_cast<int>(std::floor(std::log10(max_abs)));
    const int e_min =
        std::isfinite(min_abs) ? static_cast<int>(std::floor(std::log10(min_abs))) : e_max;
    if (e_max - e_min > 4) {
      st.kind = NumberStyle::kScientific;  // too wide a range for one scale
    } else if (e_max > 4 || e_max < -2) {
      st.scale = std::pow(10.0, e_max);  // a common factor in the header
    }
  }
  for (double v : shown) st.width = std::max<int>(st.width, static_cast<int>(st.Format(v).size()));
  return st;
}

// Indices of one axis that are printed: all, or the ends around a gap (-1).
std::vector<int64_t> ShownIndices(int64_t n, bool summarise, int64_t edge) {
  std::vector<int64_t> idx;
  if (!summarise || n <= 2 * edge) {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  for (int64_t i = 0; i < edge; ++i) idx.push_back(i);
  idx.push_back(-1);
  for (int64_t i = n - edge; i < n; ++i) idx.push_back(i);
  return idx;
}

class Printer {
 public:
  Printer(const std::vector<double>& v, const Shape& s, DType dtype, const FormatOptions& opt)
      : values_(v), shape_(s), opt_(opt), summarise_(s.Size() > opt.threshold) {
    // The style comes from the values actually shown.
    std::vector<double> shown;
    CollectShown(0, 0, &shown);
    style_ = ChooseStyle(shown, dtype, opt.precision);
  }

  std::string Print() {
    std::string out;
    if (style_.scale != 1) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0e *\n", style_.scale);
      out += buf;
    }
    const int nd = shape_.ndim();
    if (nd == 1) {
      for (int64_t i : ShownIndices(shape_[0], summarise_, opt_.edge_items))
        out += i < 0 ? Pad("...") + "\n" : Pad(style_.Format(values_[i])) + "\n";
      return out;
    }
    std::vector<int64_t> lead(nd - 2, 0);
    PrintSlices(0, 0, &lead, &out);
    return out;
  }

 private:
  std::string Pad(const std::string& s) const {
    return std::string(std::max<int>(0, style_.width - static_cast<int>(s.size())), ' ') + s;
  }

  void CollectShown(int axis, int64_t offset, std::vector<double>* out) const {
    if (axis == shape_.ndim()) {
      out->push_back(values_[offset]);
      return;
    }
    const int64_t stride = shape_.ProdRange(axis + 1, shape_.ndim());
    for (int64_t i : ShownIndices(shape_[axis], summarise_, opt_.edge_items))
      if (i >= 0) CollectShown(axis + 1, offset + i * stride, out);
  }

  void PrintSlices(int axis, int64_t offset, std::vector<int64_t>* lead, std::string* out) const {
    const int nd = shape_.ndim();
    if (axis == nd - 2) {
      if (nd > 2) {
        std::string head = "(";
        for (int64_t i : *lead) head += std::to_string(i + 1) + ",";
        *out += head + ".,.) =\n";
      }
      PrintMatrix(offset, out);
      if (nd > 2) *out += "\n";
      return;
    }
    const int64_t stride = shape_.ProdRange(axis + 1, nd);
    for (int64_t i : ShownIndices(shape_[axis], summarise_, opt_.edge_items)) {
      if (i < 0) {
        *out += "...\n\n";
        continue;
      }
      (*lead)[axis] = i;
      PrintSlices(axis + 1, offset + i * stride, lead, out);
    }
  }

  void PrintMatrix(int64_t offset, std::string* out) const {
    const int nd = shape_.ndim();
    const int64_t rows = shape_[nd - 2], cols = shape_[nd - 1];
    const auto ri = ShownIndices(rows, summarise_, opt_.edge_items);
    const auto ci = ShownIndices(cols, summarise_, opt_.edge_items);
    // Column blocks so that no line exceeds the width.
    const size_t per_line =
        std::max<size_t>(1, static_cast<size_t>(opt_.line_width) / (style_.width + 1));
    for (size_t c0 = 0; c0 < ci.size(); c0 += per_line) {
      const size_t c1 = std::min(ci.size(), c0 + per_line);
      if (ci.size() > per_line) {
        const int64_t first = ci[c0] < 0 ? ci[c0 + 1] : ci[c0];
        const int64_t last = ci[c1 - 1] < 0 ? ci[c1 - 2] : ci[c1 - 1];
        *out += "Columns " + std::to_string(first + 1) + " to " + std::to_string(last + 1) + "\n";
      }
      for (int64_t r : ri) {
        std::string line;
        for (size_t c = c0; c < c1; ++c) {
          line += c > c0 ? " " : "";
          if (r < 0)
            line += Pad(ci[c] < 0 ? "..." : ":");
          else
            line += Pad(ci[c] < 0 ? "..." : style_.Format(values_[offset + r * cols + ci[c]]));
        }
        *out += line + "\n";
      }
      if (c1 < ci.size()) *out += "\n";
    }
  }

  const std::vector<double>& values_;
  const Shape& shape_;
  const FormatOptions& opt_;
  const bool summarise_;
  NumberStyle style_;
};

}  // namespace

std::string FormatValues(const std::vector<double>& values, const Shape& shape, DType dtype,
                         const FormatOptions& opt) {
  TS_CHECK(static_cast<int64_t>(values.size()) == shape.Size())
      << "format: " << values.size() << " values for shape " << shape;
  if (shape.ndim() == 0) return "";
  return Printer(values, shape, dtype, opt).Print();
}

std::string FormatNDArray(const NDArray& a, const FormatOptions& opt) {
  if (a.is_none()) return a.Footer() + "\n";
  return FormatValues(a.ToVector(), a.shape(), a.dtype(), opt) + a.Footer() + "\n";
}

}  // namespace tessera
