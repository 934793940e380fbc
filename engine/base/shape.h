// Shape: the dimensions of an array, at most kMaxNdim of them, stored inline
// so a Shape copies like a small struct and can be passed to CUDA kernels.
//
// As in MXNet's graph code, ndim() == 0 means "shape unknown" and a dimension
// of 0 means "this dimension unknown"; a scalar is the shape (1). Shape
// inference fills unknowns in from known shapes (Assign).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/base/host_device.h"

namespace tessera {

class Shape {
 public:
  static constexpr int kMaxNdim = 10;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { Assign(dims.begin(), dims.end()); }
  explicit Shape(const std::vector<int64_t>& dims) { Assign(dims.begin(), dims.end()); }
  template <typename It>
  Shape(It first, It last) {
    Assign(first, last);
  }
  // ndim dimensions, each `fill` (0: unknown).
  static Shape Filled(int ndim, int64_t fill = 0);

  TS_XINLINE int ndim() const { return ndim_; }
  TS_XINLINE int64_t operator[](int i) const { return dims_[i]; }
  TS_XINLINE int64_t& operator[](int i) { return dims_[i]; }
  const int64_t* begin() const { return dims_; }
  const int64_t* end() const { return dims_ + ndim_; }
  int64_t* begin() { return dims_; }
  int64_t* end() { return dims_ + ndim_; }
  const int64_t* data() const { return dims_; }
  int64_t back() const { return dims_[ndim_ - 1]; }

  // Number of elements (1 for ndim 0); meaningful only when known(). Not
  // checked for overflow, so it stays a few multiplies on the hot path:
  // every array is sized once, through ArrayBytes (array_bytes.h), when it is
  // made, and a Size() that would wrap never gets that far.
  TS_XINLINE int64_t Size() const {
    int64_t n = 1;
    for (int i = 0; i < ndim_; ++i) n *= dims_[i];
    return n;
  }
  // Size(), or -1 when the product does not fit in int64 or a dimension is
  // negative: for code that sizes a shape it did not make.
  int64_t CheckedSize() const;
  // Product of dims [begin, end).
  int64_t ProdRange(int begin, int end) const;
  // ndim > 0 and every dimension known (> 0).
  bool known() const;
  bool is_none() const { return ndim_ == 0; }

  void push_back(int64_t d);
  std::vector<int64_t> ToVector() const { return {begin(), end()}; }

  // "(2,3)", MXNet's spelling, used in every error message; "()" when unknown.
  std::string ToString() const;
  // "2x3", the compact spelling of NDArray footers.
  std::string ToCompactString() const;
  // Parses "(2,3)", "[2, 3]", "2,3", "(2,)" and "None"/"()" (unknown).
  static Shape Parse(std::string_view text);

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.ndim_ != b.ndim_) return false;
    for (int i = 0; i < a.ndim_; ++i)
      if (a.dims_[i] != b.dims_[i]) return false;
    return true;
  }

 private:
  template <typename It>
  void Assign(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }

  int32_t ndim_ = 0;
  int64_t dims_[kMaxNdim] = {};
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Merges `from` into `*to` for shape inference: an unknown shape takes the
// other, unknown (0) dimensions take the other's; a conflict returns false.
bool MergeShape(Shape* to, const Shape& from);

// a * b for a dimension that a shape function computes from others (tile's
// size times its repetitions, reshape's merge of two axes); an error naming
// `op` and both factors when the product does not fit in int64, so a shape
// never wraps to a small or negative size.
int64_t MulDims(int64_t a, int64_t b, std::string_view op);
// a + b likewise (concat's sum of sizes along its axis).
int64_t AddDims(int64_t a, int64_t b, std::string_view op);

// Normalises an axis in [-ndim, ndim) to [0, ndim), or raises an error that
// names `op`, the axis and the shape.
int NormalizeAxis(int64_t axis, int ndim, const char* op);

}  // namespace tessera
