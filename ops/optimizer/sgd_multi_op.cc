// SGD with a float32 master copy of float16 weights (mp_sgd_update,
// mp_sgd_mom_update) and SGD over many weights in one op
// (multi_sgd_update, multi_sgd_mom_update, multi_mp_sgd_update,
// multi_mp_sgd_mom_update): MXNet's MP_SGDKernel and MultiSGDKernel. One
// step serves all six: g = clip(rescale_grad * grad) + wd * w, then with
// momentum mom = momentum * mom - lr * g and w += mom, else w -= lr * g; in
// mixed precision w is the float32 master (updated in place) and the weight
// output its rounding.
#include <string>
#include <vector>

#include "ops/optimizer/sgd_multi_op-inl.h"
#include "ops/optimizer/update_signature.h"

namespace tessera::op {
namespace {

// Dtypes: weight and grad one type (float16, float32, float64; float16 only
// in mixed precision), mom and weight32 float32 in mixed precision, else the
// weight's type.
template <bool kMom, bool kMP>
bool SgdGroupType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  constexpr int s = kStride<kMom, kMP>;
  bool known = true;
  for (size_t w = 0; w < out->size(); ++w) {
    std::vector<DType> wg{(*in)[w * s], (*in)[w * s + 1]}, o{(*out)[w]};
    known = SameTypeAll(attrs, &wg, &o) && known;
    (*in)[w * s] = wg[0];
    (*in)[w * s + 1] = wg[1];
    (*out)[w] = o[0];
    const DType t = wg[0];
    TS_CHECK(t == DType::kUnknown || t == DType::kFloat32 || t == DType::kFloat64 ||
             (kMP && t == DType::kFloat16))
        << OpLabel(attrs) << ": weight " << w << " has dtype " << DTypeName(t)
        << ", supported: " << (kMP ? "float16, float32" : "float32, float64");
    TS_CHECK(!kMP || t != DType::kFloat64)
        << OpLabel(attrs) << ": weight " << w << " is float64; mixed precision keeps a float32 "
        << "master copy of float16 or float32 weights";
    for (int k = 2; k < s; ++k) {
      const DType state = kMP ? DType::kFloat32 : t;
      if (state != DType::kUnknown)
        AssignType(attrs, in, w * s + size_t(k), state, k == 2 && kMom ? "mom" : "weight32");
    }
  }
  return known && AllKnown(*in);
}

// Every input of a weight's group has the weight's shape, as its output.
template <bool kMom, bool kMP>
bool SgdGroupShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  constexpr int s = kStride<kMom, kMP>;
  bool known = true;
  for (size_t w = 0; w < out->size(); ++w) {
    std::vector<Shape> group(in->begin() + long(w * s), in->begin() + long((w + 1) * s));
    std::vector<Shape> o{(*out)[w]};
    known = SameShapeAll(attrs, &group, &o) && known;
    std::copy(group.begin(), group.end(), in->begin() + long(w * s));
    (*out)[w] = o[0];
  }
  return known;
}

template <bool kMom, bool kMP>
std::vector<std::string> GroupNames(size_t weights) {
  std::vector<std::string> names;
  for (size_t w = 0; w < weights; ++w) {
    const std::string k = std::to_string(w);
    names.push_back("weight_" + k);
    names.push_back("grad_" + k);
    if (kMom) names.push_back("mom_" + k);
    if (kMP) names.push_back("weight32_" + k);
  }
  return names;
}

template <bool kMom, bool kMP>
std::vector<uint32_t> GroupStates(size_t weights) {
  constexpr int s = kStride<kMom, kMP>;
  std::vector<uint32_t> idx;
  for (size_t w = 0; w < weights; ++w)
    for (int k = 2; k < s; ++k) idx.push_back(uint32_t(w * s + size_t(k)));
  return idx;
}

constexpr const char* kStateDoc = R"(

The new weights are the outputs (`out=` the weights makes the update in
place, as MXNet's optimizers do); the momentum and float32 master inputs are
updated in place.)";

template <bool kMom, bool kMP>
Op& DefineMultiSgd(Op& op, const char* doc) {
  using P = MultiSGDParam<kMom>;
  auto weights = [](const NodeAttrs& attrs) { return uint32_t(ParamsOf<P>(attrs).num_weights); };
  op.add_argument(
      "data", "NDArray[]",
      kMP ? (kMom ? "weight, grad, mom, weight32 per weight" : "weight, grad, weight32 per weight")
          : (kMom ? "weight, grad, mom per weight" : "weight, grad per weight"));
  op.add_arguments(P::Fields());
  op.set_attr_parser(ParseMultiSGD<kMom>);
  FInferShape shape = SgdGroupShape<kMom, kMP>;
  FInferType type = SgdGroupType<kMom, kMP>;
  FCompute compute = MultiSgdCompute<cpu, kMom, kMP>;
  Op::NumFn inputs = [weights](const NodeAttrs& a) { return weights(a) * kStride<kMom, kMP>; };
  Op::NumFn outputs = weights;
  FListInputNames names = [weights](const NodeAttrs& a) {
    return GroupNames<kMom, kMP>(weights(a));
  };
  FMutateInputs states = [weights](const NodeAttrs& a) {
    return GroupStates<kMom, kMP>(weights(a));
  };
  const std::string text = std::string(doc) + kStateDoc;
  return op.describe(text)
      .set_num_inputs(inputs)
      .set_num_outputs(outputs)
      .set_key_var_num_args("num_weights")
      .set_attr<FListInputNames>("FListInputNames", names)
      .set_attr<FMutateInputs>("FMutateInputs", states)
      .set_attr<FInferShape>("FInferShape", shape)
      .set_attr<FInferType>("FInferType", type)
      .set_attr<FCompute>(kFComputeCPU, compute);
}

[[maybe_unused]] const Op& kMultiSgd = DefineMultiSgd<false, false>(
    Op::Register("multi_sgd_update"),
    R"(SGD on many weights in one op (MXNet's multi_sgd_update): for weight i,
weight_i = weight_i - lrs[i] * (clip(rescale_grad * grad_i) + wds[i] * weight_i).
Inputs weight_0, grad_0, weight_1, grad_1, ...; one output per weight.)");
[[maybe_unused]] const Op& kMultiSgdMom = DefineMultiSgd<true, false>(
    Op::Register("multi_sgd_mom_update"),
    R"(SGD with momentum on many weights in one op (MXNet's multi_sgd_mom_update):
mom_i = momentum * mom_i - lrs[i] * (clip(rescale_grad * grad_i) + wds[i] *
weight_i), weight_i += mom_i. Inputs weight, grad, mom per weight.)");
[[maybe_unused]] const Op& kMultiMpSgd =
    DefineMultiSgd<false, true>(Op::Register("multi_mp_sgd_update"),
                                R"(Mixed-precision SGD on many weights in one op (MXNet's
multi_mp_sgd_update): each step on a float32 master copy (weight32, updated
in place), the float16 weight its rounding. Inputs weight, grad, weight32 per
weight.)");
[[maybe_unused]] const Op& kMultiMpSgdMom = DefineMultiSgd<true, true>(
    Op::Register("multi_mp_sgd_mom_update"),
    R"(Mixed-precision SGD with momentum on many weights in one op (MXNet's
multi_mp_sgd_mom_update): momentum and master copy in float32, both updated
in place. Inputs weight, grad, mom, weight32 per weight.)");

// mp_sgd_update and mp_sgd_mom_update: one weight's group, its float32
// states updated in place and the rounded weight its output.
template <bool kMom>
Op& DefineMpSgd(Op& op, const char* doc) {
  const UpdateInput weight{"weight", "Weight (float16 or float32)"}, grad{"grad", "Gradient"},
      weight32{"weight32", "Float32 master copy of the weight"};
  if constexpr (kMom)
    UpdateSignature<SGDMomParam>(op, {weight, grad, {"mom", "Momentum (float32)"}, weight32},
                                 {2, 3});
  else
    UpdateSignature<SGDParam>(op, {weight, grad, weight32}, {2});
  FInferShape shape = SgdGroupShape<kMom, true>;
  FInferType type = SgdGroupType<kMom, true>;
  FCompute compute = MPSgdCompute<cpu, kMom>;
  return op.describe(std::string(doc) + kStateDoc)
      .set_attr<FInferShape>("FInferShape", shape)
      .set_attr<FInferType>("FInferType", type)
      .set_attr<FInplaceOption>("FInplaceOption", InplaceWeight)
      .set_attr<FCompute>(kFComputeCPU, compute);
}

[[maybe_unused]] const Op& kMpSgd =
    DefineMpSgd<false>(Op::Register("mp_sgd_update"),
                       R"(Mixed-precision SGD (MXNet's mp_sgd_update): the step
w32 = w32 - lr * (clip(rescale_grad * grad) + wd * w32) runs on the float32
master copy weight32 (updated in place); the output is its rounding to the
weight's dtype (float16 or float32).)");
[[maybe_unused]] const Op& kMpSgdMom =
    DefineMpSgd<true>(Op::Register("mp_sgd_mom_update"),
                      R"(Mixed-precision SGD with momentum (MXNet's
mp_sgd_mom_update): mom = momentum * mom - lr * (clip(rescale_grad * grad) +
wd * w32), w32 += mom, on float32 momentum and master copy (both updated in
place); the output is the master's rounding to the weight's dtype.)");

}  // namespace

}  // namespace tessera::op
