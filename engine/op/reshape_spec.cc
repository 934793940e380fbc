#include "engine/op/reshape_spec.h"

#include <algorithm>
#include <string>

#include "engine/base/error.h"

namespace tessera {

Shape InferReshape(const Shape& src_in, const std::vector<int64_t>& spec_in, bool reverse,
                   const char* op) {
  std::vector<int64_t> src = src_in.ToVector(), spec = spec_in;
  if (reverse) {
    std::reverse(src.begin(), src.end());
    std::reverse(spec.begin(), spec.end());
  }
  auto fail = [&](const std::string& why) {
    std::string s = "(";
    for (size_t i = 0; i < spec_in.size(); ++i) s += (i ? "," : "") + std::to_string(spec_in[i]);
    TS_THROW << op << ": cannot reshape " << src_in << " to " << s << ")"
             << (reverse ? " (reverse)" : "") << ": " << why;
  };
  std::vector<int64_t> out;
  int infer_at = -1;
  size_t si = 0;  // next source dimension
  for (size_t i = 0; i < spec.size(); ++i) {
    const int64_t c = spec[i];
    if (c > 0) {
      out.push_back(c);
      ++si;
    } else if (c == 0) {
      if (si >= src.size()) fail("0 copies a dimension the source does not have");
      out.push_back(src[si++]);
    } else if (c == -1) {
      if (infer_at >= 0) fail("more than one -1");
      infer_at = static_cast<int>(out.size());
      out.push_back(1);
      ++si;
    } else if (c == -2) {
      while (si < src.size()) out.push_back(src[si++]);
    } else if (c == -3) {
      if (si + 1 >= src.size()) fail("-3 needs two source dimensions to merge");
      out.push_back(MulDims(src[si], src[si + 1], op));
      si += 2;
    } else if (c == -4) {
      if (i + 2 >= spec.size()) fail("-4 must be followed by two values");
      if (si >= src.size()) fail("-4 splits a dimension the source does not have");
      int64_t d = src[si++], a = spec[i + 1], b = spec[i + 2];
      if ((a == -1 && b == -1) || a == 0 || b == 0 || a < -1 || b < -1)
        fail("the two values after -4 must be positive, one of them may be -1");
      if (a == -1) a = d / b;
      if (b == -1) b = d / a;
      int64_t ab = 0;
      if (__builtin_mul_overflow(a, b, &ab) || ab != d)
        fail("-4 split sizes do not multiply to " + std::to_string(d));
      out.push_back(a);
      out.push_back(b);
      i += 2;
    } else {
      fail("unknown code " + std::to_string(c));
    }
  }
  // Every product is checked: the codes and sizes come from users and files.
  const int64_t total = src_in.CheckedSize();
  if (total < 0) fail("the source has more elements than 64 bits count");
  if (infer_at >= 0) {
    int64_t known = 1;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != infer_at && __builtin_mul_overflow(known, out[i], &known))
        fail("the result has more elements than 64 bits count");
    if (known == 0 || total % known != 0) fail("the size does not divide evenly");
    out[infer_at] = total / known;
  }
  if (reverse) std::reverse(out.begin(), out.end());
  if (out.size() > static_cast<size_t>(Shape::kMaxNdim))
    fail("the result has more than " + std::to_string(Shape::kMaxNdim) + " dimensions");
  Shape result(out);
  if (result.CheckedSize() != total)
    fail(result.CheckedSize() < 0 ? std::string("the result has more elements than 64 bits count")
                                  : "the result has " + std::to_string(result.Size()) +
                                        " elements, the source " + std::to_string(total));
  return result;
}

}  // namespace tessera
