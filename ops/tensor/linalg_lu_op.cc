// LU-based ops: linalg.inverse, linalg.det, linalg.slogdet, with MXNet's
// outputs (det and slogdet keep the LU factors and pivots as hidden outputs
// for their backward) and gradients.
#include <cmath>
#include <limits>

#include "ops/tensor/gemm.h"
#include "ops/tensor/lapack.h"
#include "ops/tensor/linalg_op-inl.h"

namespace tessera::op {
namespace {

// Pivots live in scratch of the element type: one int fits in one float.
static_assert(sizeof(int) <= sizeof(float));

MatrixLayout SquareOf(const NodeAttrs& attrs, const Shape& s) {
  const MatrixLayout l = StackOf(attrs, s, "A");
  TS_CHECK(l.rows == l.cols) << OpLabel(attrs) << ": A has shape " << s
                             << "; its last two axes must be equal (square matrices)";
  return l;
}

// ---------------------------------------------------------------------------
// inverse

bool InverseShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) AssignShape(attrs, in, 0, (*out)[0], "input A");
  if (!(*in)[0].known()) return false;
  SquareOf(attrs, (*in)[0]);
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return true;
}

void InverseForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, out[0].dtype(), "linalg.inverse", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareOf(attrs, in[0].shape());
    const int64_t n = l.rows, nn = n * n;
    ReqOutput<T> o(out[0], req[0]);
    const T* a = in[0].dptr<T>();
    const MatrixFailure f = ForEachMatrix<T>(ctx, l.count(), 2 * n * nn, n, [&](int64_t i, T* s) {
      T* c = o.data() + i * nn;
      if (c != a + i * nn) std::copy(a + i * nn, a + (i + 1) * nn, c);
      int* ipiv = reinterpret_cast<int*>(s);
      if (int info = lapack::Getrf(n, c, n, ipiv); info != 0) return info;
      return lapack::Getri(n, c, n, ipiv);
    });
    if (f.index >= 0)
      TS_THROW << OpLabel(attrs) << ": matrix " << f.index
               << " of the batch is singular (LAPACK getrf/getri info " << f.info << ")";
    o.Commit();
  });
}

// in dY, Y = A^-1; dA = -Y^T dY Y^T.
void InverseBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.inverse backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareOf(attrs, in[1].shape());
    const int64_t n = l.rows, nn = n * n;
    const T* dy = in[0].dptr<T>();
    const T* y = in[1].dptr<T>();
    T* da = out[0].dptr<T>();
    const T beta = req[0] == kAddTo ? T(1) : T(0);
    ForEachMatrix<T>(ctx, l.count(), 2 * n * nn, nn, [&](int64_t i, T* m) {
      Gemm(true, false, n, n, n, T(1), y + i * nn, n, dy + i * nn, n, T(0), m, n, 1);
      Gemm(false, true, n, n, n, T(-1), m, n, y + i * nn, n, beta, da + i * nn, n, 1);
      return 0;
    });
  });
}

// ---------------------------------------------------------------------------
// det and slogdet: outputs [det] or [sign, logabsdet], then the LU factors
// (A's shape) and the pivots (A's shape less its last axis, int32).

template <bool kLog>
constexpr int kNumValues = kLog ? 2 : 1;

template <bool kLog>
bool DetShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[0];
  if (!a.known()) return false;
  SquareOf(attrs, a);
  for (int k = 0; k < kNumValues<kLog>; ++k)
    AssignShape(attrs, out, k, PerMatrixShape(a), kLog && k == 0 ? "output sign" : "output");
  AssignShape(attrs, out, kNumValues<kLog>, a, "LU factors");
  AssignShape(attrs, out, kNumValues<kLog> + 1, Shape(a.begin(), a.end() - 1), "pivots");
  return true;
}

template <bool kLog>
bool DetType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> pivots{(*out)[kNumValues<kLog> + 1]};
  out->pop_back();
  const bool known = LinalgType(attrs, in, out);
  out->push_back(pivots[0]);
  AssignType(attrs, out, kNumValues<kLog> + 1, DType::kInt32, "pivots");
  return known;
}

// The sign and log |det| of the matrix whose LU factors (of its transpose,
// which has the same determinant) are in lu, with LAPACK's 1-based pivots.
template <typename T>
void SignAndLogAbs(const T* lu, const int* ipiv, int64_t n, T* sign, T* logabs) {
  T s = 1, l = 0;
  for (int64_t j = 0; j < n; ++j) {
    const T u = lu[j * n + j];
    if (ipiv[j] != j + 1) s = -s;
    if (u < 0) s = -s;
    if (u == 0) s = 0;
    l += std::log(std::abs(u));
  }
  *sign = s;
  *logabs = l;
}

template <bool kLog>
void DetForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  constexpr int kLu = kNumValues<kLog>, kPiv = kLu + 1;
  ForFloatAndDouble(attrs, in[0].dtype(), kLog ? "linalg.slogdet" : "linalg.det", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareOf(attrs, in[0].shape());
    const int64_t n = l.rows, nn = n * n;
    ReqOutput<T> first(out[0], req[0]), lu(out[kLu], req[kLu]);
    ReqOutput<T> second(out[kLog ? 1 : 0], kLog ? req[1] : kNullOp);
    // The pivots are integers: written directly unless nobody wants them.
    std::vector<int> own_pivots;
    int* piv = out[kPiv].dptr<int>();
    if (req[kPiv] == kNullOp || req[kPiv] == kAddTo) {
      own_pivots.resize(size_t(l.count() * n));
      piv = own_pivots.data();
    }
    const T* a = in[0].dptr<T>();
    ForEachMatrix<T>(ctx, l.count(), nn * n, 0, [&](int64_t i, T*) {
      T* c = lu.data() + i * nn;
      std::copy(a + i * nn, a + (i + 1) * nn, c);
      lapack::Getrf(n, c, n, piv + i * n);  // info > 0: a zero pivot, det 0
      T sign, logabs;
      SignAndLogAbs(c, piv + i * n, n, &sign, &logabs);
      if (kLog) {
        first.data()[i] = sign;
        second.data()[i] = logabs;
      } else {
        first.data()[i] = sign == 0 ? T(0) : sign * std::exp(logabs);
      }
      return 0;
    });
    first.Commit();
    if (kLog) second.Commit();
    lu.Commit();
  });
}

// det:     in ddet, det, LU, pivots;            dA = ddet det A^-T.
// slogdet: in dlogabsdet, sign, logabsdet, LU, pivots; dA = dlogabsdet A^-T.
// A matrix with det 0 gets a zero gradient (MXNet's rule); sign gets none.
template <bool kLog>
void DetBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  constexpr int kLu = kNumValues<kLog> + 1, kPiv = kLu + 1;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.det backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = SquareOf(attrs, in[kLu].shape());
    const int64_t n = l.rows, nn = n * n;
    const T* g = in[0].dptr<T>();
    const T* value = in[kLog ? 2 : 1].dptr<T>();  // logabsdet or det
    const T* lu = in[kLu].dptr<T>();
    const int* piv = in[kPiv].dptr<int>();
    T* da = out[0].dptr<T>();
    const bool add = req[0] == kAddTo;
    ForEachMatrix<T>(ctx, l.count(), 2 * n * nn, nn, [&](int64_t i, T* inv) {
      T* d = da + i * nn;
      const bool singular = kLog ? std::isinf(value[i]) && value[i] < 0 : value[i] == 0;
      if (singular) {
        if (!add) std::fill(d, d + nn, T(0));
        return 0;
      }
      for (int64_t j = 0; j < n; ++j)  // LAPACK reads the rows they name
        TS_CHECK(piv[i * n + j] >= 1 && piv[i * n + j] <= n)
            << OpLabel(attrs) << ": pivot " << j << " of matrix " << i << " is " << piv[i * n + j]
            << ", not a row in [1, " << n << "]";
      std::copy(lu + i * nn, lu + (i + 1) * nn, inv);
      lapack::Getri(n, inv, n, piv + i * n);
      const T scale = kLog ? g[i] : g[i] * value[i];
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < n; ++c) {
          const T v = scale * inv[c * n + r];
          d[r * n + c] = add ? d[r * n + c] + v : v;
        }
      return 0;
    });
  });
}

// in: the output gradient, the forward's values, LU, pivots; each checked
// against the shapes and dtypes the forward gives for LU's shape.
template <bool kLog>
bool DetBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  constexpr size_t kLu = kNumValues<kLog> + 1;
  const Shape lu = (*in)[kLu];
  if (!lu.known()) return false;
  std::vector<Shape> fin{lu}, fout(kLu + 1);
  DetShape<kLog>(attrs, &fin, &fout);
  AssignShape(attrs, in, 0, fout[0], "output gradient");
  for (size_t k = 1; k < kLu; ++k) AssignShape(attrs, in, k, fout[k - 1], "forward output");
  AssignShape(attrs, in, kLu + 1, fout[kLu], "pivots");
  AssignShape(attrs, out, 0, lu, "gradient of A");
  return true;
}

template <bool kLog>
bool DetBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  constexpr size_t kPiv = kNumValues<kLog> + 2;
  std::vector<DType> values(in->begin(), in->begin() + kPiv);
  const bool known = LinalgType(attrs, &values, out);
  std::copy(values.begin(), values.end(), in->begin());
  AssignType(attrs, in, kPiv, DType::kInt32, "pivots");
  return known;
}

template <bool kLog>
std::vector<NodeEntry> DetGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  std::vector<NodeEntry> inputs{og[kLog ? 1 : 0]};
  for (uint32_t k = 0; k < kNumValues<kLog> + 2; ++k) inputs.push_back(NodeEntry{n, k, 0});
  return MakeGradNode(kLog ? "_backward_linalg_slogdet" : "_backward_linalg_det", n, inputs);
}

}  // namespace

TS_REGISTER_OP(_linalg_inverse)
    .describe(R"(The inverse of every square matrix of a batch (MXNet's
linalg.inverse), by LU factorisation with partial pivoting; a singular
matrix is an error naming its place in the batch. float32 and float64.

Example: inverse([[1, 4], [2, 3]]) = [[-0.6, 0.8], [0.4, -0.2]].)")
    .set_num_inputs(1)
    .add_alias("linalg_inverse")
    .add_argument("A", "NDArray", "Square matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FInferShape>("FInferShape", InverseShape)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, InverseForward)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_linalg_inverse"});

TS_REGISTER_OP(_backward_linalg_inverse)
    .describe("Gradient of linalg.inverse: inputs dOut, the forward output; output dA.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             if (!(*in)[1].known()) return false;
                             SquareOf(attrs, (*in)[1]);
                             AssignShape(attrs, in, 0, (*in)[1], "output gradient");
                             AssignShape(attrs, out, 0, (*in)[1], "gradient of A");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, InverseBackward);

TS_REGISTER_OP(_linalg_det)
    .describe(R"(The determinant of every square matrix of a batch (MXNet's
linalg.det), from its LU factorisation: shape A's batch axes, or (1) for one
matrix. A singular matrix gives 0 and a zero gradient. float32 and float64.

Example: det([[1, 4], [2, 3]]) = [-5].)")
    .set_num_inputs(1)
    .set_num_outputs(3)
    .add_alias("linalg_det")
    .add_argument("A", "NDArray", "Square matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "LU", "pivot"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", DetShape<false>)
    .set_attr<FInferType>("FInferType", DetType<false>)
    .set_attr<FCompute>(kFComputeCPU, DetForward<false>)
    .set_attr<FGradient>("FGradient", DetGrad<false>);

TS_REGISTER_OP(_backward_linalg_det)
    .describe("Gradient of linalg.det: inputs ddet, det, LU, pivots; output dA.")
    .set_num_inputs(4)
    .set_num_outputs(1)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", DetBackwardShape<false>)
    .set_attr<FInferType>("FInferType", DetBackwardType<false>)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, DetBackward<false>);

TS_REGISTER_OP(_linalg_slogdet)
    .describe(R"(The sign and the log of the absolute value of the determinant of
every square matrix of a batch (MXNet's linalg.slogdet), from its LU
factorisation: outputs sign (-1, 0 or 1) and logabsdet, each shaped as A's
batch axes, or (1) for one matrix. A singular matrix gives sign 0 and
logabsdet -inf, and a zero gradient; sign has no gradient. float32 and
float64.

Example: slogdet([[2, 3], [1, 4]]): sign = [1], logabsdet = [1.609438].)")
    .set_num_inputs(1)
    .set_num_outputs(4)
    .add_alias("linalg_slogdet")
    .add_argument("A", "NDArray", "Square matrices, (..., n, n).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A"}))
    .set_attr<FListOutputNames>(
        "FListOutputNames",
        [](const NodeAttrs&) {
          return std::vector<std::string>{"sign", "logabsdet", "LU", "pivot"};
        })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 2u; })
    .set_attr<FInferShape>("FInferShape", DetShape<true>)
    .set_attr<FInferType>("FInferType", DetType<true>)
    .set_attr<FCompute>(kFComputeCPU, DetForward<true>)
    .set_attr<FGradient>("FGradient", DetGrad<true>);

TS_REGISTER_OP(_backward_linalg_slogdet)
    .describe(
        "Gradient of linalg.slogdet: inputs dlogabsdet, sign, logabsdet, LU, pivots; "
        "output dA.")
    .set_num_inputs(5)
    .set_num_outputs(1)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", DetBackwardShape<true>)
    .set_attr<FInferType>("FInferType", DetBackwardType<true>)
    .set_attr<FResourceRequest>("FResourceRequest", LinalgTempSpace)
    .set_attr<FCompute>(kFComputeCPU, DetBackward<true>);

}  // namespace tessera::op
