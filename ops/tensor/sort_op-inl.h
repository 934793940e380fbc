// sort, argsort and topk: stable sorts of every row along an axis (or of the
// flattened array). Indices are 0-based positions stored as numbers in the
// index dtype. The gradient of the sorted values scatters the output
// gradient back to the positions the values came from.
#pragma once

#include <optional>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"

namespace tessera::op {

enum TopKReturn { kTopKValue = 0, kTopKIndices = 1, kTopKMask = 2, kTopKBoth = 3 };

struct SortParam : Params<SortParam> {
  std::optional<int> axis = -1;
  bool is_ascend = true;
  static void Declare(ParamDecl<SortParam>& d) {
    d.field("axis", &SortParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to sort along; None sorts the flattened array.");
    d.field("is_ascend", &SortParam::is_ascend)
        .set_default(true)
        .describe("Ascending order (else descending); equal elements keep their order.");
  }
};

struct ArgsortParam : Params<ArgsortParam> {
  std::optional<int> axis = -1;
  bool is_ascend = true;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<ArgsortParam>& d) {
    d.field("axis", &ArgsortParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to sort along; None sorts the flattened array.");
    d.field("is_ascend", &ArgsortParam::is_ascend)
        .set_default(true)
        .describe("Ascending order (else descending); equal elements keep their order.");
    d.field("dtype", &ArgsortParam::dtype)
        .set_default(DType::kFloat32)
        .describe("Element type of the indices.");
  }
};

struct TopKParam : Params<TopKParam> {
  std::optional<int> axis = -1;
  int k = 1;
  int ret_typ = kTopKIndices;
  bool is_ascend = false;
  DType dtype = DType::kFloat32;
  static void Declare(ParamDecl<TopKParam>& d) {
    d.field("axis", &TopKParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis to search along; None searches the flattened array.");
    d.field("k", &TopKParam::k)
        .set_default(1)
        .describe("How many elements to return; k < 1 returns them all (a full sort).");
    d.field("ret_typ", &TopKParam::ret_typ)
        .add_enum("value", kTopKValue)
        .add_enum("indices", kTopKIndices)
        .add_enum("mask", kTopKMask)
        .add_enum("both", kTopKBoth)
        .set_default(kTopKIndices)
        .describe(
            "'value': the k elements; 'indices': their positions; 'mask': an array like the "
            "input with 1 at those positions; 'both': values and indices.");
    d.field("is_ascend", &TopKParam::is_ascend)
        .set_default(false)
        .describe("Return the smallest elements (else the largest).");
    d.field("dtype", &TopKParam::dtype)
        .set_default(DType::kFloat32)
        .describe("Element type of the indices.");
  }
};

// Gradient of sorted values: the axis is all it needs (k is the gradient's size).
struct SortBackwardParam : Params<SortBackwardParam> {
  std::optional<int> axis = -1;
  static void Declare(ParamDecl<SortBackwardParam>& d) {
    d.field("axis", &SortBackwardParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis that was sorted; None: the flattened array.");
  }
};

// What one call of the three ops asks for.
struct SortSpec {
  std::optional<int> axis;
  int k = 0;  // < 1: all
  int ret = kTopKValue;
  bool ascend = true;
  bool hidden_indices = false;  // value output followed by int64 indices the gradient uses
  DType index_dtype = DType::kInt64;
};
SortSpec SortSpecOf(const NodeAttrs& attrs);

}  // namespace tessera::op
