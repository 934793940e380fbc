// Embedding: rows of a (input_dim, output_dim) weight looked up by integer
// indices held in `data` (0-based, any numeric dtype; clipped into
// [0, input_dim - 1] as MXNet does). The gradient goes to the weight only.
#include <cmath>
#include <optional>
#include <vector>

#include "ops/nn/embedding-inl.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

namespace {

const EmbeddingParam& EmbParams(const NodeAttrs& attrs) {
  return ParamsOf<EmbeddingParam>(attrs);
}

void EmbeddingParser(NodeAttrs* attrs) {
  ParamParser<EmbeddingParam>(attrs);
  TS_CHECK(!EmbParams(*attrs).sparse_grad)
      << "Embedding" << (attrs->name.empty() ? "" : " (node " + attrs->name + ")")
      << ": sparse_grad=True (row-sparse gradients) is not supported";
}

bool EmbeddingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (data, weight), got "
                            << in->size();
  const auto& p = EmbParams(attrs);
  AssignNamed(attrs, in, 1, Shape{p.input_dim, p.output_dim}, "weight", "(input_dim, output_dim)");
  Shape& data = (*in)[0];
  const Shape& o = (*out)[0];
  if (data.ndim() == 0 && o.ndim() > 1) data = Shape(o.begin(), o.end() - 1);
  if (data.ndim() == 0) return false;
  if (o.ndim() > 0) {
    TS_CHECK(o.ndim() == data.ndim() + 1)
        << OpLabel(attrs) << ": output has shape " << o << " but data " << data << " gives rank "
        << data.ndim() + 1;
    AssignNamed(attrs, in, 0, Shape(o.begin(), o.end() - 1), "data", "the output's leading axes");
  }
  Shape os = (*in)[0];
  os.push_back(p.output_dim);
  AssignNamed(attrs, out, 0, os, "output", "data's shape followed by output_dim");
  return AllKnown(*in) && AllKnown(*out);
}

bool EmbeddingType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = EmbParams(attrs);
  TS_CHECK(IsFloatingPoint(p.dtype)) << OpLabel(attrs) << ": dtype " << DTypeName(p.dtype)
                                     << " is not supported (a floating-point type is needed)";
  AssignType(attrs, in, 1, p.dtype, "input");
  AssignType(attrs, out, 0, p.dtype, "output");
  TS_CHECK((*in)[0] != DType::kBool) << OpLabel(attrs) << ": data (indices) has dtype bool";
  return (*in)[0] != DType::kUnknown;
}

void EmbeddingForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = EmbParams(attrs);
  const int64_t n = in[0].Size(), dim = p.output_dim, rows = p.input_dim;
  SwitchNumericDType(
      in[0].dtype(),
      [&](auto itag) {
        using I = typename decltype(itag)::type;
        const I* idx = in[0].dptr<I>();
        SwitchFloatDType(
            out[0].dtype(),
            [&](auto tag) {
              using T = typename decltype(tag)::type;
              const T* w = in[1].dptr<T>();
              T* y = out[0].dptr<T>();
              const bool add = req[0] == kAddTo;
              [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, n * dim);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
              for (int64_t i = 0; i < n; ++i) {
                const T* src = w + ClipIndex(idx[i], rows) * dim;
                T* dst = y + i * dim;
                if (add) {
                  for (int64_t j = 0; j < dim; ++j)
                    dst[j] = static_cast<T>(static_cast<AccType<T>>(dst[j]) +
                                            static_cast<AccType<T>>(src[j]));
                } else {
                  std::copy(src, src + dim, dst);
                }
              }
            },
            "Embedding");
      },
      "Embedding (data)");
}

// Inputs: ograd, data. Outputs: data gradient (zeros), weight gradient.
void EmbeddingBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = EmbParams(attrs);
  const int64_t n = in[1].Size(), dim = p.output_dim, rows = p.input_dim;
  if (req[0] == kWriteTo || req[0] == kWriteInplace)
    SwitchNumericDType(out[0].dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      std::fill(out[0].dptr<I>(), out[0].dptr<I>() + out[0].Size(), I(0));
    });
  if (req[1] == kNullOp) return;
  SwitchNumericDType(
      in[1].dtype(),
      [&](auto itag) {
        using I = typename decltype(itag)::type;
        const I* idx = in[1].dptr<I>();
        SwitchFloatDType(
            in[0].dtype(),
            [&](auto tag) {
              using T = typename decltype(tag)::type;
              using A = AccType<T>;
              const T* g = in[0].dptr<T>();
              T* gw = out[1].dptr<T>();
              if (req[1] != kAddTo) std::fill(gw, gw + rows * dim, T(0));
              // Threads own column blocks, so rows hit twice never race.
              [[maybe_unused]] const int threads =
                  static_cast<int>(std::min<int64_t>(CpuThreads(ctx.run_ctx, n * dim), dim));
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1)
#endif
              {
                const int t = OmpThreadIndex(), nt = OmpThreadCount();
                const int64_t chunk = (dim + nt - 1) / nt;
                const int64_t j0 = std::min<int64_t>(dim, t * chunk);
                const int64_t j1 = std::min<int64_t>(dim, j0 + chunk);
                for (int64_t i = 0; i < n; ++i) {
                  T* dst = gw + ClipIndex(idx[i], rows) * dim;
                  const T* src = g + i * dim;
                  for (int64_t j = j0; j < j1; ++j)
                    dst[j] = static_cast<T>(static_cast<A>(dst[j]) + static_cast<A>(src[j]));
                }
              }
            },
            "_backward_Embedding");
      },
      "_backward_Embedding (data)");
}

std::vector<NodeEntry> EmbeddingGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  return MakeGradNode("_backward_Embedding", n, {ograds[0], n->inputs[0]});
}

}  // namespace

TS_REGISTER_OP(Embedding)
    .describe(R"(Maps integer indices to vectors: row data[i] of the weight, for every
element of data. data holds 0-based indices (any numeric dtype; out-of-range
values are clipped to [0, input_dim - 1], as in MXNet); weight has shape
(input_dim, output_dim); the output has data's shape followed by output_dim.
The gradient goes to the weight only (rows that appear several times
accumulate); data gets none.

Example: Embedding(data=[1, 0], weight=[[1, 2], [3, 4]], input_dim=2,
output_dim=2) = [[3, 4], [1, 2]].)")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(EmbeddingParser)
    .add_argument("data", "NDArray", "The indices to look up.")
    .add_argument("weight", "NDArray", "The embedding matrix, (input_dim, output_dim).")
    .add_arguments(EmbeddingParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "weight"}))
    .set_attr<FInferShape>("FInferShape", EmbeddingShape)
    .set_attr<FInferType>("FInferType", EmbeddingType)
    .set_attr<FCompute>(kFComputeCPU, EmbeddingForward)
    .set_attr<FGradient>("FGradient", EmbeddingGrad);

TS_REGISTER_OP(_backward_Embedding)
    .describe(
        "Gradient of Embedding. Inputs: ograd, data; outputs: zeros for data, the "
        "weight gradient (ograd rows summed into the rows data selects).")
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_attr_parser(EmbeddingParser)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             const auto& p = EmbParams(attrs);
                             AssignShape(attrs, out, 0, (*in)[1], "output");
                             AssignShape(attrs, out, 1, Shape{p.input_dim, p.output_dim}, "output");
                             return AllKnown(*out);
                           })
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            AssignType(attrs, out, 0, (*in)[1], "output");
                            AssignType(attrs, out, 1, (*in)[0], "output");
                            return AllKnown(*out);
                          })
    .set_attr<FCompute>(kFComputeCPU, EmbeddingBackward);

}  // namespace tessera::op
