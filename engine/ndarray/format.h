// NDArray as text, in the manner of Torch7: aligned columns with one number
// format chosen from all the values shown, a common scale ("1e-03 *") where
// it makes the numbers readable, `...` for rows and columns left out of large
// arrays, one 2-D slice at a time ("(1,2,.,.) =", 1-based) beyond two
// dimensions, and a footer such as [NDArray float32 2x3 @cpu(0)].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ndarray/ndarray.h"

namespace tessera {

struct FormatOptions {
  int64_t threshold = 1000;  // summarise arrays with more elements than this
  int64_t edge_items = 3;    // items kept at each end of a summarised axis
  int precision = 4;         // digits after the point
  int line_width = 80;       // wider matrices print in column blocks
};

// `values` holds the array's elements in row-major order (as doubles).
std::string FormatValues(const std::vector<double>& values, const Shape& shape, DType dtype,
                         const FormatOptions& opt = {});

// Waits for the array (only it) and formats it, footer included.
std::string FormatNDArray(const NDArray& a, const FormatOptions& opt = {});

}  // namespace tessera
