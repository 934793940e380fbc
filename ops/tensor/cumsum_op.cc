// cumsum (MXNet's _np_cumsum): running sums along an axis, or over the
// flattened array; its gradient is the running sum of the output gradient
// taken from the other end.
#include <optional>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "engine/op/params.h"

namespace tessera::op {
namespace {

struct CumsumParam : Params<CumsumParam> {
  std::optional<int> axis;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<CumsumParam>& d) {
    d.field("axis", &CumsumParam::axis)
        .set_default(std::nullopt)
        .set_axis()
        .describe("The axis to sum along. None (the default): the flattened array, a 1-D result.");
    d.field("dtype", &CumsumParam::dtype)
        .set_default(std::nullopt)
        .describe("The result's dtype. None: the input's (bool gives int64), as NumPy.");
  }
};

// The input seen as (pre, n, post) with the sums running along n.
struct RunGeometry {
  int64_t pre = 1, n = 1, post = 1;
};

RunGeometry GeometryOf(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<CumsumParam>(attrs);
  RunGeometry g;
  if (!p.axis) {
    g.n = s.Size();
    return g;
  }
  const int ax = NormalizeAxis(*p.axis, s.ndim(), OpLabel(attrs).c_str());
  g.pre = s.ProdRange(0, ax);
  g.n = s[ax];
  g.post = s.ProdRange(ax + 1, s.ndim());
  return g;
}

bool CumsumShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  GeometryOf(attrs, s);  // checks the axis
  AssignShape(attrs, out, 0, ParamsOf<CumsumParam>(attrs).axis ? s : Shape{s.Size()}, "output");
  return true;
}

bool CumsumType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  const auto& p = ParamsOf<CumsumParam>(attrs);
  AssignType(attrs, out, 0, p.dtype ? *p.dtype : (t == DType::kBool ? DType::kInt64 : t), "output");
  TS_CHECK((*out)[0] != DType::kBool) << OpLabel(attrs) << ": dtype bool cannot hold sums";
  return true;
}

// y[p, i, q] = sum of x[p, j, q] for j <= i (or j >= i when `reverse`),
// summed in the output's type as NumPy does.
template <typename TI, typename TO>
void RunningSums(const TI* x, TO* y, const RunGeometry& g, bool reverse, bool add, int threads) {
  (void)threads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t p = 0; p < g.pre; ++p)
    for (int64_t q = 0; q < g.post; ++q) {
      TO acc = TO(0);
      for (int64_t k = 0; k < g.n; ++k) {
        const int64_t i = reverse ? g.n - 1 - k : k;
        const int64_t at = (p * g.n + i) * g.post + q;
        acc = static_cast<TO>(acc + static_cast<TO>(x[at]));
        y[at] = add ? static_cast<TO>(y[at] + acc) : acc;
      }
    }
}

// Forward: x (input 0) -> y; backward: dy (input 0) -> dx, shaped as the
// forward input (input 1), the sums taken from the end.
template <bool kBackward>
void CumsumCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const RunGeometry g = GeometryOf(attrs, kBackward ? in[1].shape() : in[0].shape());
  const int threads = CpuThreads(ctx.run_ctx, in[0].Size());
  SwitchDType(
      in[0].dtype(),
      [&](auto ti) {
        using TI = typename decltype(ti)::type;
        SwitchNumericDType(
            out[0].dtype(),
            [&](auto to) {
              using TO = typename decltype(to)::type;
              RunningSums(in[0].dptr<TI>(), out[0].dptr<TO>(), g, kBackward, req[0] == kAddTo,
                          threads);
            },
            "cumsum");
      },
      "cumsum");
}

}  // namespace

TS_REGISTER_OP(_np_cumsum)
    .describe(R"(Running sums along `axis` (MXNet's cumsum, as NumPy's): element i
is the sum of elements 0..i. With axis None (the default), over the flattened
array, giving a 1-D result. The sums are kept in the result's dtype (`dtype`,
else the input's; bool gives int64).

Example: cumsum([[1, 2, 3], [4, 5, 6]]) = [1, 3, 6, 10, 15, 21];
cumsum(same, axis=1) = [[1, 3, 6], [4, 9, 15]] (Lua axis 2).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<CumsumParam>)
    .add_alias("cumsum")
    .add_argument("a", "NDArray", "The input array.")
    .add_arguments(CumsumParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"a"}))
    .set_attr<FInferShape>("FInferShape", CumsumShape)
    .set_attr<FInferType>("FInferType", CumsumType)
    .set_attr<FCompute>(kFComputeCPU, CumsumCompute<false>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_np_cumsum"});

TS_REGISTER_OP(_backward_np_cumsum)
    .describe(
        "Gradient of cumsum: the running sums of the output gradient (input 0) taken from the "
        "end, shaped as the forward input (input 1).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<CumsumParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1]}, fout{(*in)[0]};
                             if (!CumsumShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, out, 0, fin[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            if ((*in)[1] == DType::kUnknown) return false;
                            AssignType(attrs, out, 0, (*in)[1], "gradient");
                            return (*in)[0] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, CumsumCompute<true>);

}  // namespace tessera::op
