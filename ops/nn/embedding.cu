// Embedding on the GPU. The forward copies a row per index (a thread per
// output element); the backward gives each thread a column of the weight's
// gradient and walks the indices in order, as the CPU's threads do, so rows
// hit twice add up in the same order on both devices and without atomics.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/embedding-inl.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {
namespace {

struct EmbeddingRows {
  template <typename T, typename I>
  TS_XINLINE static void Map(int64_t e, T* out, const T* w, const I* idx, int64_t dim, int64_t rows,
                             bool add) {
    const int64_t i = e / dim, j = e % dim;
    const T v = w[ClipIndex(idx[i], rows) * dim + j];
    out[e] = add ? static_cast<T>(static_cast<AccType<T>>(out[e]) + static_cast<AccType<T>>(v)) : v;
  }
};

struct EmbeddingColumnGrad {
  template <typename T, typename I>
  TS_XINLINE static void Map(int64_t j, T* gw, const T* g, const I* idx, int64_t n, int64_t dim,
                             int64_t rows, bool add) {
    using A = AccType<T>;
    if (!add)
      for (int64_t r = 0; r < rows; ++r) gw[r * dim + j] = T(0);
    for (int64_t i = 0; i < n; ++i) {
      T& dst = gw[ClipIndex(idx[i], rows) * dim + j];
      dst = static_cast<T>(static_cast<A>(dst) + static_cast<A>(g[i * dim + j]));
    }
  }
};

struct ZeroFill {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out) {
    out[i] = T(0);
  }
};

void EmbeddingForwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<EmbeddingParam>(attrs);
  SwitchNumericDType(
      in[0].dtype(),
      [&](auto itag) {
        using I = typename decltype(itag)::type;
        SwitchFloatDType(
            out[0].dtype(),
            [&](auto tag) {
              using T = typename decltype(tag)::type;
              Kernel<EmbeddingRows, gpu>::Launch(ctx.run_ctx, in[0].Size() * p.output_dim,
                                                 out[0].dptr<T>(), in[1].dptr<T>(), in[0].dptr<I>(),
                                                 p.output_dim, p.input_dim, req[0] == kAddTo);
            },
            "Embedding");
      },
      "Embedding (data)");
}

// Inputs: ograd, data. Outputs: data gradient (zeros), weight gradient.
void EmbeddingBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<EmbeddingParam>(attrs);
  if (req[0] == kWriteTo || req[0] == kWriteInplace)
    SwitchNumericDType(out[0].dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      Kernel<ZeroFill, gpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<I>());
    });
  if (req[1] == kNullOp) return;
  SwitchNumericDType(
      in[1].dtype(),
      [&](auto itag) {
        using I = typename decltype(itag)::type;
        SwitchFloatDType(
            in[0].dtype(),
            [&](auto tag) {
              using T = typename decltype(tag)::type;
              Kernel<EmbeddingColumnGrad, gpu>::Launch(
                  ctx.run_ctx, p.output_dim, out[1].dptr<T>(), in[0].dptr<T>(), in[1].dptr<I>(),
                  in[1].Size(), p.output_dim, p.input_dim, req[1] == kAddTo);
            },
            "_backward_Embedding");
      },
      "_backward_Embedding (data)");
}

}  // namespace

TS_REGISTER_OP(Embedding).set_attr<FCompute>(kFComputeGPU, EmbeddingForwardGpu);
TS_REGISTER_OP(_backward_Embedding).set_attr<FCompute>(kFComputeGPU, EmbeddingBackwardGpu);

}  // namespace tessera::op
