// FullyConnected: out = data * weight^T + bias, MXNet's layer. The GEMM runs
// directly on the blobs (oneDNN for float32, OpenBLAS for float64, the
// portable kernel for 16-bit floats); the bias is added by an OpenMP loop.
#include <sstream>
#include <string>

#include "ops/nn/fully_connected-inl.h"
#include "ops/nn/gemm_steps.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

// The CPU steps: gemm_steps.h's GEMM and column sums, and OpenMP loops for
// the bias.
template <>
struct FcSteps<cpu> : GemmSteps<cpu, FcSteps<cpu>> {
  template <typename T>
  static void AddBias(const RunContext& rctx, T* out, const T* bias, int64_t rows, int64_t n) {
    [[maybe_unused]] const int threads = CpuThreads(rctx, rows * n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (int64_t r = 0; r < rows; ++r) {
      T* row = out + r * n;
      for (int64_t j = 0; j < n; ++j)
        row[j] = static_cast<T>(static_cast<AccType<T>>(row[j]) + static_cast<AccType<T>>(bias[j]));
    }
  }
};

namespace {

uint32_t FcNumInputs(const NodeAttrs& attrs) {
  return FcParams(attrs).no_bias ? 2 : 3;
}

std::vector<std::string> FcInputNames(const NodeAttrs& attrs) {
  if (FcParams(attrs).no_bias) return {"data", "weight"};
  return {"data", "weight", "bias"};
}

bool FcShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = FcParams(attrs);
  TS_CHECK(in->size() == FcNumInputs(attrs))
      << OpLabel(attrs) << ": expects " << FcNumInputs(attrs) << " inputs (data, weight"
      << (p.no_bias ? "" : ", bias") << "), got " << in->size();
  const int64_t h = p.num_hidden;
  const std::string hidden = "num_hidden=" + std::to_string(h);
  if (!p.no_bias) AssignNamed(attrs, in, 2, Shape{h}, "bias", ("(num_hidden,), " + hidden).c_str());
  const Shape& oshape = (*out)[0];
  // Unknown data: with flatten=False the output gives its rank and leading axes.
  if ((*in)[0].ndim() == 0 && oshape.ndim() > 0 && !p.flatten) {
    Shape d = oshape;
    d[d.ndim() - 1] = (*in)[1].ndim() == 2 ? (*in)[1][1] : 0;
    (*in)[0] = d;
  }
  if ((*in)[0].ndim() == 0) {
    AssignNamed(attrs, in, 1, Shape{h, 0}, "weight",
                ("(num_hidden, in_features), " + hidden).c_str());
    return false;
  }
  // The batch size (flatten=False: every leading axis) backwards from the output.
  if (oshape.ndim() > 0) {
    const Shape& d = (*in)[0];
    TS_CHECK(oshape.ndim() == (p.flatten ? 2 : d.ndim()))
        << OpLabel(attrs) << ": output has shape " << oshape << ", incompatible with data " << d
        << (p.flatten ? " (flatten=True gives (batch, num_hidden))" : "");
    Shape want = Shape::Filled(d.ndim(), 0);
    want[0] = oshape[0];
    if (!p.flatten)
      for (int i = 0; i + 1 < d.ndim(); ++i) want[i] = oshape[i];
    AssignNamed(attrs, in, 0, want, "data", "the output's batch size");
  }
  const Shape& d = (*in)[0];
  // in_features from the data, or back into the data from the weight.
  int64_t features = 0;
  if (p.flatten) {
    const Shape tail = d.ndim() > 1 ? Shape(d.begin() + 1, d.end()) : Shape{1};
    if (tail.known()) features = tail.Size();
  } else {
    features = d[d.ndim() - 1];
  }
  if (features > 0) {
    AssignNamed(attrs, in, 1, Shape{h, features}, "weight",
                ("(num_hidden, in_features), " + hidden +
                 ", in_features=" + std::to_string(features) + " from data " + d.ToString())
                    .c_str());
  } else {
    AssignNamed(attrs, in, 1, Shape{h, 0}, "weight",
                ("(num_hidden, in_features), " + hidden).c_str());
    const Shape& w = (*in)[1];
    const int last = d.ndim() - 1;
    // One unknown feature axis can be solved from the weight.
    if (w[1] > 0 && last >= (p.flatten ? 1 : 0)) {
      int unknown = 0;
      int64_t known = 1;
      for (int i = p.flatten ? 1 : last; i <= last; ++i) {
        if (d[i] == 0)
          ++unknown;
        else
          known *= d[i];
      }
      if (unknown == 1 && w[1] % known == 0) {
        Shape want = d;
        for (int i = p.flatten ? 1 : last; i <= last; ++i)
          if (want[i] == 0) want[i] = w[1] / known;
        AssignNamed(attrs, in, 0, want, "data", "the weight's in_features");
      }
    }
  }
  Shape o;
  if (p.flatten) {
    o = Shape{(*in)[0][0], h};
  } else {
    o = (*in)[0];
    o[o.ndim() - 1] = h;
  }
  AssignNamed(attrs, out, 0, o, "output",
              p.flatten ? "(batch, num_hidden)" : "data's shape with num_hidden last");
  return AllKnown(*in) && AllKnown(*out);
}

bool FcType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  CheckFloatTypes(attrs, *in, *out);
  return ok;
}

std::vector<NodeEntry> FcGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  return MakeGradNode("_backward_FullyConnected", n, {ograds[0], n->inputs[0], n->inputs[1]});
}

bool FcBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  if (out->size() > 2) AssignShape(attrs, out, 2, Shape{FcParams(attrs).num_hidden}, "output");
  return AllKnown(*out);
}

}  // namespace

TS_REGISTER_OP(FullyConnected)
    .describe(R"(Applies a linear transformation: out = data * weight^T + bias.

With flatten=True (the default) data of shape (N, d1, ..., dk) is taken as the
matrix (N, d1*...*dk) and the output has shape (N, num_hidden); with
flatten=False the transformation applies to the last axis, and (d0, ..., dk)
gives (d0, ..., d(k-1), num_hidden). weight has shape (num_hidden,
in_features) and bias (num_hidden,); shape inference fills both in from the
data, and the batch size back from the output. no_bias=True drops the bias
input. float32 runs through oneDNN, float64 through OpenBLAS.

Example: FullyConnected(data=[[1, 2]], weight=[[1, 0], [1, 1]], bias=[0, 1],
num_hidden=2) = [[1, 4]].)")
    .set_num_inputs(FcNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<FullyConnectedParam>)
    .add_argument("data", "NDArray", "Input data.")
    .add_argument("weight", "NDArray", "Weight matrix, (num_hidden, in_features).")
    .add_argument("bias", "NDArray", "Bias, (num_hidden,); absent when no_bias=True.")
    .add_arguments(FullyConnectedParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FcInputNames)
    .set_attr<FInferShape>("FInferShape", FcShape)
    .set_attr<FInferType>("FInferType", FcType)
    .set_attr<FCompute>(kFComputeCPU, FcForward<cpu>)
    .set_attr<FGradient>("FGradient", FcGrad);

TS_REGISTER_OP(_backward_FullyConnected)
    .describe(
        "Gradient of FullyConnected. Inputs: ograd, data, weight; outputs: the gradients "
        "of data, weight and (unless no_bias) bias.")
    .set_num_inputs(3)
    .set_num_outputs(FcNumInputs)
    .set_attr_parser(ParamParser<FullyConnectedParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", FcBackwardShape)
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) { return SameTypeAll(attrs, in, out); })
    .set_attr<FCompute>(kFComputeCPU, FcBackward<cpu>);

}  // namespace tessera::op
