// Dropout: in training (or mode='always') each element is kept with
// probability 1 - p and scaled by 1 / (1 - p), else zeroed; otherwise the
// identity. The mask (0 or 1 / (1 - p), as MXNet stores it) is a hidden second
// output that the backward multiplies the output gradient by.
#include <optional>
#include <string>
#include <vector>

#include "engine/resource/random_stream.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum DropoutMode { kDropoutTraining, kDropoutAlways };

struct DropoutParam : Params<DropoutParam> {
  float p = 0.5f;
  int mode = kDropoutTraining;
  std::vector<int64_t> axes;
  std::optional<bool> cudnn_off;
  static void Declare(ParamDecl<DropoutParam>& d) {
    d.field("p", &DropoutParam::p)
        .set_default(0.5f)
        .set_range(0.f, 1.f)
        .describe("Fraction of the input that gets dropped out during training.");
    d.field("mode", &DropoutParam::mode)
        .set_default(kDropoutTraining)
        .add_enum("training", kDropoutTraining)
        .add_enum("always", kDropoutAlways)
        .describe(
            "'training': drop only in training mode (is_train / autograd.record); 'always': in "
            "inference too.");
    d.field("axes", &DropoutParam::axes)
        .set_default(std::vector<int64_t>{})
        .set_axis()
        .describe(
            "Axes along which one mask value is shared (variational dropout): the mask is "
            "drawn with these axes of size 1 and broadcast. Empty: every element drawn.");
    d.field("cudnn_off", &DropoutParam::cudnn_off)
        .set_default(false)
        .describe("Accepted for MXNet compatibility; no effect on CPU.");
  }
};

namespace {

const DropoutParam& DropParams(const NodeAttrs& attrs) {
  return ParamsOf<DropoutParam>(attrs);
}

bool DropoutShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input (data), got " << in->size();
  const bool ok = SameShapeAll(attrs, in, out);
  const Shape& d = (*in)[0];
  if (d.ndim() > 0)
    for (int64_t a : DropParams(attrs).axes) {
      std::string what = OpLabel(attrs) + " on data of shape " + d.ToString() + ": axes";
      NormalizeAxis(a, d.ndim(), what.c_str());
    }
  return ok;
}

bool DropoutType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  CheckFloatTypes(attrs, *in, *out);
  return ok;
}

// Four elements per Philox block: element i keeps when its uniform draw is
// below pkeep.
template <int req>
struct dropout_block {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, T* out, T* mask, const T* in, int64_t n,
                             resource::RandomStream s, float pkeep, double scale) {
    using A = AccType<T>;
    const resource::PhiloxCounter r = resource::RandomBlock(s, static_cast<uint64_t>(b));
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t i = 4 * b + lane;
      if (i >= n) break;
      // Arithmetic, not a branch: a kept/dropped branch mispredicts half the time.
      const A m = static_cast<A>(resource::UnitFloat(r.v[lane]) < pkeep) * A(scale);
      mask[i] = static_cast<T>(m);
      AssignReq<req>(out[i], static_cast<A>(in[i]) * m);
    }
  }
};

// With shared axes: element i draws at its index in the reduced shape.
template <int req>
struct dropout_axes {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mask, const T* in, Shape dims, Shape rstride,
                             resource::RandomStream s, float pkeep, double scale) {
    using A = AccType<T>;
    int64_t rest = i, j = 0;
    for (int d = dims.ndim() - 1; d >= 0; --d) {
      j += (rest % dims[d]) * rstride[d];
      rest /= dims[d];
    }
    const A m = static_cast<A>(resource::RandomUniformFloat(s, static_cast<uint64_t>(j)) < pkeep) *
                A(scale);
    mask[i] = static_cast<T>(m);
    AssignReq<req>(out[i], static_cast<A>(in[i]) * m);
  }
};

template <int req>
struct dropout_identity {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mask, const T* in) {
    if (mask) mask[i] = T(1);
    AssignReq<req>(out[i], in[i]);
  }
};

template <int req>
struct dropout_backward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* in_grad, const T* g, const T* mask) {
    using A = AccType<T>;
    AssignReq<req>(in_grad[i], static_cast<A>(g[i]) * static_cast<A>(mask[i]));
  }
};

void DropoutForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = DropParams(attrs);
  const int64_t n = in[0].Size();
  const bool apply = (ctx.is_train || p.mode == kDropoutAlways) && p.p > 0;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* y = out[0].dptr<T>();
        T* mask = out[1].dptr<T>();
        const T* x = in[0].dptr<T>();
        if (!apply) {
          // The identity; a mask of ones keeps a later backward correct.
          T* m = req[1] == kNullOp ? nullptr : mask;
          if (req[0] == kNullOp && !m) return;
          if (req[0] == kNullOp) {
            Kernel<dropout_identity<kNullOp>, cpu>::Launch(ctx.run_ctx, n, y, m, x);
            return;
          }
          SwitchReq(req[0], [&](auto r) {
            Kernel<dropout_identity<r.value>, cpu>::Launch(ctx.run_ctx, n, y, m, x);
          });
          return;
        }
        const float pkeep = 1.f - p.p;
        const double scale = pkeep > 0 ? 1.0 / (1.0 - static_cast<double>(p.p)) : 0.0;
        const resource::RandomStream s = ctx.requested.at(0).get_random();
        auto run = [&](auto r) {
          constexpr int kReq = decltype(r)::value;
          if (p.axes.empty()) {
            Kernel<dropout_block<kReq>, cpu>::Launch(ctx.run_ctx, (n + 3) / 4, y, mask, x, n, s,
                                                     pkeep, scale);
            return;
          }
          const Shape dims = in[0].shape();
          Shape reduced = dims;
          for (int64_t a : p.axes) reduced[NormalizeAxis(a, dims.ndim(), "Dropout axes")] = 1;
          Shape rstride = Shape::Filled(dims.ndim(), 0);
          int64_t stride = 1;
          for (int d = dims.ndim() - 1; d >= 0; --d) {
            rstride[d] = reduced[d] == 1 ? 0 : stride;
            stride *= reduced[d];
          }
          Kernel<dropout_axes<kReq>, cpu>::Launch(ctx.run_ctx, n, y, mask, x, dims, rstride, s,
                                                  pkeep, scale);
        };
        if (req[0] == kNullOp)
          run(std::integral_constant<int, kNullOp>{});
        else
          SwitchReq(req[0], run);
      },
      "Dropout");
}

void DropoutBackward(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req[0], [&](auto r) {
          Kernel<dropout_backward<r.value>, cpu>::Launch(
              ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<T>());
        });
      },
      "_backward_Dropout");
}

std::vector<NodeEntry> DropoutGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  return MakeGradNode("_backward_Dropout", n, {ograds[0], NodeEntry{n, 1, 0}});
}

}  // namespace

TS_REGISTER_OP(Dropout)
    .describe(R"(Applies dropout: during training each element is zeroed with probability
p and the kept ones are scaled by 1 / (1 - p), so the expected value is
unchanged; outside training (mode='training', the default) the output is the
input. Training means an executor's forward(is_train=true) or a call inside
mx.autograd.record; mode='always' drops in inference too. `axes` shares one
draw along the given axes (e.g. the time axis of a sequence). The draws come
from the seeded random stream (mx.random.seed).

The mask is kept as a hidden second output for the backward, which is
ograd * mask.)")
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<DropoutParam>)
    .add_argument("data", "NDArray", "Input array to which dropout is applied.")
    .add_arguments(DropoutParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "mask"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", DropoutShape)
    .set_attr<FInferType>("FInferType", DropoutType)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kRandom};
                                })
    .set_attr<FCompute>(kFComputeCPU, DropoutForward)
    .set_attr<FGradient>("FGradient", DropoutGrad);

TS_REGISTER_OP(_backward_Dropout)
    .describe("Gradient of Dropout: ograd * mask. Inputs: ograd, mask.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<DropoutParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<2, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FCompute>(kFComputeCPU, DropoutBackward);

}  // namespace tessera::op
