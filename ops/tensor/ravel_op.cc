// ravel_multi_index and unravel_index (MXNet's): between tuples of positions
// in an array of shape `shape` and flat (row-major) positions. Positions
// are numbers in the input's dtype, as MXNet's; whole numbers only, so they
// have no gradient rule.
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "engine/op/params.h"

namespace tessera::op {
namespace {

struct RavelParam : Params<RavelParam> {
  std::vector<int64_t> shape;
  static void Declare(ParamDecl<RavelParam>& d) {
    d.field("shape", &RavelParam::shape)
        .describe(
            "The shape of the array the positions index; its first entry may be -1 (it is "
            "never used but for the range check).");
  }
};

const std::vector<int64_t>& DimsOf(const NodeAttrs& attrs) {
  const auto& dims = ParamsOf<RavelParam>(attrs).shape;
  TS_CHECK(!dims.empty()) << OpLabel(attrs) << ": shape is empty";
  for (size_t j = 1; j < dims.size(); ++j)
    TS_CHECK(dims[j] > 0) << OpLabel(attrs) << ": shape entry " << j << " is " << dims[j]
                          << "; only the first may be unknown (-1)";
  return dims;
}

// ravel: (len(shape), K) -> (K); unravel: (K) -> (len(shape), K).
template <bool kRavel>
bool RavelShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  const int64_t m = int64_t(DimsOf(attrs).size());
  if (kRavel) {
    TS_CHECK(s.ndim() == 2 && s[0] == m)
        << OpLabel(attrs) << ": data has shape " << s << "; it must be (" << m
        << ", K), one position tuple per column";
    AssignShape(attrs, out, 0, Shape{s[1]}, "output");
  } else {
    TS_CHECK(s.ndim() == 1) << OpLabel(attrs) << ": data has shape " << s
                            << "; it must be a vector of flat positions";
    AssignShape(attrs, out, 0, Shape{m, s[0]}, "output");
  }
  return true;
}

// A position that is no whole number in [0, n) (n <= 0: unbounded) is an
// error naming the op.
int64_t CheckedPosition(const NodeAttrs& attrs, double v, int64_t n, const char* what, int64_t i) {
  TS_CHECK(v >= 0 && v == static_cast<double>(static_cast<int64_t>(v)) && (n <= 0 || v < n))
      << OpLabel(attrs) << ": " << what << " " << i << " is " << v << ", not a whole number in [0, "
      << (n <= 0 ? std::string("inf") : std::to_string(n)) << ")";
  return static_cast<int64_t>(v);
}

template <bool kRavel>
void RavelCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const std::vector<int64_t>& dims = DimsOf(attrs);
  const int64_t m = int64_t(dims.size());
  const int64_t k = kRavel ? in[0].shape()[1] : in[0].Size();
  int64_t total = 1;  // positions past it are errors when shape[0] is known
  for (int64_t d : dims) total = d > 0 && total > 0 ? total * d : -1;
  SwitchNumericDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = in[0].dptr<T>();
        T* y = out[0].dptr<T>();
        const bool add = req[0] == kAddTo;
        for (int64_t i = 0; i < k; ++i) {
          if constexpr (kRavel) {
            int64_t flat = 0;
            for (int64_t j = 0; j < m; ++j)
              flat = flat * dims[size_t(j)] +
                     CheckedPosition(attrs, double(x[j * k + i]), dims[size_t(j)], "position", i);
            y[i] = add ? T(y[i] + T(flat)) : T(flat);
          } else {
            int64_t rest = CheckedPosition(attrs, double(x[i]), total, "flat position", i);
            for (int64_t j = m - 1; j >= 0; --j) {
              const int64_t d = j == 0 ? rest : rest % dims[size_t(j)];
              if (j > 0) rest /= dims[size_t(j)];
              y[j * k + i] = add ? T(y[j * k + i] + T(d)) : T(d);
            }
          }
        }
      },
      OpLabel(attrs).c_str());
}

}  // namespace

TS_REGISTER_OP(_ravel_multi_index)
    .describe(R"(Flat (row-major) positions of position tuples in an array of shape
`shape` (MXNet's ravel_multi_index): data (len(shape), K) holds one tuple per
column; the result is (K). Positions outside the shape are an error.

Example: ravel_multi_index([[3, 6, 6], [4, 5, 1]], shape=(7, 6)) = [22, 41, 37].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<RavelParam>)
    .add_alias("ravel_multi_index")
    .add_argument("data", "NDArray", "Position tuples, one per column, (len(shape), K).")
    .add_arguments(RavelParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", RavelShape<true>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, RavelCompute<true>);

TS_REGISTER_OP(_unravel_index)
    .describe(R"(Position tuples of flat (row-major) positions in an array of shape
`shape` (MXNet's unravel_index): data (K) gives (len(shape), K), one tuple
per column. With shape[0] = -1 the first position is what remains.

Example: unravel_index([22, 41, 37], shape=(7, 6)) = [[3, 6, 6], [4, 5, 1]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<RavelParam>)
    .add_alias("unravel_index")
    .add_argument("data", "NDArray", "Flat positions, (K).")
    .add_arguments(RavelParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", RavelShape<false>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, RavelCompute<false>);

}  // namespace tessera::op
