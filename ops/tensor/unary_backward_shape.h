// Shape inference for the backward op of a one-input op, from the forward
// op's own shape function.
#pragma once

#include <utility>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op_attr_types.h"

namespace tessera::op {

// The FInferShape of a backward op with inputs (output gradient, forward
// input) and one output, that input's gradient: `forward` run on the pair
// checks the forward input as the forward op does and gives the output
// gradient's shape, so a mismatched pair is an error naming the output
// gradient. `grad` names the output in errors.
inline FInferShape UnaryBackwardShape(FInferShape forward, const char* grad = "gradient") {
  return [forward = std::move(forward), grad](const NodeAttrs& attrs, std::vector<Shape>* in,
                                              std::vector<Shape>* out) {
    std::vector<Shape> fin{(*in)[1]}, fout{(*in)[0]};
    if (!forward(attrs, &fin, &fout)) return false;
    AssignShape(attrs, in, 0, fout[0], "output gradient");
    AssignShape(attrs, out, 0, fin[0], grad);
    return true;
  };
}

}  // namespace tessera::op
