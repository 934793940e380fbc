#include <memory>

#include "ops/tensor/indexing_op-inl.h"
#include "ops/tensor/shape_grad_util.h"

namespace tessera::op {

void CheckIndicesInRange(const char* op, const std::vector<int64_t>& idx, int64_t n, int axis,
                         const Shape& data) {
  for (int64_t i : idx)
    TS_CHECK(i >= -n && i < n) << op << ": index " << i << " is out of range for axis " << axis
                               << " of shape " << data << " (valid: " << -n << " to " << n - 1
                               << ")";
}

int TakeAxis(const NodeAttrs& attrs, int ndim) {
  const std::string label = OpLabel(attrs);
  return NormalizeAxis(ParamsOf<TakeParam>(attrs).axis, ndim, label.c_str());
}

int PickAxis(const NodeAttrs& attrs, int ndim) {
  const auto& axis = ParamsOf<PickParam>(attrs).axis;
  if (!axis) return -1;
  const std::string label = OpLabel(attrs);
  return NormalizeAxis(*axis, ndim, label.c_str());
}

std::vector<int64_t> TakenRows(const NodeAttrs& attrs, std::vector<int64_t> idx,
                               const Shape& data) {
  const auto& p = ParamsOf<TakeParam>(attrs);
  const int axis = TakeAxis(attrs, data.ndim());
  const int64_t n = data[axis];
  if (p.mode == kIndexRaise) CheckIndicesInRange("take", idx, n, axis, data);
  for (int64_t& i : idx)
    i = p.mode == kIndexClip ? MapIndex<kIndexClip>(i, n) : MapIndex<kIndexWrap>(i, n);
  return idx;
}

namespace {

Shape JoinDims(const NodeAttrs& attrs, std::vector<int64_t> dims) {
  TS_CHECK(dims.size() <= size_t(Shape::kMaxNdim))
      << OpLabel(attrs) << ": the result would have " << dims.size() << " axes, more than "
      << Shape::kMaxNdim;
  if (dims.empty()) dims.push_back(1);
  return Shape(dims);
}

bool TakeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (a, indices)";
  const Shape &a = (*in)[0], &idx = (*in)[1];
  if (!a.known() || !idx.known()) return false;
  const int axis = TakeAxis(attrs, a.ndim());
  std::vector<int64_t> dims(a.begin(), a.begin() + axis);
  dims.insert(dims.end(), idx.begin(), idx.end());
  dims.insert(dims.end(), a.begin() + axis + 1, a.end());
  AssignShape(attrs, out, 0, JoinDims(attrs, dims), "output");
  return true;
}

bool PickShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (data, index)";
  const Shape &x = (*in)[0], &idx = (*in)[1];
  if (!x.known()) return false;
  const std::string label = OpLabel(attrs);
  const int axis = PickAxis(attrs, x.ndim());
  std::vector<int64_t> kept, dropped;
  if (axis >= 0) {
    kept = x.ToVector();
    kept[static_cast<size_t>(axis)] = 1;
    dropped = x.ToVector();
    dropped.erase(dropped.begin() + axis);
  } else {
    kept.assign(static_cast<size_t>(x.ndim()), 1);
  }
  if (dropped.empty()) dropped.push_back(1);
  const Shape with_axis(kept), without_axis(dropped);
  if (idx.known())
    TS_CHECK(idx == with_axis || idx == without_axis)
        << label << ": index has shape " << idx << " but data " << x << " needs " << without_axis
        << " (or " << with_axis << ")";
  else
    AssignShape(attrs, in, 1, without_axis, "input");
  AssignShape(attrs, out, 0, ParamsOf<PickParam>(attrs).keepdims ? with_axis : without_axis,
              "output");
  return (*in)[1].known();
}

// take/pick/gather_nd and their backward ops: output dtype = input 0's dtype
// (data, or the output gradient); index dtypes are free.
bool DataType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return AllKnown(*in) && (*out)[0] != DType::kUnknown;
}

// The backward ops: output 0 has the shape of the forward data (input 1),
// and the output gradient (input 0) the shape that the forward op's shape
// function gives data and indices (inputs 1 and 2). The kernels walk the
// output gradient by that shape, so a graph or a call that pairs them
// otherwise is an error here, not a read past its end.
template <bool (*forward)(const NodeAttrs&, std::vector<Shape>*, std::vector<Shape>*)>
bool ScatterBackShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[1], "output");
  if ((*in)[1].known() && (*in)[2].known()) {
    std::vector<Shape> data_indices{(*in)[1], (*in)[2]}, forward_out(1);
    if (forward(attrs, &data_indices, &forward_out) && forward_out[0].known())
      AssignShape(attrs, in, 0, forward_out[0], "input");
  }
  return AllKnown(*in) && (*out)[0].known();
}

// Input 0 (the output gradient) added back at the taken rows of a zeroed
// input gradient. Rows can repeat, so threads split the (pre, post) plane,
// never the indices.
void TakeBackwardCPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int axis = TakeAxis(attrs, out[0].ndim());
  const AxisSplit a = SplitAt(out[0].shape(), axis);
  const std::vector<int64_t> idx =
      TakenRows(attrs, IndicesToHost<cpu>(ctx.run_ctx, in[2]), out[0].shape());
  if (req[0] != kAddTo) ZeroBlob<cpu>(ctx.run_ctx, out[0]);
  const int64_t m = static_cast<int64_t>(idx.size());
  const int64_t block = a.post >= 4096 ? 1024 : a.post;
  const int64_t n_blocks = (a.post + block - 1) / block, tasks = a.pre * n_blocks;
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, in[0].Size());
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* grad = out[0].dptr<T>();
        const T* og = in[0].dptr<T>();
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
        for (int64_t t = 0; t < tasks; ++t) {
          const int64_t pi = t / n_blocks, jb = (t % n_blocks) * block;
          const int64_t je = std::min(a.post, jb + block);
          for (int64_t k = 0; k < m; ++k) {
            T* dst = grad + (pi * a.n + idx[static_cast<size_t>(k)]) * a.post;
            const T* src = og + (pi * m + k) * a.post;
            for (int64_t j = jb; j < je; ++j) AssignReq<kAddTo>(dst[j], src[j]);
          }
        }
      },
      "_backward_take");
}

bool GatherNdShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (data, indices)";
  const Shape &x = (*in)[0], &idx = (*in)[1];
  if (!x.known() || !idx.known()) return false;
  TS_CHECK(idx[0] <= x.ndim()) << OpLabel(attrs) << ": indices " << idx << " index " << idx[0]
                               << " axes but data " << x << " has " << x.ndim();
  std::vector<int64_t> dims(idx.begin() + 1, idx.end());
  dims.insert(dims.end(), x.begin() + idx[0], x.end());
  AssignShape(attrs, out, 0, JoinDims(attrs, dims), "output");
  return true;
}

void GatherNdCPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const GatherNdPlan plan = PlanGatherNd<cpu>("gather_nd", in[0].shape(), in[1], ctx.run_ctx);
  const int64_t count = static_cast<int64_t>(plan.offsets.size()), s = plan.slice;
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, out[0].Size());
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = in[0].dptr<T>();
    T* o = out[0].dptr<T>();
    SwitchReq(req[0], [&](auto r) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
      for (int64_t y = 0; y < count; ++y) {
        const T* src = data + plan.offsets[static_cast<size_t>(y)];
        for (int64_t j = 0; j < s; ++j) AssignReq<r.value>(o[y * s + j], src[j]);
      }
    });
  });
}

// Inputs: output gradient, data (for its shape), indices. Tuples can repeat,
// so they are added one after another.
void GatherNdBackwardCPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const GatherNdPlan plan =
      PlanGatherNd<cpu>("_backward_gather_nd", out[0].shape(), in[2], ctx.run_ctx);
  if (req[0] != kAddTo) ZeroBlob<cpu>(ctx.run_ctx, out[0]);
  const int64_t s = plan.slice;
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* grad = out[0].dptr<T>();
        const T* og = in[0].dptr<T>();
        for (size_t y = 0; y < plan.offsets.size(); ++y) {
          T* dst = grad + plan.offsets[y];
          const T* src = og + static_cast<int64_t>(y) * s;
          for (int64_t j = 0; j < s; ++j) AssignReq<kAddTo>(dst[j], src[j]);
        }
      },
      "_backward_gather_nd");
}

// The GPU kernels upload the index tuples' offsets into temp space.
std::vector<ResourceRequest> NdTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

// scatter_nd: zeros of shape `shape` with data's slices written at the
// index tuples (gather_nd's positions); a repeated tuple keeps the last.
struct ScatterNdParam : Params<ScatterNdParam> {
  Shape shape;
  static void Declare(ParamDecl<ScatterNdParam>& d) {
    d.field("shape", &ScatterNdParam::shape).describe("The shape of the output.");
  }
};

// data must be gather_nd's output for the output shape and the indices.
bool ScatterNdShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (data, indices)";
  const Shape& shape = ParamsOf<ScatterNdParam>(attrs).shape;
  TS_CHECK(shape.known()) << OpLabel(attrs) << ": shape " << shape << " is not a full shape";
  AssignShape(attrs, out, 0, shape, "output");
  if (!(*in)[1].known()) return false;
  std::vector<Shape> gather_in{shape, (*in)[1]}, gather_out(1);
  GatherNdShape(attrs, &gather_in, &gather_out);
  AssignShape(attrs, in, 0, gather_out[0], "data");
  return true;
}

void ScatterNdCPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const GatherNdPlan plan = PlanGatherNd<cpu>("scatter_nd", out[0].shape(), in[1], ctx.run_ctx);
  const int64_t s = plan.slice;
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = in[0].dptr<T>();
    T* o = out[0].dptr<T>();
    // Adding: the scattered array is built aside, then added.
    const int64_t n = req[0] == kAddTo ? out[0].Size() : 0;
    std::unique_ptr<T[]> aside(n ? new T[size_t(n)]() : nullptr);  // value-initialised: zeros
    T* dst = n ? aside.get() : o;
    if (!n) ZeroBlob<cpu>(ctx.run_ctx, out[0]);
    for (size_t y = 0; y < plan.offsets.size(); ++y)
      std::copy(data + int64_t(y) * s, data + int64_t(y + 1) * s, dst + plan.offsets[y]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(o[i] + aside[size_t(i)]);
  });
}

// batch_take: pick with its defaults (the last axis, indices clipped), on a
// matrix and a vector of one index per row only.
void ParseBatchTake(NodeAttrs* attrs) {
  TS_CHECK(attrs->dict.empty()) << "batch_take: takes no parameters, got '"
                                << attrs->dict.begin()->first << "'";
  attrs->parsed = PickParam{};
}

bool BatchTakeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (a, indices)";
  const Shape &a = (*in)[0], &idx = (*in)[1];
  TS_CHECK(a.ndim() == 0 || a.ndim() == 2)
      << OpLabel(attrs) << ": a must be a matrix (N, M), got " << a;
  TS_CHECK(idx.ndim() == 0 || idx.ndim() == 1)
      << OpLabel(attrs) << ": indices must be a vector (N), got " << idx;
  return PickShape(attrs, in, out);
}

// d data = backward(ograd, data, indices); d indices = 0.
FGradient ScatterGrad(const char* backward) {
  return [backward](const NodePtr& n, const std::vector<NodeEntry>& og) {
    std::vector<NodeEntry> g = MakeGradNode(backward, n, {og[0], n->inputs[0], n->inputs[1]});
    g.push_back(ZeroGradOf(n, 1));
    return g;
  };
}

}  // namespace

// What every op that moves data by an index array registers: its two
// inputs' names, its shape function, the data's dtype for the output, its
// CPU kernel.
#define TS_INDEXED_READ_OP(name, data, indices, shape, compute)                       \
  TS_REGISTER_OP(name)                                                                \
      .set_num_inputs(2)                                                              \
      .set_attr<FListInputNames>("FListInputNames", FixedInputNames({data, indices})) \
      .set_attr<FInferShape>("FInferShape", shape)                                    \
      .set_attr<FInferType>("FInferType", DataType)                                   \
      .set_attr<FCompute>(kFComputeCPU, compute)

// What the backward op of a gather registers: inputs (ograd, data,
// indices), checked against the forward op's shape function `forward`,
// and the output gradient's dtype.
#define TS_SCATTER_BACKWARD_OP(name, forward, description)             \
  TS_REGISTER_OP(name)                                                 \
      .describe(description)                                           \
      .set_num_inputs(3)                                               \
      .set_attr<TIsBackward>("TIsBackward", true)                      \
      .set_attr<FInferShape>("FInferShape", ScatterBackShape<forward>) \
      .set_attr<FInferType>("FInferType", DataType)

TS_INDEXED_READ_OP(take, "a", "indices", TakeShape, TakeCompute<cpu>)
    .describe(R"(Takes slices of `a` along `axis` at the positions in `indices`.

The result has shape a.shape[:axis] + indices.shape + a.shape[axis+1:].
take([[1, 2], [3, 4], [5, 6]], [[0, 2]]) = [[[1, 2], [5, 6]]]. Indices are
0-based numbers of any dtype.)")
    .set_attr_parser(ParamParser<TakeParam>)
    .add_argument("a", "NDArray", "The array to take from.")
    .add_argument("indices", "NDArray", "The positions along `axis` (0-based).")
    .add_arguments(TakeParam::Fields())
    .set_attr<FGradient>("FGradient", ScatterGrad("_backward_take"));

TS_SCATTER_BACKWARD_OP(
    _backward_take, TakeShape,
    "Gradient of take: the output gradient (input 0) added at the taken positions "
    "of zeros shaped like `a` (input 1); input 2 holds the indices.")
    .set_attr_parser(ParamParser<TakeParam>)
    .set_attr<FResourceRequest>("FResourceRequest", NdTempSpace)  // the GPU's grouped rows
    .set_attr<FCompute>(kFComputeCPU, TakeBackwardCPU);

TS_INDEXED_READ_OP(pick, "data", "index", PickShape, PickCompute<cpu>)
    .describe(R"(Picks one element along `axis` for every position of the other axes.

pick([[1, 2], [3, 4], [5, 6]], index=[0, 1, 0], axis=1) = [1, 4, 5]. `index`
has the shape of the result (with or without the picked axis).)")
    .set_attr_parser(ParamParser<PickParam>)
    .add_argument("data", "NDArray", "The array to pick from.")
    .add_argument("index", "NDArray", "The position (0-based) to pick in each row.")
    .add_arguments(PickParam::Fields())
    .set_attr<FGradient>("FGradient", ScatterGrad("_backward_pick"));

TS_INDEXED_READ_OP(batch_take, "a", "indices", BatchTakeShape, PickCompute<cpu>)
    .describe(R"(One element of each row of a matrix: out[i] = a[i, indices[i]], with
indices clipped into [0, M) (MXNet's batch_take; pick(a, indices) on the last
axis). The gradient flows to a, at the positions taken.

Example: batch_take([[1, 2], [3, 4], [5, 6]], [0, 1, 0]) = [1, 4, 5].)")
    .set_attr_parser(ParseBatchTake)
    .add_argument("a", "NDArray", "The matrix (N, M).")
    .add_argument("indices", "NDArray", "One column (0-based) per row (N).")
    .set_attr<FGradient>("FGradient", ScatterGrad("_backward_pick"));

TS_SCATTER_BACKWARD_OP(
    _backward_pick, PickShape,
    "Gradient of pick: the output gradient (input 0) placed at the picked positions "
    "of zeros shaped like data (input 1); input 2 holds the index.")
    .set_attr_parser(ParamParser<PickParam>)
    .set_attr<FCompute>(kFComputeCPU, PickBackwardCompute<cpu>);

TS_INDEXED_READ_OP(gather_nd, "data", "indices", GatherNdShape, GatherNdCPU)
    .describe(R"(Gathers elements or slices of data at index tuples.

indices has shape (M, Y0, ..., Yk): column y is a tuple of M positions into the
first M axes of data; the result has shape (Y0, ..., Yk, X_M, ..., X_n-1).
gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]]) = [3, 2]. Negative positions
count from the end; others out of range are an error.)")
    .add_argument("data", "NDArray", "The array to gather from.")
    .add_argument("indices", "NDArray", "Index tuples, one per column (0-based).")
    .set_attr<FResourceRequest>("FResourceRequest", NdTempSpace)
    .set_attr<FGradient>("FGradient", ScatterGrad("_backward_gather_nd"));

TS_SCATTER_BACKWARD_OP(_backward_gather_nd, GatherNdShape,
                       "Gradient of gather_nd: the output gradient (input 0) added at the gathered "
                       "positions of zeros shaped like data (input 1); input 2 holds the indices.")
    .set_attr<FResourceRequest>("FResourceRequest", NdTempSpace)
    .set_attr<FCompute>(kFComputeCPU, GatherNdBackwardCPU);

TS_INDEXED_READ_OP(scatter_nd, "data", "indices", ScatterNdShape, ScatterNdCPU)
    .describe(R"(Scatters data into zeros of shape `shape` at index tuples: the
inverse of gather_nd. indices (M, Y0, ..., Yk) holds one tuple of M positions
per column; data has shape (Y0, ..., Yk, shape[M], ...). A repeated tuple
keeps the last slice written (MXNet leaves it unspecified). Negative
positions count from the end; others out of range are an error. The
gradient of data is gather_nd of the output gradient.

Example: scatter_nd([2, 3, 0], [[1, 1, 0], [0, 1, 0]], shape=(2, 2)) =
[[0, 0], [2, 3]].)")
    .set_attr_parser(ParamParser<ScatterNdParam>)
    .add_argument("data", "NDArray", "The slices to scatter.")
    .add_argument("indices", "NDArray", "Index tuples, one per column (0-based).")
    .add_arguments(ScatterNdParam::Fields())
    .set_attr<FResourceRequest>("FResourceRequest", NdTempSpace)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      NodeEntry g = MakeNode("gather_nd", n->attrs.name + "_backward", {og[0], n->inputs[1]});
      g.node->control_deps.push_back(n);
      return std::vector<NodeEntry>{g, ZeroGradOf(n, 1)};
    });

}  // namespace tessera::op
