// MXNet's reshape codes resolved against a shape: the rule of the reshape
// op and of NDArray::Reshape with codes, kept with the other inference helpers.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/shape.h"

namespace tessera {

// 0 copies a dimension, -1 infers one, -2 copies the rest, -3 merges two, -4
// splits one into the next two values (one may be -1); with `reverse` the
// codes are matched from the right. An error names `op`, the shape and codes.
Shape InferReshape(const Shape& src, const std::vector<int64_t>& spec, bool reverse,
                   const char* op = "reshape");

}  // namespace tessera
