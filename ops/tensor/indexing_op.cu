// take, pick, gather_nd and scatter_nd on the GPU, and their gradients. Index values are checked
// on the host (mode 'raise', gather_nd's ranges): such an op waits for its
// stream once, then its kernel gathers.
#include <algorithm>
#include <vector>

#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/indexing_op-inl.h"

namespace tessera::op {

// Copies the indices to the host and waits for them: mode 'raise' must see
// every index before the gather runs.
template <>
std::vector<int64_t> IndicesToHost<gpu>(const RunContext& rctx, const TBlob& idx) {
  std::vector<unsigned char> raw;
  return IndicesToHost<cpu>(rctx, CopyToHost(rctx, idx, &raw));
}

namespace {

// gather_nd's tuples on the device: each tuple's element offset, and the
// tuples grouped by offset (stable, so in their order within a group): the
// backward adds a group's slices in that order and scatter_nd takes its
// last, one thread per element of a destination, no atomics.
struct NdTuples {
  const int64_t* offset;  // count
  const int64_t* order;   // count: tuple numbers sorted by offset
  const int64_t* dest;    // groups: the offset of each group
  const int64_t* start;   // groups + 1: where each group begins in order
  int64_t count, groups;
};

NdTuples UploadTuples(const OpContext& ctx, const std::vector<int64_t>& off) {
  const int64_t count = static_cast<int64_t>(off.size());
  std::vector<int64_t> host(size_t(2 * count));  // offsets, then order; then dest, start
  std::copy(off.begin(), off.end(), host.begin());
  int64_t* order = host.data() + count;
  for (int64_t i = 0; i < count; ++i) order[i] = i;
  std::stable_sort(order, order + count,
                   [&](int64_t a, int64_t b) { return off[size_t(a)] < off[size_t(b)]; });
  std::vector<int64_t> dest, start;
  for (int64_t k = 0; k < count; ++k)
    if (k == 0 || off[size_t(order[k])] != off[size_t(order[k - 1])]) {
      dest.push_back(off[size_t(order[k])]);
      start.push_back(k);
    }
  start.push_back(count);
  const int64_t groups = static_cast<int64_t>(dest.size());
  host.insert(host.end(), dest.begin(), dest.end());
  host.insert(host.end(), start.begin(), start.end());
  int64_t* dev = ctx.requested.at(0).get_space_typed<int64_t>(host.size());
  // From pageable memory the copy is staged before cudaMemcpyAsync returns.
  TS_CUDA_CALL(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(int64_t),
                               cudaMemcpyHostToDevice, ctx.run_ctx.get_stream<cudaStream_t>()));
  return NdTuples{dev, dev + count, dev + 2 * count, dev + 2 * count + groups, count, groups};
}

template <int req>
struct gather_nd_gpu {
  template <typename T>
  __device__ static void Map(int64_t i, T* out, const T* data, NdTuples t, int64_t slice) {
    AssignReq<req>(out[i], data[t.offset[i / slice] + i % slice]);
  }
};

// Element j of group g: the group's slices added in tuple order, as the CPU.
struct gather_nd_backward_gpu {
  template <typename T>
  __device__ static void Map(int64_t i, T* grad, const T* ograd, NdTuples t, int64_t slice) {
    const int64_t g = i / slice, j = i % slice;
    T& to = grad[t.dest[g] + j];
    for (int64_t k = t.start[g]; k < t.start[g + 1]; ++k)
      AssignReq<kAddTo>(to, ograd[t.order[k] * slice + j]);
  }
};

// Element j of group g: the group's last slice (the last tuple written wins).
template <bool add>
struct scatter_nd_gpu {
  template <typename T>
  __device__ static void Map(int64_t i, T* out, const T* data, NdTuples t, int64_t slice) {
    const int64_t g = i / slice, j = i % slice;
    const T v = data[t.order[t.start[g + 1] - 1] * slice + j];
    T& to = out[t.dest[g] + j];
    to = add ? static_cast<T>(to + v) : v;
  }
};

// Element (p, g, j): the output gradient's rows taken into destination row g
// added in their order, as the CPU (t's offsets are rows along the axis).
struct take_backward_gpu {
  template <typename T>
  __device__ static void Map(int64_t i, T* grad, const T* ograd, NdTuples t, AxisSplit a) {
    const int64_t j = i % a.post, g = (i / a.post) % t.groups, p = i / (a.post * t.groups);
    T& to = grad[(p * a.n + t.dest[g]) * a.post + j];
    for (int64_t k = t.start[g]; k < t.start[g + 1]; ++k)
      AssignReq<kAddTo>(to, ograd[(p * t.count + t.order[k]) * a.post + j]);
  }
};

// Inputs: output gradient, data (for its shape), indices.
void TakeBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const AxisSplit a = SplitAt(out[0].shape(), TakeAxis(attrs, out[0].ndim()));
  const NdTuples t =
      UploadTuples(ctx, TakenRows(attrs, IndicesToHost<gpu>(ctx.run_ctx, in[2]), out[0].shape()));
  if (req[0] != kAddTo) ZeroBlob<gpu>(ctx.run_ctx, out[0]);
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<take_backward_gpu, gpu>::Launch(ctx.run_ctx, a.pre * t.groups * a.post,
                                               out[0].dptr<T>(), in[0].dptr<T>(), t, a);
      },
      "_backward_take");
}

void GatherNdGPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const GatherNdPlan plan = PlanGatherNd<gpu>("gather_nd", in[0].shape(), in[1], ctx.run_ctx);
  const NdTuples t = UploadTuples(ctx, plan.offsets);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<gather_nd_gpu<r.value>, gpu>::Launch(ctx.run_ctx, t.count * plan.slice,
                                                  out[0].dptr<T>(), in[0].dptr<T>(), t, plan.slice);
    });
  });
}

// Inputs: output gradient, data (for its shape), indices.
void GatherNdBackwardGPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const GatherNdPlan plan =
      PlanGatherNd<gpu>("_backward_gather_nd", out[0].shape(), in[2], ctx.run_ctx);
  const NdTuples t = UploadTuples(ctx, plan.offsets);
  if (req[0] != kAddTo) ZeroBlob<gpu>(ctx.run_ctx, out[0]);
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<gather_nd_backward_gpu, gpu>::Launch(
            ctx.run_ctx, t.groups * plan.slice, out[0].dptr<T>(), in[0].dptr<T>(), t, plan.slice);
      },
      "_backward_gather_nd");
}

void ScatterNdGPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const GatherNdPlan plan = PlanGatherNd<gpu>("scatter_nd", out[0].shape(), in[1], ctx.run_ctx);
  const NdTuples t = UploadTuples(ctx, plan.offsets);
  const bool add = req[0] == kAddTo;
  if (!add) ZeroBlob<gpu>(ctx.run_ctx, out[0]);
  SwitchDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto launch = [&](auto op) {
      Kernel<decltype(op), gpu>::Launch(ctx.run_ctx, t.groups * plan.slice, out[0].dptr<T>(),
                                        in[0].dptr<T>(), t, plan.slice);
    };
    if (add)
      launch(scatter_nd_gpu<true>{});
    else
      launch(scatter_nd_gpu<false>{});
  });
}

}  // namespace

TS_REGISTER_OP(gather_nd).set_attr<FCompute>(kFComputeGPU, GatherNdGPU);
TS_REGISTER_OP(_backward_gather_nd).set_attr<FCompute>(kFComputeGPU, GatherNdBackwardGPU);
TS_REGISTER_OP(scatter_nd).set_attr<FCompute>(kFComputeGPU, ScatterNdGPU);
TS_REGISTER_OP(take).set_attr<FCompute>(kFComputeGPU, TakeCompute<gpu>);
TS_REGISTER_OP(_backward_take).set_attr<FCompute>(kFComputeGPU, TakeBackwardGPU);
TS_REGISTER_OP(pick).set_attr<FCompute>(kFComputeGPU, PickCompute<gpu>);
TS_REGISTER_OP(batch_take).set_attr<FCompute>(kFComputeGPU, PickCompute<gpu>);
TS_REGISTER_OP(_backward_pick).set_attr<FCompute>(kFComputeGPU, PickBackwardCompute<gpu>);

}  // namespace tessera::op
